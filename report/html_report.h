// HtmlReport: result documents (the --json output of `run`) as one self-contained HTML page.
//
// Charts are inline SVG drawn here — no scripts, fonts or styles are fetched, so the page
// opens offline and mails well: GPU utilization over time per variant, stall seconds by stage
// per variant, cache hit ratio per epoch, queue occupancy over time, and each variant's
// verdict with its headline numbers. Several documents compare side by side.
//
// Thread-safety: a pure function.
#ifndef STALLSCOPE_REPORT_HTML_REPORT_H_
#define STALLSCOPE_REPORT_HTML_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stallscope {

// `documents` are result documents; `sources` name where each came from (file names).
// Throws std::invalid_argument naming the source when a document lacks the fields it needs.
std::string RenderHtmlReport(const std::vector<nlohmann::json>& documents,
                             const std::vector<std::string>& sources);

}  // namespace stallscope

#endif  // STALLSCOPE_REPORT_HTML_REPORT_H_
