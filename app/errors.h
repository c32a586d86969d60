// Errors to exit codes, in one place: every command runs under RunGuarded, which prints one
// message for an error and returns its code — BadInput (base/errors.h, and every library error
// derived from it) exits 2 with nothing run; RunFailed, and anything else unexpected, exits 1.
// An exception that is not stallscope's own (std::bad_alloc, a std::system_error from the
// C++ library, anything else) is named by what was being done when it was thrown: the
// innermost SettingUp it unwound ("stallscope: out of memory while allocating the staging
// buffers (variant base)").
//
// Thread-safety: call from main's thread.
#ifndef STALLSCOPE_APP_ERRORS_H_
#define STALLSCOPE_APP_ERRORS_H_

#include <exception>
#include <functional>
#include <string>

namespace stallscope {

constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;

// The one line an error prints (after "stallscope: "): a bad dataset directory says
// "dataset: ", a run that failed "run failed: "; and its exit code.
std::string ErrorMessage(const std::exception& e);
int ExitCodeOf(const std::exception& e);

int RunGuarded(const std::function<int()>& command);

// Marks what this thread is doing for RunGuarded's message, while it lives: "making the cache
// tiers (variant base)". When an exception unwinds it, the innermost one is remembered.
class SettingUp {
 public:
  explicit SettingUp(std::string what);
  ~SettingUp();
  SettingUp(const SettingUp&) = delete;
  SettingUp& operator=(const SettingUp&) = delete;

 private:
  std::string what_;
  int exceptions_;  // std::uncaught_exceptions() when made
};

}  // namespace stallscope

#endif  // STALLSCOPE_APP_ERRORS_H_
