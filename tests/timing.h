// Timing tolerances of the tests that measure against a wall clock.
#ifndef STALLSCOPE_TESTS_TIMING_H_
#define STALLSCOPE_TESTS_TIMING_H_

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace stallscope::testing {

// Sanitizer builds run several times slower (ThreadSanitizer 5–15×): timing tolerances widen
// by this factor there (those builds look for memory and threading errors, not speed).
#if defined(__SANITIZE_THREAD__)
inline constexpr double kTimingSlack = 3.0;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr double kTimingSlack = 2.0;
#else
inline constexpr double kTimingSlack = 1.0;
#endif

// True in ASan, UBSan-with-ASan and TSan builds.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// Under ThreadSanitizer every instrumented byte check is 5–15× slower, so a run that is
// storage-bound here becomes CPU-bound there. Tests still run such scenarios under it (for
// the threading) but skip the checks that depend on the CPU's speed (which stage binds).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kSpeedChecks = false;
#else
inline constexpr bool kSpeedChecks = true;
#endif

// What the rest of the host took from the cores while a measured run ran: busy CPU time of
// every process (/proc/stat) minus this process's own and its waited-for children's
// (getrusage: a job run through mpirun counts as ours once it has ended), and the steal,
// each in cores (seconds of CPU per second of wall time). A validation comparison that misses
// prints it, so a slow minute of a shared host is told from a model that is wrong.
class HostCpuWatch {
 public:
  HostCpuWatch() : start_(Now()) {}
  struct Taken {
    double others = 0, steal = 0;  // cores
  };
  Taken Stop() const {
    const Sample end = Now();
    const double wall = end.wall - start_.wall;
    if (wall <= 0) return {};
    return {.others = std::max(0.0, (end.busy - start_.busy) - (end.self - start_.self)) / wall,
            .steal = (end.steal - start_.steal) / wall};
  }

 private:
  struct Sample {
    double wall = 0, busy = 0, steal = 0, self = 0;  // seconds
  };
  static Sample Now() {
    Sample s;
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s.wall = static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
    // cpu  user nice system idle iowait irq softirq steal ...
    std::ifstream stat("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    s.busy = (user + nice + system + irq + softirq) / tick;
    s.steal = steal / tick;
    for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage ru{};
      getrusage(who, &ru);
      s.self += static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    }
    return s;
  }
  Sample start_;
};

}  // namespace stallscope::testing

#endif  // STALLSCOPE_TESTS_TIMING_H_
