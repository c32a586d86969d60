// Errors to exit codes, in one place: every command runs under RunGuarded, which prints one
// message for an error and returns its code — BadInput (base/errors.h, and every library error
// derived from it) exits 2 with nothing run; RunFailed, and anything else unexpected, exits 1.
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

}  // namespace stallscope

#endif  // STALLSCOPE_APP_ERRORS_H_
