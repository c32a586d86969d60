// HtmlReport: result documents (the --json output of `run`) as one self-contained HTML page.
//
// Charts are inline SVG (report/chart.h) — no scripts, fonts or styles are fetched, so the
// page opens offline and mails well: GPU utilization over time per variant, stall seconds by
// stage per variant, cache hit ratio per epoch (bars side by side at epochs 0, 1, 2 ...),
// queue occupancy over time, and each variant's verdict with its headline numbers; a sweep CSV
// draws GPU idle against its first grid key. Several documents compare side by side; lines
// differ by dash and marker as well as colour, so equal series stay visible.
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
