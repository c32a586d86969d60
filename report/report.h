// Report: VariantResults as the comparison table on stdout and as DESIGN.md's result JSON.
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_REPORT_REPORT_H_
#define STALLSCOPE_REPORT_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/analysis.h"

namespace stallscope {

nlohmann::json VariantToJson(const VariantResult& v);
// One rank of a multi-rank run (the `ranks` array), and back (rank 0 gathers them).
nlohmann::json RankToJson(const RankResult& r);
RankResult RankFromJson(const nlohmann::json& j);
// {"scenario", "mode", "device", "variants": [...]}.
nlohmann::json ResultDocument(const std::string& scenario, const std::string& mode,
                              const std::vector<VariantResult>& variants);
// One column per variant, one row per metric, then each variant's verdict in words.
std::string FormatTable(const std::vector<VariantResult>& variants);

}  // namespace stallscope

#endif  // STALLSCOPE_REPORT_REPORT_H_
