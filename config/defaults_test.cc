// Every documented default is the code's default: for each key of scenarios/README.md's "Every
// key" tables that has a default, a scenario that sets the key to that documented value must
// resolve to exactly the scenario that omits every key. A README that says 4 where the code
// says 8 (or a key the code does not know) fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "config/scenario.h"

namespace stallscope {
namespace {

struct Documented {
  std::string key;  // dotted, list indexes as 0
  std::string value;
  int line = 0;
};

// The `backticked` items of a table cell, in order.
std::vector<std::string> Backticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex item("`([^`]*)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), item); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream ss(row.substr(1));
  for (std::string c; std::getline(ss, c, '|');) cells.push_back(c);
  return cells;
}

bool HasSection(const std::string& key) {
  for (const char* s :
       {"dataset.", "storage.", "cache.", "loader.", "gpu.", "run.", "cluster.", "cost."}) {
    if (key.rfind(s, 0) == 0) return true;
  }
  return false;
}

// The (key, default) pairs of the "Every key" tables. A row may name several keys with as many
// defaults ("`cluster.nodes`, `cluster.gpus_per_node` | `1`, `1`"); a later key without a dot
// shares the first one's parent ("`cache.tiers.N.bandwidth`, `latency`").
std::vector<Documented> ReadDocumentedDefaults(const std::string& path) {
  std::ifstream in(path);
  std::vector<Documented> out;
  std::string section;
  bool in_keys = false;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.rfind("## Every key", 0) == 0) in_keys = true;
    if (!in_keys) continue;
    if (line.rfind("### ", 0) == 0) {
      const auto names = Backticked(line);
      section = names.empty() ? "" : names[0];
      continue;
    }
    if (line.rfind("| `", 0) != 0) continue;
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 2) continue;
    const std::vector<std::string> keys = Backticked(cells[0]);
    const std::vector<std::string> values = Backticked(cells[1]);
    if (values.empty() || (values.size() != keys.size() && values.size() != 1)) continue;
    std::string parent;
    for (size_t i = 0; i < keys.size() && i < values.size(); ++i) {
      std::string key = keys[i];
      if (key.find(':') != std::string::npos) continue;  // "kind: distributed": a value, not a key
      if (!HasSection(key) && key.find('.') == std::string::npos && !parent.empty()) {
        key = parent + "." + key;
      } else if (!HasSection(key) && !section.empty()) {
        key = section + "." + key;
      }
      if (i == 0) parent = key.substr(0, key.rfind('.'));
      key = std::regex_replace(key, std::regex("\\.N\\."), ".0.");
      out.push_back({key, values[i], line_no});
    }
  }
  return out;
}

TEST(ScenarioDefaults, EveryDocumentedDefaultIsTheCodesDefault) {
  // Every key omitted; and one tier with only its required capacity, so that the
  // cache.tiers.0.* defaults have a tier to apply to.
  const ScenarioFile empty = ScenarioFile::Parse("{}\n", "empty.yaml");
  const ScenarioFile one_tier =
      ScenarioFile::Parse("cache: {tiers: [{capacity: 1GiB}]}\n", "tier.yaml");
  // The checkpoint section's defaults apply once there is a section (with its required keys).
  const ScenarioFile checkpoint =
      ScenarioFile::Parse("checkpoint: {every: 10, size: 1MiB}\n", "checkpoint.yaml");
  const std::string readme = std::string(STALLSCOPE_SCENARIOS) + "/README.md";
  const std::vector<Documented> documented = ReadDocumentedDefaults(readme);
  for (const Documented& d : documented) {
    SCOPED_TRACE(readme + ":" + std::to_string(d.line) + ": " + d.key + " = " + d.value);
    const ScenarioFile& file = d.key.rfind("cache.tiers.0.", 0) == 0 ? one_tier
                               : d.key.rfind("checkpoint.", 0) == 0  ? checkpoint
                                                                     : empty;
    const Scenario omitted = file.Resolve("base");
    Scenario set;
    ASSERT_NO_THROW(set = file.Resolve("base", {ParseSetArgument(d.key + "=" + d.value)}));
    EXPECT_TRUE(set == omitted) << "the documented default differs from the code's";
  }
  // The tables have 40-odd keys with a default; parsing none would pass the loop above.
  EXPECT_GE(documented.size(), 35u);
}

TEST(ScenarioDefaults, ADifferentValueIsNoticed) {
  // The comparison above can fail: a value other than the default resolves differently.
  const ScenarioFile file = ScenarioFile::Parse("{}\n", "d.yaml");
  EXPECT_FALSE(file.Resolve("base", {ParseSetArgument("loader.prefetch=5")}) ==
               file.Resolve("base"));
  EXPECT_FALSE(file.Resolve("base", {ParseSetArgument("storage.max_inflight=65")}) ==
               file.Resolve("base"));
}

}  // namespace
}  // namespace stallscope
