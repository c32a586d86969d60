#include "report/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stallscope {
namespace {

// Chart geometry in pixels: the plot area is the box inside the margins (room for tick
// labels on the left and below, and the axis titles).
constexpr int kWidth = 760, kHeight = 260, kLeft = 56, kRight = 16, kTop = 16, kBottom = 36;
constexpr int kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;
// Space between the top tick and the frame, so that a series at the top tick (100% busy) is
// drawn apart from the frame's edge.
constexpr double kHeadroom = 8;
// With markers: how far apart sideways consecutive series are drawn (8 series span ±14 px,
// small against a grid value's spacing), and the margin inside the frame that keeps the
// outermost markers in it.
constexpr double kDodge = 4, kMarkerInset = 20;
constexpr double kMarkerRadius = 4;
// Per-epoch bars: the share of an epoch's width its group of bars takes (the rest parts the
// groups).
constexpr double kGroupShare = 0.8;

// Dash patterns (stroke-dasharray), cycled by ChartSeries::style; the first is solid. Each
// series drawn over an earlier one leaves gaps through which the earlier one shows.
const char* kDashes[] = {"", "8 4", "2 3", "10 3 2 3", "5 5", "1 5", "14 4", "6 2 2 2 2 2"};
constexpr int kStyles = sizeof(kDashes) / sizeof(kDashes[0]);

int StyleIndex(int style) { return ((style % kStyles) + kStyles) % kStyles; }

std::string DashAttribute(int style) {
  const char* dash = kDashes[StyleIndex(style)];
  return *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : std::string();
}

// A hollow marker at (x, y): circle, square, triangle, diamond, triangle down, plus, cross,
// dot, cycled by `style`.
std::string Marker(int style, double x, double y, const std::string& color) {
  const double r = kMarkerRadius;
  const std::string paint =
      fmt::format("class=\"marker\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"", color);
  switch (StyleIndex(style)) {
    case 0:
      return fmt::format("<circle {} cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\"/>", paint, x, y, r);
    case 1:
      return fmt::format("<rect {} x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\"/>", paint,
                         x - r, y - r, 2 * r, 2 * r);
    case 2:
      return fmt::format("<polygon {} points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>",
                         paint, x, y - 1.2 * r, x + 1.1 * r, y + 0.8 * r, x - 1.1 * r, y + 0.8 * r);
    case 3:
      return fmt::format(
          "<polygon {} points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>", paint,
          x, y - 1.3 * r, x + 1.3 * r, y, x, y + 1.3 * r, x - 1.3 * r, y);
    case 4:
      return fmt::format("<polygon {} points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>",
                         paint, x, y + 1.2 * r, x + 1.1 * r, y - 0.8 * r, x - 1.1 * r, y - 0.8 * r);
    case 5:
      return fmt::format("<path {} d=\"M{:.1f},{:.1f} H{:.1f} M{:.1f},{:.1f} V{:.1f}\"/>", paint,
                         x - r, y, x + r, x, y - r, y + r);
    case 6:
      return fmt::format(
          "<path {} d=\"M{:.1f},{:.1f} L{:.1f},{:.1f} M{:.1f},{:.1f} L{:.1f},{:.1f}\"/>", paint,
          x - r, y - r, x + r, y + r, x - r, y + r, x + r, y - r);
    default:
      return fmt::format(
          "<circle class=\"marker\" fill=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\"/>", color, x,
          y, r - 1);
  }
}

struct Tick {
  double pixel;
  std::string label;
};

// A value axis from 0: its ticks, the value at the far end, and the tick step.
struct Scale {
  std::vector<double> ticks;
  double max;
  double step;
};

// y: the ticks run to the first at or above the data, and the axis to the last tick;
// fractions (percent) show 0..100% at least.
Scale YScale(double data_max, bool percent) {
  std::vector<double> ticks = NiceTicks(percent ? std::max(1.0, data_max) : data_max);
  return {ticks, ticks.back(), ticks[1]};
}

// x: the axis ends at the data's last x; the ticks past it are dropped.
Scale XScale(double data_max) {
  std::vector<double> ticks = NiceTicks(data_max);
  const double step = ticks[1];
  if (!(data_max > 0)) return {ticks, ticks.back(), step};
  while (ticks.size() > 1 && ticks.back() > data_max * (1 + 1e-9)) ticks.pop_back();
  return {ticks, data_max, step};
}

double YPixel(double y, double ymax) {
  return kTop + kHeadroom + (kPlotHeight - kHeadroom) * (1 - y / ymax);
}

std::vector<Tick> YTicks(const Scale& s, bool percent) {
  std::vector<Tick> out;
  for (double v : s.ticks) out.push_back({YPixel(v, s.max), FormatTick(v, s.step, percent)});
  return out;
}

// The <svg> opening, grid lines at the y ticks, tick labels, axis titles and the frame.
std::string Frame(const std::vector<Tick>& x_ticks, const std::vector<Tick>& y_ticks,
                  const std::string& x_label, const std::string& y_label) {
  std::string s = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">",
      kWidth, kHeight, kWidth, kHeight);
  const int bottom = kTop + kPlotHeight;
  for (const Tick& t : y_ticks) {
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>",
                     kLeft, t.pixel, kLeft + kPlotWidth, t.pixel);
    s += fmt::format("<text class=\"y-tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                     kLeft - 4, t.pixel + 4, t.label);
  }
  for (const Tick& t : x_ticks) {
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#888\"/>",
                     t.pixel, bottom, t.pixel, bottom + 4);
    s +=
        fmt::format("<text class=\"x-tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    t.pixel, bottom + 15, t.label);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                   kLeft + kPlotWidth / 2, kHeight - 4, HtmlEscape(x_label));
  s += fmt::format(
      "<text x=\"12\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {})\">{}</text>",
      kTop + kPlotHeight / 2, kTop + kPlotHeight / 2, HtmlEscape(y_label));
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>", kLeft,
      kTop, kPlotWidth, kPlotHeight);
  return s;
}

double Pow10(int exponent) { return std::pow(10.0, exponent); }

// i × m × 10^e, rounded once: 3 × 1 × 10^-1 is 0.3, not 0.30000000000000004.
double ScaledTick(int i, int m, int e) {
  return e >= 0 ? i * m * Pow10(e) : static_cast<double>(i) * m / Pow10(-e);
}

}  // namespace

std::vector<double> NiceTicks(double max, int max_intervals) {
  if (!(max > 0) || !std::isfinite(max)) return {0, 1};
  max_intervals = std::max(1, max_intervals);
  // Candidates in increasing order from a decade below the raw step (log10 may round).
  const int first = static_cast<int>(std::floor(std::log10(max / max_intervals))) - 1;
  for (int e = first;; ++e) {
    for (int m : {1, 2, 5}) {
      const double step = m * Pow10(e);
      const double intervals = std::ceil(max / step - 1e-9);
      if (intervals > max_intervals) continue;
      std::vector<double> ticks;
      for (int i = 0; i <= static_cast<int>(intervals); ++i) ticks.push_back(ScaledTick(i, m, e));
      return ticks;
    }
  }
}

std::string FormatTick(double value, double step, bool percent) {
  if (percent) return FormatTick(value * 100, step * 100, false) + "%";
  static const struct {
    double scale;
    const char* suffix;
  } kUnits[] = {{1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& u : kUnits) {
    if (step >= u.scale * (1 - 1e-9)) {
      return FormatTick(value / u.scale, step / u.scale, false) + u.suffix;
    }
  }
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", value, decimals);
}

std::string HtmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
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

std::string LineChart(const std::vector<ChartSeries>& series, const LineChartOptions& options) {
  double xmax = 0, ymax = 0;
  for (const ChartSeries& s : series) {
    for (const auto& [x, y] : s.points) {
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  }
  const Scale xs = XScale(xmax), ys = YScale(ymax, options.y_percent);
  const double inset = options.markers ? kMarkerInset : 0;
  auto x_pixel = [&](double x) { return kLeft + inset + (kPlotWidth - 2 * inset) * x / xs.max; };
  std::vector<Tick> x_ticks;
  for (double v : xs.ticks) x_ticks.push_back({x_pixel(v), FormatTick(v, xs.step, false)});
  std::string out = Frame(x_ticks, YTicks(ys, options.y_percent), options.x_label, options.y_label);
  const double middle = (static_cast<double>(series.size()) - 1) / 2;
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    const double dodge = options.markers ? kDodge * (static_cast<double>(i) - middle) : 0;
    std::string d, markers;
    for (const auto& [x, y] : s.points) {
      const double px = x_pixel(x) + dodge, py = YPixel(y, ys.max);
      d += fmt::format("{}{:.1f},{:.1f}", d.empty() ? "M" : " L", px, py);
      // A lone point (one epoch, one grid value) would not show as a line.
      if (options.markers || s.points.size() == 1) {
        markers += fmt::format(
            "<g><title>{}: x = {:g}, y = {}</title>{}</g>", HtmlEscape(s.label), x,
            options.y_percent ? fmt::format("{:.1f}%", y * 100) : fmt::format("{:.3g}", y),
            Marker(s.style, px, py, s.color));
      }
    }
    out += fmt::format(
        "<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{}>"
        "<title>{}</title></path>{}",
        d, s.color, DashAttribute(s.style), HtmlEscape(s.label), markers);
  }
  return out + "</svg>";
}

std::string EpochBarChart(const std::vector<ChartSeries>& series, const std::string& y_label,
                          bool y_percent) {
  long last_epoch = 0;
  double ymax = 0;
  for (const ChartSeries& s : series) {
    for (const auto& [x, y] : s.points) {
      last_epoch = std::max(last_epoch, std::lround(x));
      ymax = std::max(ymax, y);
    }
  }
  const Scale ys = YScale(ymax, y_percent);
  const double band = static_cast<double>(kPlotWidth) / (last_epoch + 1);
  const double bar = band * kGroupShare / std::max<size_t>(1, series.size());
  const double gap = bar > 6 ? 1 : 0;  // a hairline between neighbouring bars
  // Label every epoch, or every 2nd, 5th, 10th ... when there are many.
  const long stride = std::max(1L, std::lround(NiceTicks(static_cast<double>(last_epoch))[1]));
  std::vector<Tick> x_ticks;
  for (long e = 0; e <= last_epoch; e += stride) {
    x_ticks.push_back({kLeft + band * (e + 0.5), std::to_string(e)});
  }
  std::string out = Frame(x_ticks, YTicks(ys, y_percent), "epoch", y_label);
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    for (const auto& [x, y] : s.points) {
      const long epoch = std::lround(x);
      if (epoch < 0) continue;
      const double left = kLeft + band * epoch + band * (1 - kGroupShare) / 2 + bar * i + gap;
      const double width = std::max(0.5, bar - 2 * gap);
      const double top = YPixel(y, ys.max), base = kTop + kPlotHeight;
      const std::string value =
          y_percent ? fmt::format("{:.1f}%", y * 100) : fmt::format("{:.3g}", y);
      out += fmt::format(
          "<rect class=\"epoch-bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
          "height=\"{:.1f}\" fill=\"{}\"><title>{}, epoch {}: {}</title></rect>",
          left, top, width, std::max(0.0, base - top), s.color, HtmlEscape(s.label), epoch, value);
      out += fmt::format(
          "<line class=\"bar-cap\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
          "stroke=\"{}\" stroke-width=\"2\"/>",
          left, top, left + width, top, s.color);
    }
  }
  return out + "</svg>";
}

std::string SeriesLegend(const std::vector<ChartSeries>& series, LegendSwatch swatch) {
  std::string out = "<div class=\"legend\">";
  for (const ChartSeries& s : series) {
    if (swatch == LegendSwatch::kBar) {
      out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", s.color,
                         HtmlEscape(s.label));
      continue;
    }
    out += fmt::format(
        "<span><svg class=\"swatch\" width=\"34\" height=\"12\" viewBox=\"0 0 34 12\">"
        "<line x1=\"1\" y1=\"6\" x2=\"33\" y2=\"6\" stroke=\"{}\" stroke-width=\"1.8\"{}/>{}</svg>"
        "{}</span>",
        s.color, DashAttribute(s.style),
        swatch == LegendSwatch::kLineWithMarker ? Marker(s.style, 17, 6, s.color) : "",
        HtmlEscape(s.label));
  }
  return out + "</div>";
}

std::string ColorLegend(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [label, color] : items) {
    out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", color, HtmlEscape(label));
  }
  return out + "</div>";
}

}  // namespace stallscope
