// `stallscope advise SCENARIO.yaml (--au A | --idle I)`: the cheapest changes that reach a
// target utilization, predicted by the simulator (sim/advise.h), optionally run for real.
//
// Thread-safety: called once, from main's thread.
#ifndef STALLSCOPE_APP_ADVISE_COMMAND_H_
#define STALLSCOPE_APP_ADVISE_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

struct AdviseCommandOptions {
  std::string scenario;
  std::string variant;                // empty: the file's first
  std::vector<std::string> sets;      // --set KEY=VALUE under every point
  std::optional<double> au, idle;     // the target: one of the two, in (0, 1)
  std::vector<std::string> knobs;     // --knob: search only these
  uint32_t max_simulations = 0;       // 0: 10% of the space, at least 20
  uint32_t top = 5;                   // changes printed
  bool verify = false;                // run the current scenario and the top change for real
  uint32_t verify_runs = 3;           // at least this many real runs of each, alternated
  std::string verify_seconds = "5s";  // and until each's runs measured this long; pooled
  bool cluster_size = false;          // how many accelerators reach the target, now and fixed
  std::string write;                  // the top change as a scenario file
  std::string json;
  bool quiet = false;
};
int AdviseCommand(const AdviseCommandOptions& options);

// `run` and `simulate` (without --quiet): under the table, for every variant that idles more
// than 5%, one line with the smallest change `advise` predicts to bring it under 5% (at most
// 20 simulations; skipped, with the command to run, when one simulation takes over 0.5 s).
void PrintAdviseHints(const std::string& scenario_path, const std::vector<std::string>& sets,
                      const std::vector<std::string>& variant_names,
                      const std::vector<double>& idle);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_ADVISE_COMMAND_H_
