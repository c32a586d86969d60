// Timing tolerances of the tests that measure against a wall clock.
#ifndef STALLSCOPE_TESTS_TIMING_H_
#define STALLSCOPE_TESTS_TIMING_H_

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

}  // namespace stallscope::testing

#endif  // STALLSCOPE_TESTS_TIMING_H_
