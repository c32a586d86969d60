// StartThread: a std::thread whose failure to start (the host's or the cgroup's limit on
// threads: ulimit -u, pids.max) is a RunFailed naming what was being started, rather than a
// bare std::system_error ("Resource temporarily unavailable").
//
// Thread-safety: a function.
#ifndef STALLSCOPE_BASE_START_THREAD_H_
#define STALLSCOPE_BASE_START_THREAD_H_

#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "base/errors.h"

namespace stallscope {

template <typename F>
std::thread StartThread(const std::string& what, F&& body) {
  try {
    return std::thread(std::forward<F>(body));
  } catch (const std::system_error& e) {
    throw RunFailed("cannot start " + what + ": " + e.what() +
                    " (this process may start no more threads: see ulimit -u and the cgroup's "
                    "pids.max)");
  }
}

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_START_THREAD_H_
