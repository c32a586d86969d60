#include "app/errors.h"

#include <cstdio>
#include <exception>

#include "base/errors.h"
#include "storage/storage.h"

namespace stallscope {

std::string ErrorMessage(const std::exception& e) {
  if (dynamic_cast<const StorageError*>(&e)) return std::string("dataset: ") + e.what();
  if (dynamic_cast<const BadInput*>(&e)) return e.what();
  return std::string("run failed: ") + e.what();  // RunFailed, and anything unexpected
}

int ExitCodeOf(const std::exception& e) {
  return dynamic_cast<const BadInput*>(&e) ? kExitBadInput : kExitRunFailed;
}

int RunGuarded(const std::function<int()>& command) {
  try {
    return command();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stallscope: %s\n", ErrorMessage(e).c_str());
    return ExitCodeOf(e);
  }
}

}  // namespace stallscope
