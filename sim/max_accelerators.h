// `simulate --max-accelerators`: the largest cluster a scenario's storage keeps busy.
//
// Thread-safety: uses the Simulator it is given (one thread).
#ifndef STALLSCOPE_SIM_MAX_ACCELERATORS_H_
#define STALLSCOPE_SIM_MAX_ACCELERATORS_H_

#include <cstdint>
#include <vector>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace stallscope {

// MLPerf Storage's headline figure by search over cluster size: the largest number of
// accelerators (cluster.nodes × gpus_per_node, gpus_per_node as given) whose simulated AU stays
// at or above `au`. AU falls as nodes are added (they share the storage), so nodes are doubled
// until AU drops below the target, then bisected.
struct MaxAccelerators {
  uint32_t nodes = 0;  // 0: even one node misses the target
  uint64_t accelerators = 0;
  double au = 0;  // at `nodes`
  struct Try {
    uint32_t nodes;
    uint64_t accelerators;
    double au;
  };
  std::vector<Try> tried;           // in the order simulated
  bool limited_by_dataset = false;  // stopped where every rank would get under one batch
};
MaxAccelerators FindMaxAccelerators(Simulator& simulator, const Scenario& scenario, double au);

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_MAX_ACCELERATORS_H_
