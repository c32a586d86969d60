// The default seed of a run: the sampler's shuffles, the simulated latencies and faults, the
// synthetic content and the model's initial weights all derive from the scenario's `seed`
// (scenarios/README.md), and this is its one default.
//
// Thread-safety: a constant.
#ifndef STALLSCOPE_BASE_SEED_H_
#define STALLSCOPE_BASE_SEED_H_

#include <cstdint>

namespace stallscope {

constexpr uint64_t kDefaultSeed = 42;

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_SEED_H_
