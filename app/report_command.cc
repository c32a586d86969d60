// `stallscope report`: result documents and sweep CSVs as one self-contained HTML page.
#include <cstdio>
#include <fstream>
#include <iterator>

#include "app/commands.h"
#include "base/errors.h"
#include "report/html_report.h"
#include "report/sweep_csv.h"

namespace stallscope {

int ReportCommand(const ReportCommandOptions& o) {
  const std::vector<std::string>& inputs = o.inputs;
  const std::string& output = o.output;
  const bool quiet = o.quiet;
  std::vector<nlohmann::json> docs;
  for (const std::string& in : inputs) {
    std::ifstream f(in);
    if (!f) throw BadInput(in + ": cannot open");
    if (in.ends_with(".csv")) {  // a sweep (stallscope sweep --csv)
      const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
      try {
        docs.push_back(SweepFromCsv(text, in));
      } catch (const std::invalid_argument& e) {
        throw BadInput(e.what());
      }
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw BadInput(in + ": not valid JSON");
    docs.push_back(std::move(j));
  }
  std::string html;
  try {
    html = RenderHtmlReport(docs, inputs);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  std::ofstream out(output);
  if (!out) throw BadInput(output + ": cannot write the report");
  out << html;
  if (!out) throw BadInput(output + ": cannot write the report");
  if (!quiet) std::fprintf(stderr, "wrote %s (%zu bytes)\n", output.c_str(), html.size());
  return 0;
}

}  // namespace stallscope
