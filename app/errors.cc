#include "app/errors.h"

#include <cstdio>
#include <exception>

#include "base/errors.h"
#include "storage/storage.h"

namespace stallscope {

int RunGuarded(const std::function<int()>& command) {
  try {
    return command();
  } catch (const StorageError& e) {  // a bad dataset directory
    std::fprintf(stderr, "stallscope: dataset: %s\n", e.what());
    return kExitBadInput;
  } catch (const BadInput& e) {
    std::fprintf(stderr, "stallscope: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {  // RunFailed, and anything unexpected
    std::fprintf(stderr, "stallscope: run failed: %s\n", e.what());
    return kExitRunFailed;
  }
}

}  // namespace stallscope
