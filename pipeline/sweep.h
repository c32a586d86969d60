// Sweeps: one scenario run (or simulated) at every point of a grid of key values.
//
// `--grid KEY=V1,V2,...` names a scenario key (the dotted keys of --set) and its values; several
// grids make a cartesian product, the first key varying slowest. Values are split on commas
// outside brackets and braces, so `--grid 'cache.tiers=[],[{kind: memory, capacity: 1GiB}]'`
// is two values. Each point is applied as --set overrides, so a key that does not exist is the
// scenario loader's error naming it (exit 2).
//
// The CSV (one row per variant and point) is what `stallscope report` draws as a sweep chart:
// GPU idle against the first key, one line per value of the other keys and variant.
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_PIPELINE_SWEEP_H_
#define STALLSCOPE_PIPELINE_SWEEP_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/analysis.h"
#include "pipeline/scenario.h"

namespace stallscope {

struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

// Parses one --grid argument. Throws ScenarioError naming it when malformed.
GridAxis ParseGridArgument(const std::string& argument);

// Every point of the product, each as (key, value) pairs in axis order.
std::vector<std::vector<std::pair<std::string, std::string>>> GridPoints(
    const std::vector<GridAxis>& axes);

// One CSV row per result.
struct SweepRow {
  std::string variant;
  std::vector<std::pair<std::string, std::string>> point;
  VariantResult result;
};
std::string SweepCsv(const std::vector<GridAxis>& axes, const std::vector<SweepRow>& rows,
                     const std::string& mode);

// The columns before the measured ones in a sweep CSV: variant, then the grid keys.
constexpr const char* kSweepFirstColumn = "variant";

// Reads a sweep CSV back for the report: {"sweep": {"source", "keys": [...], "rows":
// [{"variant", "point": {key: value}, "mode", "gpu_idle_fraction", "au", ...}]}}. Throws
// std::invalid_argument naming `source` and the line for anything that is not one.
nlohmann::json SweepFromCsv(const std::string& text, const std::string& source);

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_SWEEP_H_
