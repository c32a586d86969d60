// StartThread: a std::thread whose failure to start (the host's or the cgroup's limit on
// threads: ulimit -u, pids.max) is a RunFailed naming what was being started, rather than a
// bare std::system_error ("Resource temporarily unavailable"). Each thread body handles its
// own errors (the pipeline's stages fail the run through Pipeline::Fail); an exception that
// still escapes one (std::bad_alloc deep in a library) ends the process with one message
// naming the thread and exit 1 — never std::terminate's abort.
//
// Thread-safety: a function.
#ifndef STALLSCOPE_BASE_START_THREAD_H_
#define STALLSCOPE_BASE_START_THREAD_H_

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "base/errors.h"

namespace stallscope {

// The last resort of a thread whose body let an exception escape.
[[noreturn]] inline void ThreadEscaped(const std::string& what, const char* error) {
  std::fprintf(stderr, "stallscope: run failed: %s stopped on an error it could not handle: %s\n",
               what.c_str(), error);
  std::fflush(stderr);
  std::_Exit(1);
}

template <typename F>
std::thread StartThread(const std::string& what, F&& body) {
  try {
    return std::thread([what, body = std::forward<F>(body)]() mutable {
      try {
        body();
      } catch (const std::bad_alloc&) {
        ThreadEscaped(what, "out of memory");
      } catch (const std::exception& e) {
        ThreadEscaped(what, e.what());
      } catch (...) {
        ThreadEscaped(what, "an error of unknown type");
      }
    });
  } catch (const std::system_error& e) {
    throw RunFailed("cannot start " + what + ": " + e.what() +
                    " (this process may start no more threads: see ulimit -u and the cgroup's "
                    "pids.max)");
  }
}

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_START_THREAD_H_
