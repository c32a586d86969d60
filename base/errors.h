// The two roots of every error stallscope reports to its user.
//
//   BadInput   what the user asked for cannot be done as asked (a bad scenario key, a missing
//              directory, a cache that does not fit, a model too large for the GPU): nothing
//              was run; the command exits 2 with one message.
//   RunFailed  the run started and could not finish (an I/O error beyond the retry policy, a
//              device error): the command exits 1.
//
// Each library derives its own errors from one of these (ScenarioError, StorageError,
// CacheError, CudaSetupError from BadInput; DeviceError from RunFailed), so the command line
// turns them into exit codes in one place (app/errors.h) without knowing every type.
// Per-request I/O results are values (-errno), never these.
//
// Thread-safety: exception types.
#ifndef STALLSCOPE_BASE_ERRORS_H_
#define STALLSCOPE_BASE_ERRORS_H_

#include <stdexcept>

namespace stallscope {

class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_ERRORS_H_
