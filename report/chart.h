// Chart: the inline-SVG charts of the HTML report (report/html_report.h) and the axis ticks
// they share.
//
// Every chart is one <svg class="chart"> of fixed size, with no scripts and no external
// references, so the page that holds it stays self-contained. Axis ticks fall on round
// numbers: 0 and steps of 1, 2 or 5 × 10^k (NiceTicks). Series are told apart by more than
// their colour, so that one lying exactly under another stays visible: lines by dash pattern
// and marker shape (ChartSeries::style), per-epoch values by bars side by side.
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_REPORT_CHART_H_
#define STALLSCOPE_REPORT_CHART_H_

#include <string>
#include <utility>
#include <vector>

namespace stallscope {

// At most this many intervals on an axis (NiceTicks' default): 1.0 is cut in steps of 0.2,
// not 0.1; 1.65 in steps of 0.5, not 0.2.
constexpr int kMaxTickIntervals = 7;

// The ticks of an axis from 0 to `max`: 0, s, 2s, ... up to the first tick at or above
// `max`, where the step s is the smallest 1, 2 or 5 × 10^k that covers `max` in at most
// `max_intervals` intervals. NiceTicks(1.65) = {0, 0.5, 1, 1.5, 2}. A `max` that is not a
// positive finite number gives {0, 1}. REQUIRES: max_intervals >= 1.
std::vector<double> NiceTicks(double max, int max_intervals = kMaxTickIntervals);

// A tick's label, with the decimals its axis' `step` needs ("0.5", "1.0"; "2", "4") and k, M,
// G for steps of a thousand or more ("200M"); `percent` writes fractions as "20%".
std::string FormatTick(double value, double step, bool percent);

// Text for HTML and SVG: <, >, & and " escaped.
std::string HtmlEscape(const std::string& text);

struct ChartSeries {
  std::string label;
  std::string color;  // a CSS colour
  // Picks the dash pattern and marker shape (cycled); give each series of a chart its own.
  int style = 0;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct LineChartOptions {
  std::string x_label, y_label;
  bool y_percent = false;  // y is a fraction, drawn from 0 to (at least) 100%
  // Discrete x (a sweep's grid values): a marker at every point, and the series nudged a
  // few pixels apart sideways so that equal points stay visible. Off for dense series
  // (timelines), which show their points only by dash pattern.
  bool markers = false;
};

// Lines, one <path class="series"> per series, over x from 0 to the largest x.
std::string LineChart(const std::vector<ChartSeries>& series, const LineChartOptions& options);

// Per-epoch values as grouped bars: one group per epoch at x = the epoch number (0, 1, 2 ...;
// each point's x is its epoch), one <rect class="epoch-bar"> per series and epoch, side by
// side in series order. A zero value still shows, as a line in its colour on the axis.
std::string EpochBarChart(const std::vector<ChartSeries>& series, const std::string& y_label,
                          bool y_percent);

// How a legend draws each series' swatch: as its LineChart draws it (a short line in its
// colour and dash, with its marker when the chart has markers), or as a square in its colour
// for an EpochBarChart.
enum class LegendSwatch { kLine, kLineWithMarker, kBar };
std::string SeriesLegend(const std::vector<ChartSeries>& series, LegendSwatch swatch);

// A legend of (label, colour) squares, e.g. the stages of a stacked bar.
std::string ColorLegend(const std::vector<std::pair<std::string, std::string>>& items);

}  // namespace stallscope

#endif  // STALLSCOPE_REPORT_CHART_H_
