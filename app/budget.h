// The start-up budget of a real run: the memory it will hold (staging slots, raw and
// preprocessed, and RAM cache tiers) against what this host gives (MemAvailable, and the
// cgroup's memory.max less memory.current where one is set), checked after the dataset is
// listed and before the cache, the staging slots or any thread exist. A run that cannot fit is
// refused with one message naming the key, the need and what is available (exit 2), instead
// of an abort or the kernel's OOM kill part-way. Counts with no sane use (workers, I/O
// threads, prefetch, retries) are capped by the parser (pipeline/options.h).
//
// Thread-safety: pure functions, but ReadHostMemory() reads /proc and /sys.
#ifndef STALLSCOPE_APP_BUDGET_H_
#define STALLSCOPE_APP_BUDGET_H_

#include <cstdint>
#include <optional>

#include "config/scenario.h"
#include "pipeline/run_plan.h"

namespace stallscope {

// Bytes of memory this process may still take: MemAvailable, lowered to the cgroup's room
// when a cgroup limit is set. nullopt when neither can be read (the check is then skipped).
std::optional<uint64_t> ReadHostMemory();

struct RunBudget {
  uint64_t staging_bytes = 0;   // slots × batch × (raw row + preprocessed row)
  uint64_t ram_tier_bytes = 0;  // memory tiers that are not allowed to overcommit
};
RunBudget BudgetOf(const Scenario& scenario, const RunPlan& plan);

// Throws BadInput when the run will not fit in `available` bytes, naming the key.
void CheckBudget(const Scenario& scenario, const RunPlan& plan, uint64_t available);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_BUDGET_H_
