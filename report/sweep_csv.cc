#include "report/sweep_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "base/units.h"

namespace stallscope {
namespace {

// RFC 4180: quote a field holding a comma, quote or newline; double the quotes.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string SweepCsv(const std::vector<GridAxis>& axes, const std::vector<SweepRow>& rows,
                     const std::string& mode) {
  std::string out = kSweepFirstColumn;
  for (const GridAxis& a : axes) out += "," + CsvField(a.key);
  out +=
      ",mode,gpus,gpu_idle_fraction,au,samples_per_second,stall_fetch_seconds,"
      "stall_preprocess_seconds,stall_transfer_seconds,stall_other_seconds,cache_hit_ratio,"
      "window_seconds,bottleneck,stall_sync_seconds,stall_checkpoint_seconds\n";
  for (const SweepRow& r : rows) {
    const VariantResult& v = r.result;
    out += CsvField(r.variant);
    for (const auto& [key, value] : r.point) out += "," + CsvField(value);
    out += fmt::format(
        ",{},{},{:.6f},{:.6f},{:.3f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{},{:.6f},{:.6f}\n",
        mode, v.gpus, v.gpu_idle_fraction, v.au, v.samples_per_second, v.stall.fetch,
        v.stall.preprocess, v.stall.transfer, v.stall.other, v.cache_hit_ratio, v.window_seconds,
        v.bottleneck_stage, v.stall.sync, v.stall.checkpoint);
  }
  return out;
}

namespace {

// Splits one CSV record (RFC 4180 quoting; no newlines inside fields).
std::vector<std::string> CsvRecord(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

}  // namespace

nlohmann::json SweepFromCsv(const std::string& text, const std::string& source) {
  std::vector<std::vector<std::string>> records;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) records.push_back(CsvRecord(text.substr(start, end - start)));
    start = end + 1;
  }
  if (records.empty() || records[0].empty() || records[0][0] != kSweepFirstColumn) {
    throw std::invalid_argument(source +
                                ": not a stallscope sweep CSV (the first column is not "
                                "\"variant\")");
  }
  const std::vector<std::string>& header = records[0];
  const auto mode_at = std::find(header.begin(), header.end(), "mode");
  if (mode_at == header.end()) {
    throw std::invalid_argument(source + ": not a stallscope sweep CSV (no \"mode\" column)");
  }
  const size_t keys_end = mode_at - header.begin();
  nlohmann::json keys = nlohmann::json::array();
  for (size_t c = 1; c < keys_end; ++c) keys.push_back(header[c]);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 1; r < records.size(); ++r) {
    const auto& rec = records[r];
    if (rec.size() != header.size()) {
      throw std::invalid_argument(fmt::format("{}:{}: {} fields, the header has {}", source, r + 1,
                                              rec.size(), header.size()));
    }
    nlohmann::json row = {{"variant", rec[0]}, {"point", nlohmann::json::object()}};
    for (size_t c = 1; c < keys_end; ++c) row["point"][header[c]] = rec[c];
    for (size_t c = keys_end; c < header.size(); ++c) {
      if (const auto x = ParseNumber(rec[c])) {
        row[header[c]] = *x;
      } else {
        row[header[c]] = rec[c];
      }
    }
    rows.push_back(std::move(row));
  }
  return {{"sweep", {{"source", source}, {"keys", keys}, {"rows", rows}}}};
}

}  // namespace stallscope
