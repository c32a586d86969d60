// The one clock of a run: seconds on the steady (monotonic) clock, shared by every stage, the
// devices and the benchmarks. Differences of two readings are durations; a reading alone means
// nothing outside this process.
//
// Thread-safety: safe from any thread.
#ifndef STALLSCOPE_BASE_CLOCK_H_
#define STALLSCOPE_BASE_CLOCK_H_

#include <time.h>

#include <chrono>

namespace stallscope {

inline double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time the calling thread has used, in seconds (not comparable across threads).
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_CLOCK_H_
