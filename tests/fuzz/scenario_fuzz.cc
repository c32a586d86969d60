// libFuzzer target: scenario loading, --set overrides and the start-up budget (tools/fuzz.sh
// builds and runs it).
//
// The input is a scenario file; lines starting with "#set " are also taken as --set
// arguments. Every variant is resolved with them, and each scenario that resolves goes
// through the checks a run makes before it allocates anything: the synthetic dataset's index,
// the run plan, the staging, tiers, step records and checkpoints against 64 GiB. Bad input
// must end in ScenarioError or BadInput (one message naming the key); any other exception,
// a crash (an overflow UBSan sees included), a hang or a leak is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "app/budget.h"
#include "config/scenario.h"
#include "pipeline/run_plan.h"

namespace {

// What `stallscope run` checks before it allocates, on a host with 64 GiB available.
void CheckBudgetOf(const stallscope::Scenario& s) {
  using namespace stallscope;
  constexpr uint64_t kAvailable = 64ULL << 30;
  try {
    CheckFaults(s);
    CheckDatasetFits(s, kAvailable);
    if (s.storage.kind == StorageKind::kDirectory) return;  // its sizes come from the files
    const long double largest = static_cast<long double>(s.dataset.sample_size) +
                                3.0L * static_cast<long double>(s.dataset.sample_size_stdev);
    const uint64_t max_bytes = largest >= 0x1p63L ? 1ULL << 63 : static_cast<uint64_t>(largest);
    const RunPlan plan = MakeRunPlan(s.loader, s.run, {s.dataset.samples, max_bytes, true});
    const uint32_t ranks = s.cluster.nodes * s.cluster.gpus_per_node;
    CheckBudget(s, plan, s.dataset.samples, max_bytes, kAvailable, 1,
                CheckpointHostBytes(s.checkpoint, s.checkpoint.rank_bytes(ranks), true));
  } catch (const BadInput&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<stallscope::Override> sets;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#set ", 0) != 0) continue;
    try {
      sets.push_back(stallscope::ParseSetArgument(line.substr(5)));
    } catch (const stallscope::ScenarioError&) {
    }
  }
  try {
    const stallscope::ScenarioFile file = stallscope::ScenarioFile::Parse(text, "fuzz.yaml");
    for (const std::string& v : file.variant_names()) {
      try {
        CheckBudgetOf(file.Resolve(v, sets));
      } catch (const stallscope::ScenarioError&) {
      }
    }
  } catch (const stallscope::ScenarioError&) {
  }
  return 0;
}
