// The report's charts as a reader sees them: ticks on round numbers, per-epoch values as bars
// at epochs 0, 1, 2 ..., and series that stay visible when they are equal. The SVG is read
// back by position (where a bar stands against the tick labels), not by re-running the
// chart's arithmetic.
#include "report/chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "report/svg_test_util.h"

namespace stallscope {
namespace {

using svg_test::Bar;
using svg_test::Bars;
using svg_test::Label;
using svg_test::Labels;
using svg_test::Texts;

void ExpectTicks(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size()) << ::testing::PrintToString(actual);
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-12) << i;
}

TEST(NiceTicks, RoundStepsUpToTheFirstTickAtOrAboveTheMax) {
  ExpectTicks(NiceTicks(1.65), {0, 0.5, 1, 1.5, 2});  // not 0, 0.4125, 0.825 ...
  ExpectTicks(NiceTicks(1.0), {0, 0.2, 0.4, 0.6, 0.8, 1.0});
  ExpectTicks(NiceTicks(3.3), {0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5});
  ExpectTicks(NiceTicks(8.38), {0, 2, 4, 6, 8, 10});
  ExpectTicks(NiceTicks(4), {0, 1, 2, 3, 4});
  ExpectTicks(NiceTicks(7), {0, 1, 2, 3, 4, 5, 6, 7});
  ExpectTicks(NiceTicks(0.03), {0, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03});
  ExpectTicks(NiceTicks(120000), {0, 20000, 40000, 60000, 80000, 100000, 120000});
  ExpectTicks(NiceTicks(4.4, 3), {0, 2, 4, 6});
}

TEST(NiceTicks, NoPositiveFiniteMaxGivesZeroToOne) {
  ExpectTicks(NiceTicks(0), {0, 1});
  ExpectTicks(NiceTicks(-3), {0, 1});
  ExpectTicks(NiceTicks(std::nan("")), {0, 1});
  ExpectTicks(NiceTicks(INFINITY), {0, 1});
}

// 1, 2 or 5 × 10^k.
bool IsRoundStep(double step) {
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  for (double m : {1.0, 2.0, 5.0}) {
    if (std::abs(mantissa - m) < 1e-9) return true;
  }
  return false;
}

TEST(NiceTicks, AnyMaxGetsTheFinestRoundStepInAtMostSevenIntervals) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> exponent(-4, 9);
  for (int trial = 0; trial < 2000; ++trial) {
    const double max = std::pow(10.0, exponent(rng));
    SCOPED_TRACE(max);
    const std::vector<double> t = NiceTicks(max);
    ASSERT_GE(t.size(), 2u);
    ASSERT_LE(t.size(), 8u);  // at most 7 intervals
    EXPECT_EQ(t[0], 0);
    const double step = t[1];
    EXPECT_TRUE(IsRoundStep(step)) << step;
    for (size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(t[i], i * step, step * 1e-9);
    EXPECT_GE(t.back(), max * (1 - 1e-12));
    EXPECT_LT(t[t.size() - 2], max);
    // The next finer round step (5 → 2, 2 → 1, 1 → 0.5) would need more than 7 intervals.
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    const double finer = step * (std::abs(mantissa - 5) < 1e-9 ? 0.4 : 0.5);
    EXPECT_GT(std::ceil(max / finer - 1e-9), 7) << "step " << step << " finer " << finer;
  }
}

TEST(FormatTick, AsManyDecimalsAsTheStepNeeds) {
  EXPECT_EQ(FormatTick(0, 0.5, false), "0.0");
  EXPECT_EQ(FormatTick(1, 0.5, false), "1.0");
  EXPECT_EQ(FormatTick(1.5, 0.5, false), "1.5");
  EXPECT_EQ(FormatTick(4, 2, false), "4");
  EXPECT_EQ(FormatTick(0.015, 0.005, false), "0.015");
  EXPECT_EQ(FormatTick(0.3, 0.1, false), "0.3");
  EXPECT_EQ(FormatTick(0.4, 0.2, true), "40%");
  EXPECT_EQ(FormatTick(0.05, 0.05, true), "5%");
  EXPECT_EQ(FormatTick(0.025, 0.005, true), "2.5%");
  EXPECT_EQ(FormatTick(2e8, 1e8, false), "200M");
  EXPECT_EQ(FormatTick(60000, 20000, false), "60k");
  EXPECT_EQ(FormatTick(1.5e9, 5e8, false), "1500M");
  EXPECT_EQ(FormatTick(4e9, 1e9, false), "4G");
}

const char* kBlue = "#0072B2";
const char* kOrange = "#E69F00";

// Two series as cold_vs_cached's "cached" and "disk-cached": equal in epochs 1 and 2.
std::vector<ChartSeries> TwoSeriesThreeEpochs() {
  return {{"cached", kBlue, 0, {{0, 0.25}, {1, 0.5}, {2, 1.0}}},
          {"disk-cached", kOrange, 1, {{0, 0.0}, {1, 0.5}, {2, 1.0}}}};
}

// The x-tick label nearest to pixel x.
std::string NearestLabel(const std::vector<Label>& labels, double x) {
  const Label* best = nullptr;
  for (const Label& l : labels) {
    if (!best || std::abs(l.x - x) < std::abs(best->x - x)) best = &l;
  }
  return best ? best->text : "";
}

TEST(EpochBarChart, EachSeriesHasOneBarPerEpochAtEpochsZeroOneTwo) {
  const std::string svg = EpochBarChart(TwoSeriesThreeEpochs(), "hit ratio", true);
  const std::vector<Label> x_ticks = Labels(svg, "x-tick");
  EXPECT_EQ(Texts(x_ticks), (std::vector<std::string>{"0", "1", "2"}));
  for (const char* color : {kBlue, kOrange}) {
    SCOPED_TRACE(color);
    const std::vector<Bar> bars = Bars(svg, "epoch-bar", color);
    ASSERT_EQ(bars.size(), 3u);
    for (int e = 0; e < 3; ++e) {
      EXPECT_EQ(NearestLabel(x_ticks, bars[e].x + bars[e].width / 2), std::to_string(e));
    }
  }
  EXPECT_EQ(svg.find("class=\"series\""), std::string::npos);  // no line through epochs
}

TEST(EpochBarChart, BarHeightsAreTheValuesOnTheYAxis) {
  const std::string svg = EpochBarChart(TwoSeriesThreeEpochs(), "hit ratio", true);
  const std::vector<Bar> blue = Bars(svg, "epoch-bar", kBlue);
  ASSERT_EQ(blue.size(), 3u);
  EXPECT_NEAR(blue[2].height, 2 * blue[1].height, 0.2);  // 1.0 against 0.5
  EXPECT_NEAR(blue[2].height, 4 * blue[0].height, 0.4);  // against 0.25
  // The 100% bar reaches the 100% tick; its foot is the 0% tick (labels sit 4 px low).
  const std::vector<Label> y_ticks = Labels(svg, "y-tick");
  ASSERT_EQ(Texts(y_ticks).front(), "0%");
  ASSERT_EQ(Texts(y_ticks).back(), "100%");
  EXPECT_NEAR(blue[2].y, y_ticks.back().y - 4, 1);
  EXPECT_NEAR(blue[2].y + blue[2].height, y_ticks.front().y - 4, 1);
}

TEST(EpochBarChart, EqualValuesStandSideBySideNotOnTopOfEachOther) {
  const std::string svg = EpochBarChart(TwoSeriesThreeEpochs(), "hit ratio", true);
  const std::vector<Bar> blue = Bars(svg, "epoch-bar", kBlue);
  const std::vector<Bar> orange = Bars(svg, "epoch-bar", kOrange);
  ASSERT_EQ(blue.size(), 3u);
  ASSERT_EQ(orange.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    SCOPED_TRACE(e);
    EXPECT_GT(blue[e].width, 10);
    EXPECT_LE(blue[e].x + blue[e].width, orange[e].x);          // series order, apart
    EXPECT_LT(orange[e].x - blue[e].x, 2 * blue[e].width + 3);  // but in one group
  }
  EXPECT_NEAR(blue[1].height, orange[1].height, 0.01);
}

TEST(EpochBarChart, AZeroValueStillShowsOnTheAxis) {
  const std::string svg = EpochBarChart(TwoSeriesThreeEpochs(), "hit ratio", true);
  const std::vector<Bar> orange = Bars(svg, "epoch-bar", kOrange);
  ASSERT_EQ(orange.size(), 3u);
  EXPECT_NEAR(orange[0].height, 0, 0.01);
  // A cap in its colour across the empty bar's width.
  const std::regex cap(
      "<line class=\"bar-cap\" x1=\"([0-9.]+)\" y1=\"[0-9.]+\" x2=\"([0-9.]+)\" "
      "y2=\"[0-9.]+\" stroke=\"" +
      std::string(kOrange) + "\"");
  bool found = false;
  for (std::sregex_iterator it(svg.begin(), svg.end(), cap), end; it != end; ++it) {
    const double x1 = std::stod((*it)[1]), x2 = std::stod((*it)[2]);
    if (std::abs(x1 - orange[0].x) < 0.1) {
      found = true;
      EXPECT_NEAR(x2 - x1, orange[0].width, 0.1);
    }
  }
  EXPECT_TRUE(found);
}

TEST(EpochBarChart, ManyEpochsAreLabelledEveryTenth) {
  ChartSeries s{"long run", kBlue, 0, {}};
  for (int e = 0; e < 50; ++e) s.points.emplace_back(e, 0.5);
  const std::string svg = EpochBarChart({s}, "idle", true);
  EXPECT_EQ(Texts(Labels(svg, "x-tick")), (std::vector<std::string>{"0", "10", "20", "30", "40"}));
  EXPECT_EQ(Bars(svg, "epoch-bar", kBlue).size(), 50u);
}

TEST(LineChart, TicksFallOnRoundNumbers) {
  ChartSeries s{"queue", kBlue, 0, {}};
  for (int i = 1; i <= 20; ++i) s.points.emplace_back(0.419 * i, 3.3 * i / 20);  // to 8.38, 3.3
  const std::string svg = LineChart({s}, {.x_label = "seconds", .y_label = "batches"});
  EXPECT_EQ(Texts(Labels(svg, "x-tick")), (std::vector<std::string>{"0", "2", "4", "6", "8"}));
  EXPECT_EQ(Texts(Labels(svg, "y-tick")),
            (std::vector<std::string>{"0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0", "3.5"}));
  const ChartSeries busy{"busy", kBlue, 0, {{0.5, 0.37}, {8.38, 0.73}}};
  const std::string percent = LineChart({busy}, {.x_label = "", .y_label = "", .y_percent = true});
  EXPECT_EQ(Texts(Labels(percent, "y-tick")),
            (std::vector<std::string>{"0%", "20%", "40%", "60%", "80%", "100%"}));
}

TEST(LineChart, TheLastPointIsAtTheRightEdgeAndXTicksStayInside) {
  ChartSeries s{"util", kBlue, 0, {{0.5, 0.2}, {8.38, 0.7}}};
  const std::string svg = LineChart({s}, {.x_label = "", .y_label = "", .y_percent = true});
  const std::vector<Label> x = Labels(svg, "x-tick");
  ASSERT_EQ(Texts(x).back(), "8");
  // "8" is at 8/8.38 of the way from "0" to the last point.
  const std::smatch m = [&] {
    std::smatch r;
    std::regex_search(svg, r, std::regex("d=\"M[0-9.]+,[0-9.]+ L([0-9.]+),"));
    return r;
  }();
  ASSERT_FALSE(m.empty());
  const double last = std::stod(m[1]);
  EXPECT_NEAR((x.back().x - x.front().x) / (last - x.front().x), 8 / 8.38, 0.002);
}

TEST(LineChart, EqualSeriesDifferInDashAndMarker) {
  const std::vector<std::pair<double, double>> points = {
      {0, 0.78}, {1, 0.62}, {2, 0.52}, {4, 0.39}};
  const std::vector<ChartSeries> series = {{"prefetch-0", kBlue, 0, points},
                                           {"prefetch-1", kOrange, 1, points}};
  const std::string svg =
      LineChart(series, {.x_label = "", .y_label = "", .y_percent = true, .markers = true});
  const std::regex path("<path class=\"series\" d=\"M([0-9.]+),[^\"]*\"([^>]*)>");
  std::vector<std::pair<double, bool>> paths;  // first x, dashed
  for (std::sregex_iterator it(svg.begin(), svg.end(), path), end; it != end; ++it) {
    paths.emplace_back(std::stod((*it)[1]),
                       (*it)[2].str().find("stroke-dasharray") != std::string::npos);
  }
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_NE(paths[0].second, paths[1].second);              // one solid, one dashed
  EXPECT_GE(std::abs(paths[1].first - paths[0].first), 2);  // nudged apart
  // A marker at every point, a different shape per series.
  const auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t at = svg.find(s); at != std::string::npos; at = svg.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<circle class=\"marker\""), 4u);
  EXPECT_EQ(count("<rect class=\"marker\""), 4u);
}

TEST(LineChart, DenseSeriesHaveNoMarkersButALonePointHasOne) {
  ChartSeries dense{"util", kBlue, 0, {}};
  for (int i = 0; i < 100; ++i) dense.points.emplace_back(i * 0.1, 0.5);
  EXPECT_EQ(LineChart({dense}, {}).find("class=\"marker\""), std::string::npos);
  ChartSeries lone{"one epoch", kBlue, 0, {{1, 0.5}}};
  EXPECT_NE(LineChart({lone}, {}).find("class=\"marker\""), std::string::npos);
}

TEST(SeriesLegend, DrawsEachSeriesAsItsChartDoes) {
  const std::vector<ChartSeries> s = TwoSeriesThreeEpochs();
  const std::string lines = SeriesLegend(s, LegendSwatch::kLine);
  EXPECT_NE(lines.find("stroke-dasharray"), std::string::npos);  // the second is dashed
  EXPECT_EQ(lines.find("class=\"marker\""), std::string::npos);
  const std::string marked = SeriesLegend(s, LegendSwatch::kLineWithMarker);
  EXPECT_NE(marked.find("<circle class=\"marker\""), std::string::npos);
  EXPECT_NE(marked.find("<rect class=\"marker\""), std::string::npos);
  const std::string bars = SeriesLegend(s, LegendSwatch::kBar);
  EXPECT_NE(bars.find(std::string("background:") + kOrange), std::string::npos);
  EXPECT_NE(bars.find("disk-cached"), std::string::npos);
}

TEST(HtmlEscape, EscapesMarkup) {
  EXPECT_EQ(HtmlEscape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
}

}  // namespace
}  // namespace stallscope
