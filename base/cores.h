// The cores this process may run on.
//
// Thread-safety: safe from any thread.
#ifndef STALLSCOPE_BASE_CORES_H_
#define STALLSCOPE_BASE_CORES_H_

#include <sched.h>

#include <algorithm>
#include <thread>

namespace stallscope {

// The CPUs in this process's affinity mask (taskset, a cpuset, an MPI rank's binding), at
// least 1. std::thread::hardware_concurrency() counts the online CPUs instead (glibc 2.36:
// `taskset -c 0` still gives 2 on a 2-core VM, and 16 under `taskset -c 0,1` on a 16-core
// GPU host), so defaults and measurements taken from it would plan for cores the process
// cannot use.
inline unsigned UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_CORES_H_
