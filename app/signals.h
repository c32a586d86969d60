// Ctrl-C and SIGTERM during `run`: the first stops the variant in progress (its completed
// steps are analysed and written, marked partial) and skips the rest; the handler resets
// itself, so a second signal kills at once. A watcher thread turns the flag the handler sets
// into Pipeline::RequestStop(), which a signal handler may not call.
//
// Thread-safety: one StopOnSignal at a time, made and destroyed on main's thread; Attach() and
// StopSignal() from any thread.
#ifndef STALLSCOPE_APP_SIGNALS_H_
#define STALLSCOPE_APP_SIGNALS_H_

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

#include "pipeline/pipeline.h"

namespace stallscope {

// The signal that asked the run to stop (SIGINT, SIGTERM), or 0.
int StopSignal();

class StopOnSignal {
 public:
  StopOnSignal();   // installs the handlers and starts the watcher
  ~StopOnSignal();  // restores the handlers (unless a signal came)

  // The pipeline a signal stops (nullptr between variants). REQUIRES: the pipeline outlives
  // its attachment (detach before it is destroyed).
  void Attach(Pipeline* pipeline);

 private:
  std::mutex mu_;
  Pipeline* pipeline_ = nullptr;  // guarded by mu_
  std::atomic<bool> done_{false};
  std::thread watcher_;
  struct sigaction old_int_ = {}, old_term_ = {};
};

}  // namespace stallscope

#endif  // STALLSCOPE_APP_SIGNALS_H_
