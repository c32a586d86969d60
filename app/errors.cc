#include "app/errors.h"

#include <cstdio>
#include <exception>
#include <new>
#include <system_error>

#include "base/errors.h"
#include "storage/storage.h"

namespace stallscope {
namespace {

// The innermost SettingUp an exception unwound on this thread (empty: none since the last
// message).
thread_local std::string g_unwound;

// What an exception that is not stallscope's own says, in stallscope's words.
std::string ForeignMessage(const std::exception& e) {
  std::string what;
  if (dynamic_cast<const std::bad_alloc*>(&e)) {
    what = "out of memory";
  } else if (const auto* s = dynamic_cast<const std::system_error*>(&e)) {
    what = s->code().message();
  } else {
    what = e.what();
  }
  return g_unwound.empty() ? what : what + " while " + g_unwound;
}

}  // namespace

SettingUp::SettingUp(std::string what)
    : what_(std::move(what)), exceptions_(std::uncaught_exceptions()) {
  if (exceptions_ == 0) g_unwound.clear();  // an earlier exception was handled: forget it
}

SettingUp::~SettingUp() {
  if (std::uncaught_exceptions() > exceptions_ && g_unwound.empty()) g_unwound = what_;
}

std::string ErrorMessage(const std::exception& e) {
  if (dynamic_cast<const StorageError*>(&e)) return std::string("dataset: ") + e.what();
  if (dynamic_cast<const BadInput*>(&e)) return e.what();
  if (dynamic_cast<const RunFailed*>(&e)) return std::string("run failed: ") + e.what();
  return "run failed: " + ForeignMessage(e);  // anything unexpected
}

int ExitCodeOf(const std::exception& e) {
  return dynamic_cast<const BadInput*>(&e) ? kExitBadInput : kExitRunFailed;
}

int RunGuarded(const std::function<int()>& command) {
  g_unwound.clear();
  try {
    return command();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stallscope: %s\n", ErrorMessage(e).c_str());
    return ExitCodeOf(e);
  } catch (...) {
    std::fprintf(stderr, "stallscope: run failed: an error of unknown type%s\n",
                 g_unwound.empty() ? "" : (" while " + g_unwound).c_str());
    return kExitRunFailed;
  }
}

}  // namespace stallscope
