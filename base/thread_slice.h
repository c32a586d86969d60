// The scheduler slice of the calling thread (Linux's EEVDF fair scheduler, 6.6 and later).
//
// A task may run for its slice before another of equal weight takes its core, and a task that
// has just woken may run its slice out before a waiting task with less lag gets the core. The
// default slice grows with the CPUs online, not the ones a process may use: 0.75 ms ×
// (1 + log2 of at most 8 CPUs), so 3 ms on a 16-CPU host even under `taskset -c 0,1`. A
// loader's workers sleep until a batch is complete and wake together; on 2 cores they then
// held both for 2.6–3.0 ms while the I/O thread, its read finished, waited for a core (an H100
// host, 2026-12-07, docs/status.md #18). Since Linux 6.12 a task may ask for a shorter slice
// (sched_setattr's sched_runtime, 0.1–100 ms, no privilege needed), and a task that wakes with
// a shorter slice than the running one's preempts it. Older kernels ignore the request.
//
// Thread-safety: each function acts on the calling thread only.
#ifndef STALLSCOPE_BASE_THREAD_SLICE_H_
#define STALLSCOPE_BASE_THREAD_SLICE_H_

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace stallscope {

// The kernel's bounds on a requested slice.
inline constexpr double kMinThreadSlice = 100e-6, kMaxThreadSlice = 100e-3;

// A slice a user may ask for (loader.io_slice, calibrate --io-slice): 0 keeps the kernel's
// default; anything else within the kernel's bounds. kSliceRange says so in an error.
inline bool IsSliceRequest(double seconds) {
  return seconds == 0 || (seconds >= kMinThreadSlice && seconds <= kMaxThreadSlice);
}
inline constexpr const char* kSliceRange = "expected 0 (the kernel's slice) or 100us to 100ms";

namespace thread_slice_internal {
// struct sched_attr as of Linux 5.3 (glibc 2.36 declares no wrapper; <linux/sched/types.h>
// clashes with <sched.h>).
struct SchedAttr {
  uint32_t size = sizeof(SchedAttr);
  uint32_t policy = 0;
  uint64_t flags = 0;
  int32_t nice = 0;
  uint32_t priority = 0;
  uint64_t runtime = 0, deadline = 0, period = 0;
  uint32_t util_min = 0, util_max = 0;
};
inline bool Get(SchedAttr& a) {
  return syscall(SYS_sched_getattr, 0, &a, static_cast<unsigned>(sizeof a), 0U) == 0;
}
}  // namespace thread_slice_internal

// The calling thread's slice in seconds as the kernel reports it (its default or a requested
// one); 0 where the kernel reports none (before 6.12) or the thread is not a fair-class task.
inline double ThreadSlice() {
  thread_slice_internal::SchedAttr a;
  if (!thread_slice_internal::Get(a)) return 0;
  if (a.policy != SCHED_OTHER && a.policy != SCHED_BATCH) return 0;
  return static_cast<double>(a.runtime) * 1e-9;
}

// Asks for a slice of `seconds` (clamped to the kernel's bounds) for the calling thread,
// keeping its policy and nice value. Returns 0 or an errno; a thread that is not a fair-class
// task (a real-time one) is left alone (EPERM).
inline int SetThreadSlice(double seconds) {
  thread_slice_internal::SchedAttr a;
  if (!thread_slice_internal::Get(a)) return errno;
  if (a.policy != SCHED_OTHER && a.policy != SCHED_BATCH) return EPERM;
  const double s = seconds < kMinThreadSlice   ? kMinThreadSlice
                   : seconds > kMaxThreadSlice ? kMaxThreadSlice
                                               : seconds;
  a.size = sizeof a;
  a.flags = 0;
  a.runtime = static_cast<uint64_t>(s * 1e9 + 0.5);
  a.deadline = a.period = 0;
  return syscall(SYS_sched_setattr, 0, &a, 0U) == 0 ? 0 : errno;
}

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_THREAD_SLICE_H_
