#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "base/units.h"

namespace stallscope {
namespace {

// Colour-blind-safe palette (Okabe–Ito), cycled over variants.
const char* kColors[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                         "#56B4E9", "#D55E00", "#F0E442", "#000000"};
const char* kStageColors[] = {"#D55E00", "#E69F00", "#56B4E9", "#999999"};
const char* kStages[] = {"fetch", "preprocess", "transfer", "other"};

constexpr int kWidth = 760, kHeight = 260, kLeft = 56, kRight = 16, kTop = 16, kBottom = 36;

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Series {
  std::string label;
  std::string color;
  std::vector<std::pair<double, double>> points;
};

// Axes, grid and tick labels for x in [0, xmax], y in [0, ymax].
std::string Frame(double xmax, double ymax, const std::string& xlabel, const std::string& ylabel,
                  bool percent) {
  std::string s = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">",
      kWidth, kHeight, kWidth, kHeight);
  const int pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  for (int i = 0; i <= 4; ++i) {
    const double y = kTop + ph - ph * i / 4.0;
    const double v = ymax * i / 4.0;
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>",
                     kLeft, y, kLeft + pw, y);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLeft - 4, y + 4,
                     percent ? fmt::format("{:.0f}%", v * 100) : fmt::format("{:.3g}", v));
  }
  for (int i = 0; i <= 5; ++i) {
    const double x = kLeft + pw * i / 5.0;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>", x,
                     kTop + ph + 14, xmax * i / 5.0);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", kLeft + pw / 2,
                   kHeight - 4, Escape(xlabel));
  s += fmt::format(
      "<text x=\"12\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {})\">{}</text>",
      kTop + ph / 2, kTop + ph / 2, Escape(ylabel));
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#888\"/>",
      kLeft, kTop, pw, ph);
  return s;
}

std::string LineChart(const std::vector<Series>& series, const std::string& xlabel,
                      const std::string& ylabel, bool percent) {
  double xmax = 1e-9, ymax = percent ? 1.0 : 1e-9;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  }
  if (!percent) ymax *= 1.1;
  std::string out = Frame(xmax, ymax, xlabel, ylabel, percent);
  const int pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  for (const Series& s : series) {
    std::string d;
    for (const auto& [x, y] : s.points) {
      d += fmt::format("{}{:.1f},{:.1f}", d.empty() ? "M" : " L", kLeft + pw * x / xmax,
                       kTop + ph - ph * y / ymax);
    }
    out += fmt::format(
        "<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.8\"><title>{}</title></path>",
        d, s.color, Escape(s.label));
    if (s.points.size() == 1) {  // a lone point (one epoch): a line would not show it
      const auto [x, y] = s.points[0];
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>",
                         kLeft + pw * x / xmax, kTop + ph - ph * y / ymax, s.color);
    }
  }
  return out + "</svg>";
}

std::string Legend(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = "<div class=\"legend\">";
  for (const auto& [label, color] : items) {
    s += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", color, Escape(label));
  }
  return s + "</div>";
}

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

// A sweep CSV (pipeline/sweep.h): GPU idle against the first grid key, one line per variant
// and value of the other keys; then every row.
std::string SweepSection(const nlohmann::json& sweep) {
  const auto& keys = sweep["keys"];
  const auto& rows = sweep["rows"];
  std::string html =
      fmt::format("<h2>Sweep: <code>{}</code></h2>\n", Escape(sweep.value("source", "")));
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
  std::vector<Series> series;
  std::vector<std::pair<std::string, std::string>> legend;
  for (const auto& r : rows) {
    std::string label = r.value("variant", "?");
    for (size_t k = 1; k < keys.size(); ++k) {
      label +=
          " " + keys[k].get<std::string>() + "=" + r["point"].value(keys[k].get<std::string>(), "");
    }
    auto it = std::find_if(series.begin(), series.end(),
                           [&](const Series& s) { return s.label == label; });
    if (it == series.end()) {
      series.push_back({label, kColors[series.size() % 8], {}});
      legend.emplace_back(label, series.back().color);
      it = series.end() - 1;
    }
    const std::string xv = r["point"].value(x_key, "");
    const double x = numeric ? *AxisValue(xv)
                             : static_cast<double>(std::find(x_values.begin(), x_values.end(), xv) -
                                                   x_values.begin() + 1);
    it->points.emplace_back(x, r.value("gpu_idle_fraction", 0.0));
  }
  for (Series& s : series) std::sort(s.points.begin(), s.points.end());
  std::string xlabel = x_key;
  if (!numeric) {
    xlabel += " (";
    for (size_t i = 0; i < x_values.size(); ++i) {
      xlabel += fmt::format("{}{} = {}", i ? ", " : "", i + 1, x_values[i]);
    }
    xlabel += ")";
  }
  html += LineChart(series, xlabel, "GPU idle", true) + Legend(legend);
  html += "<table><tr><th>variant</th>";
  for (const auto& k : keys) html += "<th>" + Escape(k.get<std::string>()) + "</th>";
  html +=
      "<th>mode</th><th>GPUs</th><th>GPU "
      "idle</th><th>AU</th><th>samples/s</th><th>bottleneck</th></tr>\n";
  for (const auto& r : rows) {
    html += "<tr><td>" + Escape(r.value("variant", "?")) + "</td>";
    for (const auto& k : keys)
      html += "<td>" + Escape(r["point"].value(k.get<std::string>(), "")) + "</td>";
    html += fmt::format(
        "<td>{}</td><td>{:.0f}</td><td>{:.1f}%</td><td>{:.1f}%</td><td>{:.0f}</td><td>{}</td></"
        "tr>\n",
        Escape(r.value("mode", "")), r.value("gpus", 1.0), r.value("gpu_idle_fraction", 0.0) * 100,
        r.value("au", 0.0) * 100, r.value("samples_per_second", 0.0),
        Escape(r.value("bottleneck", "")));
  }
  return html + "</table>\n";
}

}  // namespace

std::string RenderHtmlReport(const std::vector<nlohmann::json>& documents,
                             const std::vector<std::string>& sources) {
  struct Variant {
    std::string label;
    std::string color;
    const nlohmann::json* v;
  };
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
      variants.push_back({label, kColors[variants.size() % 8], &v});
    }
  }
  std::vector<std::pair<std::string, std::string>> legend;
  for (const Variant& v : variants) legend.emplace_back(v.label, v.color);

  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>stallscope report</title><style>"
      "body{font-family:sans-serif;max-width:820px;margin:24px auto;color:#222}"
      "h1{font-size:22px}h2{font-size:16px;margin-top:28px}"
      "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;"
      "text-align:right}th:first-child,td:first-child{text-align:left}"
      ".legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;"
      "height:10px;margin-right:4px}.verdict{font-size:13px;margin:4px 0}"
      "</style></head><body>\n<h1>stallscope: is the data pipeline starving the GPU?</h1>\n";
  html += "<p>From ";
  for (size_t d = 0; d < sources.size(); ++d) {
    html += (d ? ", " : "") + ("<code>" + Escape(sources[d]) + "</code>");
  }
  if (variants.empty()) {
    html += fmt::format(" ({} sweep(s)).</p>\n", sweeps.size());
  } else {
    html += fmt::format(" ({} variant(s), device {}).</p>\n", variants.size(),
                        Escape(documents.empty() ? "" : documents[0].value("device", "?")));
  }

  const std::string footer =
      "\n<p style=\"font-size:11px;color:#777\">Made by <code>stallscope report</code>. "
      "Idle fraction, AU and stall attribution as defined in DESIGN.md.</p>\n</body></html>\n";
  if (variants.empty()) {  // sweep CSVs only
    for (const nlohmann::json* sw : sweeps) html += SweepSection(*sw);
    return html + footer;
  }

  // Headline table and verdicts.
  html +=
      "<h2>Verdicts</h2>\n<table><tr><th>variant</th><th>GPU idle</th><th>AU</th>"
      "<th>samples/s</th><th>cache hit</th><th>bottleneck</th></tr>\n";
  for (const Variant& v : variants) {
    const auto& j = *v.v;
    html += fmt::format(
        "<tr><td><i style=\"color:{}\">&#9632;</i> {}</td><td>{:.1f}%</td><td>{:.1f}%</td>"
        "<td>{:.0f}</td><td>{:.1f}%</td><td>{}</td></tr>\n",
        v.color, Escape(v.label), j.value("gpu_idle_fraction", 0.0) * 100, j.value("au", 0.0) * 100,
        j.value("samples_per_second", 0.0), j.value("cache_hit_ratio", 0.0) * 100,
        Escape(j.contains("bottleneck") ? j["bottleneck"].value("stage", "?") : "?"));
  }
  html += "</table>\n";
  for (const Variant& v : variants) {
    const std::string text =
        v.v->contains("bottleneck") ? (*v.v)["bottleneck"].value("text", "") : "";
    html += fmt::format("<p class=\"verdict\"><b>{}</b>: {}</p>\n", Escape(v.label), Escape(text));
  }

  // 1. Utilization over time.
  std::vector<Series> util;
  for (const Variant& v : variants) {
    Series s{v.label, v.color, {}};
    for (const auto& p : v.v->value("timeline", nlohmann::json::array())) {
      s.points.emplace_back(p.value("t", 0.0), p.value("utilization", 0.0));
    }
    util.push_back(std::move(s));
  }
  html += "<h2>GPU utilization over the measured window</h2>\n" +
          LineChart(util, "seconds into the window", "GPU busy", true) + Legend(legend);

  // 2. Stall seconds by stage, stacked bars.
  {
    double max_total = 1e-9;
    for (const Variant& v : variants) {
      double t = 0;
      for (const char* st : kStages) t += (*v.v)["stall_seconds"].value(st, 0.0);
      max_total = std::max(max_total, t);
    }
    const int row = 26, h = static_cast<int>(variants.size()) * row + 40, labelw = 170;
    const int pw = kWidth - labelw - 70;  // room for the total after the bar
    html += "<h2>Stall seconds by stage</h2>\n";
    html += fmt::format(
        "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
        "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">",
        kWidth, h, kWidth, h);
    for (size_t i = 0; i < variants.size(); ++i) {
      const int y = 10 + static_cast<int>(i) * row;
      html += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", labelw - 6,
                          y + 14, Escape(variants[i].label));
      double x = labelw;
      for (int s = 0; s < 4; ++s) {
        const double sec = (*variants[i].v)["stall_seconds"].value(kStages[s], 0.0);
        const double w = pw * sec / max_total;
        if (w > 0) {
          html += fmt::format(
              "<rect class=\"bar\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
              "height=\"18\" fill=\"{}\"><title>{}: {:.2f} s</title></rect>",
              x, y, w, kStageColors[s], kStages[s], sec);
        }
        x += w;
      }
      html += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.2f} s</text>", x + 4, y + 14,
                          (x - labelw) / pw * max_total);
    }
    html += "</svg>";
    std::vector<std::pair<std::string, std::string>> stage_legend;
    for (int s = 0; s < 4; ++s) stage_legend.emplace_back(kStages[s], kStageColors[s]);
    html += Legend(stage_legend);
  }

  // 3. Cache hit ratio per epoch.
  std::vector<Series> hits;
  for (const Variant& v : variants) {
    Series s{v.label, v.color, {}};
    for (const auto& e : v.v->value("epochs", nlohmann::json::array())) {
      s.points.emplace_back(e.value("epoch", 0) + 1.0, e.value("cache_hit_ratio", 0.0));
    }
    hits.push_back(std::move(s));
  }
  html += "<h2>Cache hit ratio per epoch</h2>\n" +
          LineChart(hits, "epoch", "hit ratio (all tiers)", true) + Legend(legend);

  // 4. Queue occupancy: batches ready for the device (the prefetch buffer's fill).
  std::vector<Series> queues;
  for (const Variant& v : variants) {
    Series s{v.label, v.color, {}};
    for (const auto& p : v.v->value("timeline", nlohmann::json::array())) {
      s.points.emplace_back(p.value("t", 0.0),
                            p.value("queue_ready", 0.0) + p.value("queue_preprocessing", 0.0));
    }
    queues.push_back(std::move(s));
  }
  html +=
      "<h2>Queue occupancy: batches fetched and waiting for preprocessing or the device</h2>\n" +
      LineChart(queues, "seconds into the window", "batches", false) + Legend(legend);

  for (const nlohmann::json* sw : sweeps) html += SweepSection(*sw);
  return html + footer;
}

}  // namespace stallscope
