// Advise's space (sim/advise.h): the knobs that apply to a scenario, each a ladder of rungs
// from the scenario's own value, and what each rung adds (for prices).
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_SIM_ADVISE_KNOBS_H_
#define STALLSCOPE_SIM_ADVISE_KNOBS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "sim/advise.h"

namespace stallscope {

// A knob: its name and its ladder of rungs (each a change from the scenario).
struct Knob {
  std::string name;
  std::vector<AdviseChange> rungs;
};

// Every knob that applies to `s`, whose dataset holds `dataset_bytes`.
std::vector<Knob> KnobsOf(const Scenario& s, uint64_t dataset_bytes);

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_ADVISE_KNOBS_H_
