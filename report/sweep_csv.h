// Sweep CSV: one row per variant and grid point (config/grid.h), what `stallscope sweep`
// writes and `stallscope report` draws as a sweep chart: GPU idle against the first key, one
// line per value of the other keys and variant.
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_REPORT_SWEEP_CSV_H_
#define STALLSCOPE_REPORT_SWEEP_CSV_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/grid.h"
#include "pipeline/analysis.h"

namespace stallscope {

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

#endif  // STALLSCOPE_REPORT_SWEEP_CSV_H_
