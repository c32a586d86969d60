// `stallscope validate`: a scenario file checked, each variant summarized in one line, nothing
// run; with --keys, every key the first variant reads: its type, what it accepts, its value.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "app/commands.h"
#include "base/units.h"
#include "config/scenario.h"

namespace stallscope {

int ValidateCommand(const std::string& path, bool keys) {
  const ScenarioFile file = ScenarioFile::Load(path);
  std::vector<Scenario> scenarios;
  for (const std::string& v : file.variant_names()) scenarios.push_back(file.Resolve(v));
  std::cout << path << ": OK\n";
  for (const Scenario& s : scenarios) {
    std::string cache = s.cache_tiers.empty() ? "no cache" : "";
    for (const TierOptions& t : s.cache_tiers) {
      cache += fmt::format("{}{} {} {}", cache.empty() ? "" : " + ", NameOf(t.kind),
                           FormatBinaryBytes(static_cast<double>(t.capacity)), NameOf(t.policy));
    }
    std::cout << fmt::format(
        "  {}: storage {}{}, {}, batch {}, prefetch {}, {} workers ({}), step {}, {} epoch(s)\n",
        s.variant, NameOf(s.storage.kind),
        s.storage.kind == StorageKind::kDirectory ? " " + s.dataset.path
                                                  : fmt::format(" {} samples", s.dataset.samples),
        cache, s.loader.batch_size, s.loader.prefetch, s.loader.workers,
        NameOf(s.loader.preprocess.kind), FormatDuration(s.gpu.step_time), s.run.epochs);
  }
  if (keys) {
    const std::vector<ScenarioKey> list = file.Keys(scenarios.front().variant);
    size_t width = 3;
    for (const ScenarioKey& k : list) width = std::max(width, k.path.size());
    std::cout << fmt::format("\nkeys read by variant {} (sections left out are not listed):\n",
                             scenarios.front().variant);
    std::cout << fmt::format("{:<{}}  {:<8}  {:<24}  {}\n", "KEY", width, "TYPE", "ACCEPTS",
                             "VALUE");
    for (const ScenarioKey& k : list) {
      std::cout << fmt::format("{:<{}}  {:<8}  {:<24}  {}\n", k.path, width, k.type,
                               k.range.empty() ? "-" : k.range, k.value);
    }
  }
  return 0;
}

}  // namespace stallscope
