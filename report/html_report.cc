#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "base/units.h"
#include "report/chart.h"

namespace stallscope {
namespace {

// Colour-blind-safe palette (Okabe–Ito), cycled over variants.
const char* kColors[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                         "#56B4E9", "#D55E00", "#F0E442", "#000000"};
const char* kStageColors[] = {"#D55E00", "#E69F00", "#56B4E9", "#CC79A7", "#009E73", "#999999"};
const char* kStages[] = {"fetch", "preprocess", "transfer", "sync", "checkpoint", "other"};
constexpr int kStageCount = 6;

constexpr int kWidth = 760;  // the charts' width (report/chart.cc)

// One variant of one result document, as every chart draws it.
struct Variant {
  std::string label;
  std::string color;
  int style;  // ChartSeries::style: its dash pattern and marker
  const nlohmann::json* v;
};

const nlohmann::json& Need(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) {
    throw std::invalid_argument(where + ": not a stallscope result document (no \"" + key + "\")");
  }
  return j[key];
}

// A grid value as a number for the x axis: a plain number, a size, a rate or a duration.
std::optional<double> AxisValue(const std::string& text) {
  if (auto v = ParseNumber(text)) return v;
  if (auto v = ParseSize(text)) return v;
  if (auto v = ParseRate(text)) return v;
  if (auto v = ParseDuration(text)) return v;
  return std::nullopt;
}

// One series per variant, a point (x, y) = `point(element)` per element of its `array`.
template <typename Point>
std::vector<ChartSeries> VariantSeries(const std::vector<Variant>& variants, const char* array,
                                       Point point) {
  std::vector<ChartSeries> out;
  for (const Variant& v : variants) {
    ChartSeries s{v.label, v.color, v.style, {}};
    for (const auto& e : v.v->value(array, nlohmann::json::array())) s.points.push_back(point(e));
    out.push_back(std::move(s));
  }
  return out;
}

// The sweep's series: GPU idle against the first key's value (or, when some value is not a
// number, its position 1, 2, ... among `x_values`), one per variant and value of the other
// keys.
std::vector<ChartSeries> SweepSeries(const nlohmann::json& sweep,
                                     const std::vector<std::string>& x_values, bool numeric) {
  const auto& keys = sweep["keys"];
  const std::string x_key = keys[0].get<std::string>();
  std::vector<ChartSeries> series;
  for (const auto& r : sweep["rows"]) {
    std::string label = r.value("variant", "?");
    for (size_t k = 1; k < keys.size(); ++k) {
      label +=
          " " + keys[k].get<std::string>() + "=" + r["point"].value(keys[k].get<std::string>(), "");
    }
    auto it = std::find_if(series.begin(), series.end(),
                           [&](const ChartSeries& s) { return s.label == label; });
    if (it == series.end()) {
      const int n = static_cast<int>(series.size());
      series.push_back({label, kColors[n % 8], n, {}});
      it = series.end() - 1;
    }
    const std::string xv = r["point"].value(x_key, "");
    const double x = numeric ? *AxisValue(xv)
                             : static_cast<double>(std::find(x_values.begin(), x_values.end(), xv) -
                                                   x_values.begin() + 1);
    it->points.emplace_back(x, r.value("gpu_idle_fraction", 0.0));
  }
  for (ChartSeries& s : series) std::sort(s.points.begin(), s.points.end());
  return series;
}

// Every row of the sweep.
std::string SweepTable(const nlohmann::json& sweep) {
  const auto& keys = sweep["keys"];
  std::string html = "<table><tr><th>variant</th>";
  for (const auto& k : keys) html += "<th>" + HtmlEscape(k.get<std::string>()) + "</th>";
  html +=
      "<th>mode</th><th>GPUs</th><th>GPU "
      "idle</th><th>AU</th><th>samples/s</th><th>bottleneck</th></tr>\n";
  for (const auto& r : sweep["rows"]) {
    html += "<tr><td>" + HtmlEscape(r.value("variant", "?")) + "</td>";
    for (const auto& k : keys)
      html += "<td>" + HtmlEscape(r["point"].value(k.get<std::string>(), "")) + "</td>";
    html += fmt::format(
        "<td>{}</td><td>{:.0f}</td><td>{:.1f}%</td><td>{:.1f}%</td><td>{:.0f}</td><td>{}</td></"
        "tr>\n",
        HtmlEscape(r.value("mode", "")), r.value("gpus", 1.0),
        r.value("gpu_idle_fraction", 0.0) * 100, r.value("au", 0.0) * 100,
        r.value("samples_per_second", 0.0), HtmlEscape(r.value("bottleneck", "")));
  }
  return html + "</table>\n";
}

// A sweep CSV (report/sweep_csv.h): GPU idle against the first grid key, one line per variant
// and value of the other keys, a marker at every grid point; then every row.
std::string SweepSection(const nlohmann::json& sweep) {
  const auto& keys = sweep["keys"];
  const auto& rows = sweep["rows"];
  std::string html =
      fmt::format("<h2>Sweep: <code>{}</code></h2>\n", HtmlEscape(sweep.value("source", "")));
  if (keys.empty() || rows.empty()) return html + "<p>(no rows)</p>\n";
  const std::string x_key = keys[0].get<std::string>();
  // x: numeric when every value of the first key parses; else the values' order.
  std::vector<std::string> x_values;
  for (const auto& r : rows) {
    const std::string v = r["point"].value(x_key, "");
    if (std::find(x_values.begin(), x_values.end(), v) == x_values.end()) x_values.push_back(v);
  }
  bool numeric = true;
  for (const std::string& v : x_values) numeric = numeric && AxisValue(v).has_value();
  std::string xlabel = x_key;
  if (!numeric) {
    xlabel += " (";
    for (size_t i = 0; i < x_values.size(); ++i) {
      xlabel += fmt::format("{}{} = {}", i ? ", " : "", i + 1, x_values[i]);
    }
    xlabel += ")";
  }
  const std::vector<ChartSeries> series = SweepSeries(sweep, x_values, numeric);
  html +=
      LineChart(series,
                {.x_label = xlabel, .y_label = "GPU idle", .y_percent = true, .markers = true}) +
      SeriesLegend(series, LegendSwatch::kLineWithMarker);
  return html + SweepTable(sweep);
}

// The headline table, then each variant's verdict in words.
std::string VerdictSection(const std::vector<Variant>& variants) {
  std::string html =
      "<h2>Verdicts</h2>\n<table><tr><th>variant</th><th>GPU idle</th><th>AU</th>"
      "<th>samples/s</th><th>cache hit</th><th>bottleneck</th></tr>\n";
  for (const Variant& v : variants) {
    const auto& j = *v.v;
    html += fmt::format(
        "<tr><td><i style=\"color:{}\">&#9632;</i> {}</td><td>{:.1f}%</td><td>{:.1f}%</td>"
        "<td>{:.0f}</td><td>{:.1f}%</td><td>{}</td></tr>\n",
        v.color, HtmlEscape(v.label), j.value("gpu_idle_fraction", 0.0) * 100,
        j.value("au", 0.0) * 100, j.value("samples_per_second", 0.0),
        j.value("cache_hit_ratio", 0.0) * 100,
        HtmlEscape(j.contains("bottleneck") ? j["bottleneck"].value("stage", "?") : "?"));
  }
  html += "</table>\n";
  for (const Variant& v : variants) {
    const std::string text =
        v.v->contains("bottleneck") ? (*v.v)["bottleneck"].value("text", "") : "";
    html += fmt::format("<p class=\"verdict\"><b>{}</b>: {}</p>\n", HtmlEscape(v.label),
                        HtmlEscape(text));
  }
  return html;
}

// One row of a stall chart: its label, its stall_seconds object, and the text after its bar.
struct StallRow {
  std::string label;
  const nlohmann::json* stall;
  std::string after;  // empty: the row's total seconds
};

// Stall seconds by stage: one stacked horizontal bar per row.
std::string StallBars(const std::string& title, const std::vector<StallRow>& rows) {
  double max_total = 1e-9;
  for (const StallRow& r : rows) {
    double t = 0;
    for (const char* st : kStages) t += r.stall->value(st, 0.0);
    max_total = std::max(max_total, t);
  }
  const int row = 26, h = static_cast<int>(rows.size()) * row + 40, labelw = 170;
  const int pw = kWidth - labelw - 90;  // room for the text after the bar
  std::string html = "<h2>" + HtmlEscape(title) + "</h2>\n";
  html += fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">",
      kWidth, h, kWidth, h);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int y = 10 + static_cast<int>(i) * row;
    html += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", labelw - 6, y + 14,
                        HtmlEscape(rows[i].label));
    double x = labelw;
    for (int s = 0; s < kStageCount; ++s) {
      const double sec = rows[i].stall->value(kStages[s], 0.0);
      const double w = pw * sec / max_total;
      if (w > 0) {
        html += fmt::format(
            "<rect class=\"bar\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
            "height=\"18\" fill=\"{}\"><title>{}: {:.2f} s</title></rect>",
            x, y, w, kStageColors[s], kStages[s], sec);
      }
      x += w;
    }
    const std::string after = rows[i].after.empty()
                                  ? fmt::format("{:.2f} s", (x - labelw) / pw * max_total)
                                  : rows[i].after;
    html += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>", x + 4, y + 14, HtmlEscape(after));
  }
  html += "</svg>";
  std::vector<std::pair<std::string, std::string>> stage_legend;
  for (int s = 0; s < kStageCount; ++s) stage_legend.emplace_back(kStages[s], kStageColors[s]);
  return html + ColorLegend(stage_legend);
}

std::string StallChart(const std::vector<Variant>& variants) {
  std::vector<StallRow> rows;
  for (const Variant& v : variants) rows.push_back({v.label, &(*v.v)["stall_seconds"], ""});
  return StallBars("Stall seconds by stage", rows);
}

// Multi-rank runs: each rank's idle, split by stage (its wait for the slowest rank as sync),
// its idle fraction after the bar.
std::string RankChart(const std::vector<Variant>& variants) {
  std::vector<StallRow> rows;
  for (const Variant& v : variants) {
    if (!v.v->contains("ranks") || (*v.v)["ranks"].size() < 2) continue;
    for (const nlohmann::json& r : (*v.v)["ranks"]) {
      rows.push_back({fmt::format("{} rank {}", v.label, r.value("rank", 0)), &r["stall_seconds"],
                      fmt::format("idle {:.1f}%", r.value("gpu_idle_fraction", 0.0) * 100)});
    }
  }
  return rows.empty() ? "" : StallBars("GPU idle per rank, by stage", rows);
}

// The variants' charts: utilization over time, stall by stage, hit ratio per epoch, queues.
std::string VariantCharts(const std::vector<Variant>& variants) {
  const std::vector<ChartSeries> util = VariantSeries(variants, "timeline", [](const auto& p) {
    return std::make_pair(p.value("t", 0.0), p.value("utilization", 0.0));
  });
  std::string html =
      "<h2>GPU utilization over the measured window</h2>\n" +
      LineChart(util,
                {.x_label = "seconds into the window", .y_label = "GPU busy", .y_percent = true}) +
      SeriesLegend(util, LegendSwatch::kLine);

  html += StallChart(variants);
  html += RankChart(variants);

  // Epochs are discrete: one group of bars per epoch number, the variants side by side.
  const std::vector<ChartSeries> hits = VariantSeries(variants, "epochs", [](const auto& e) {
    return std::make_pair(e.value("epoch", 0.0), e.value("cache_hit_ratio", 0.0));
  });
  html += "<h2>Cache hit ratio per epoch</h2>\n" +
          EpochBarChart(hits, "hit ratio (all tiers)", true) +
          SeriesLegend(hits, LegendSwatch::kBar);

  // Queue occupancy: batches fetched and waiting (the prefetch buffer's fill).
  const std::vector<ChartSeries> queues = VariantSeries(variants, "timeline", [](const auto& p) {
    return std::make_pair(p.value("t", 0.0),
                          p.value("queue_ready", 0.0) + p.value("queue_preprocessing", 0.0));
  });
  html +=
      "<h2>Queue occupancy: batches fetched and waiting for preprocessing or the device</h2>\n" +
      LineChart(queues, {.x_label = "seconds into the window", .y_label = "batches"}) +
      SeriesLegend(queues, LegendSwatch::kLine);
  return html;
}

// The page's head, title and where its numbers come from.
std::string PageStart(const std::vector<std::string>& sources, size_t variants, size_t sweeps,
                      const std::string& device) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>stallscope report</title><style>"
      "body{font-family:sans-serif;max-width:820px;margin:24px auto;color:#222}"
      "h1{font-size:22px}h2{font-size:16px;margin-top:28px}"
      "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;"
      "text-align:right}th:first-child,td:first-child{text-align:left}"
      ".legend span{margin-right:14px;font-size:12px;white-space:nowrap}"
      ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}"
      ".legend svg{vertical-align:middle;margin-right:4px}.verdict{font-size:13px;margin:4px 0}"
      "</style></head><body>\n<h1>stallscope: is the data pipeline starving the GPU?</h1>\n";
  html += "<p>From ";
  for (size_t d = 0; d < sources.size(); ++d) {
    html += (d ? ", " : "") + ("<code>" + HtmlEscape(sources[d]) + "</code>");
  }
  if (variants == 0) {
    html += fmt::format(" ({} sweep(s)).</p>\n", sweeps);
  } else {
    html += fmt::format(" ({} variant(s), device {}).</p>\n", variants, HtmlEscape(device));
  }
  return html;
}

}  // namespace

std::string RenderHtmlReport(const std::vector<nlohmann::json>& documents,
                             const std::vector<std::string>& sources) {
  std::vector<Variant> variants;
  std::vector<const nlohmann::json*> sweeps;
  for (size_t d = 0; d < documents.size(); ++d) {
    const std::string& src = sources[d];
    if (documents[d].contains("sweep")) {
      sweeps.push_back(&documents[d]["sweep"]);
      continue;
    }
    const nlohmann::json& vs = Need(documents[d], "variants", src);
    const std::string scenario = documents[d].value("scenario", "?");
    for (const auto& v : vs) {
      Need(v, "gpu_idle_fraction", src);
      Need(v, "stall_seconds", src);
      const std::string label =
          (documents.size() > 1 ? scenario + " / " : std::string()) + v.value("name", "?");
      const int n = static_cast<int>(variants.size());
      variants.push_back({label, kColors[n % 8], n, &v});
    }
  }
  std::string html = PageStart(sources, variants.size(), sweeps.size(),
                               documents.empty() ? "" : documents[0].value("device", "?"));
  if (!variants.empty()) html += VerdictSection(variants) + VariantCharts(variants);
  for (const nlohmann::json* sw : sweeps) html += SweepSection(*sw);
  return html +
         "\n<p style=\"font-size:11px;color:#777\">Made by <code>stallscope report</code>. "
         "Idle fraction, AU and stall attribution as defined in DESIGN.md.</p>\n</body></html>\n";
}

}  // namespace stallscope
