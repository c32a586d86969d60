// The HTML report page from hand-made result documents and a sweep: the per-epoch chart
// draws bars at epochs 0, 1, 2, equal variants stay apart, every axis is labelled with round
// numbers, and nothing is fetched from anywhere.
#include "report/html_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/svg_test_util.h"

namespace stallscope {
namespace {

using svg_test::Bars;
using svg_test::Labels;
using svg_test::Texts;

// Okabe–Ito, in the report's order: the first three variants' colours.
const char* kFirst = "#0072B2";
const char* kSecond = "#E69F00";
const char* kThird = "#009E73";

nlohmann::json Variant(const std::string& name, double idle, std::vector<double> epoch_hits) {
  nlohmann::json epochs = nlohmann::json::array();
  for (size_t e = 0; e < epoch_hits.size(); ++e) {
    epochs.push_back({{"epoch", e}, {"cache_hit_ratio", epoch_hits[e]}});
  }
  nlohmann::json timeline = nlohmann::json::array();
  for (int i = 0; i < 20; ++i) {  // to 8.2 s, up to 3.3 batches waiting
    timeline.push_back({{"t", 0.2 + 0.42 * i},
                        {"utilization", 1 - idle},
                        {"queue_ready", 3.3 * i / 19},
                        {"queue_preprocessing", 0.0}});
  }
  return {{"name", name},
          {"gpu_idle_fraction", idle},
          {"au", 1 - idle},
          {"samples_per_second", 1000},
          {"cache_hit_ratio", epoch_hits.back()},
          {"stall_seconds", {{"fetch", 2.9}, {"preprocess", 1.1}, {"transfer", 0.3}, {"other", 0}}},
          {"bottleneck", {{"stage", "fetch"}, {"text", name + " is fetch-bound"}}},
          {"epochs", epochs},
          {"timeline", timeline}};
}

// cold_vs_cached's shape: "cached" and "disk-cached" fill their cache in epoch 0 and then
// hit alike.
nlohmann::json ColdVsCached() {
  return {{"scenario", "cold-vs-cached"},
          {"mode", "run"},
          {"device", "emulated"},
          {"variants",
           {Variant("cold", 0.506, {0, 0, 0}), Variant("cached", 0.25, {0, 0.999, 1.0}),
            Variant("disk-cached", 0.25, {0, 0.999, 1.0})}}};
}

// A --grid loader.prefetch=0,1,2,4 sweep of two variants that the grid makes equal.
nlohmann::json PrefetchSweep() {
  nlohmann::json rows = nlohmann::json::array();
  const double idle[] = {0.777, 0.622, 0.518, 0.394};
  const char* prefetch[] = {"0", "1", "2", "4"};
  for (int i = 0; i < 4; ++i) {
    for (const char* variant : {"prefetch-0", "prefetch-8"}) {
      rows.push_back({{"variant", variant},
                      {"point", {{"loader.prefetch", prefetch[i]}}},
                      {"mode", "simulate"},
                      {"gpu_idle_fraction", idle[i]}});
    }
  }
  return {{"sweep", {{"source", "s.csv"}, {"keys", {"loader.prefetch"}}, {"rows", rows}}}};
}

// The <svg class="chart"> after the heading that contains `heading`.
std::string ChartAfter(const std::string& html, const std::string& heading) {
  const size_t h = html.find(heading);
  if (h == std::string::npos) return "";
  const size_t start = html.find("<svg class=\"chart\"", h);
  const size_t end = html.find("</svg>", start);
  return start == std::string::npos ? "" : html.substr(start, end - start + 6);
}

TEST(HtmlReport, HitRatioPerEpochIsBarsAtEpochsZeroOneTwo) {
  const std::string html = RenderHtmlReport({ColdVsCached()}, {"cvc.json"});
  const std::string chart = ChartAfter(html, "Cache hit ratio per epoch");
  ASSERT_FALSE(chart.empty());
  EXPECT_EQ(Texts(Labels(chart, "x-tick")), (std::vector<std::string>{"0", "1", "2"}));
  for (const char* color : {kFirst, kSecond, kThird}) {
    EXPECT_EQ(Bars(chart, "epoch-bar", color).size(), 3u) << color;
  }
  EXPECT_EQ(chart.find("class=\"series\""), std::string::npos);
}

TEST(HtmlReport, EqualVariantsStandSideBySideInTheEpochChart) {
  const std::string chart =
      ChartAfter(RenderHtmlReport({ColdVsCached()}, {"cvc.json"}), "Cache hit ratio per epoch");
  const auto cached = Bars(chart, "epoch-bar", kSecond);
  const auto disk = Bars(chart, "epoch-bar", kThird);
  ASSERT_EQ(cached.size(), 3u);
  ASSERT_EQ(disk.size(), 3u);
  for (int e = 1; e < 3; ++e) {
    EXPECT_NEAR(cached[e].height, disk[e].height, 0.01);
    EXPECT_LE(cached[e].x + cached[e].width, disk[e].x);  // not one under the other
  }
}

// Tick labels as numbers: "20%" → 20, "1.5" → 1.5, "200M" → 200.
double TickNumber(std::string text) {
  if (!text.empty() && std::string("%kMG").find(text.back()) != std::string::npos) text.pop_back();
  return std::stod(text);
}

// Every axis of every chart in `html` counts 0, s, 2s, ... with s 1, 2 or 5 × 10^k.
void ExpectRoundTicksEverywhere(const std::string& html, int expected_axes) {
  int axes = 0;
  for (size_t at = html.find("<svg class=\"chart\""); at != std::string::npos;
       at = html.find("<svg class=\"chart\"", at + 1)) {
    const std::string chart = html.substr(at, html.find("</svg>", at) - at);
    for (const char* axis : {"x-tick", "y-tick"}) {
      const std::vector<std::string> labels = Texts(Labels(chart, axis));
      if (labels.empty()) continue;  // the stall bars have no axes
      ++axes;
      SCOPED_TRACE(::testing::PrintToString(labels));
      ASSERT_GE(labels.size(), 2u);
      EXPECT_EQ(TickNumber(labels[0]), 0);
      const double step = TickNumber(labels[1]);
      const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
      EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                  std::abs(mantissa - 5) < 1e-9)
          << step;
      for (size_t i = 0; i < labels.size(); ++i) {
        EXPECT_NEAR(TickNumber(labels[i]), i * step, step * 1e-6) << labels[i];
      }
    }
  }
  EXPECT_EQ(axes, expected_axes);
}

TEST(HtmlReport, EveryAxisIsLabelledWithRoundNumbers) {
  // Utilization and queues over time, hit ratio per epoch, the sweep: 4 charts, x and y each.
  const std::string html =
      RenderHtmlReport({ColdVsCached(), PrefetchSweep()}, {"cvc.json", "s.csv"});
  ExpectRoundTicksEverywhere(html, 8);
  // The queue chart reaches 3.3 batches: 0.5 steps to 3.5, not 0.825 steps.
  const std::string queues = ChartAfter(html, "Queue occupancy");
  EXPECT_EQ(Texts(Labels(queues, "y-tick")).back(), "3.5");
  EXPECT_EQ(Texts(Labels(queues, "x-tick")), (std::vector<std::string>{"0", "2", "4", "6", "8"}));
}

TEST(HtmlReport, SweepMarksEveryGridPointAndKeepsEqualVariantsApart) {
  const std::string html = RenderHtmlReport({PrefetchSweep()}, {"s.csv"});
  const std::string chart = ChartAfter(html, "Sweep:");
  EXPECT_EQ(Texts(Labels(chart, "x-tick")), (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  // prefetch-0 circles, prefetch-8 squares: one per grid value each.
  const std::regex circle("<circle class=\"marker\"[^>]*cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  const std::regex square("<rect class=\"marker\"[^>]*x=\"([0-9.]+)\" y=\"([0-9.]+)\"");
  std::vector<double> circles, squares;
  for (std::sregex_iterator it(chart.begin(), chart.end(), circle), end; it != end; ++it) {
    circles.push_back(std::stod((*it)[1]));
  }
  for (std::sregex_iterator it(chart.begin(), chart.end(), square), end; it != end; ++it) {
    squares.push_back(std::stod((*it)[1]) + 4);  // the square's centre
  }
  ASSERT_EQ(circles.size(), 4u);
  ASSERT_EQ(squares.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_GE(std::abs(circles[i] - squares[i]), 2) << i;
  EXPECT_NE(html.find("stroke-dasharray"), std::string::npos);
}

TEST(HtmlReport, ThePageFetchesNothing) {
  const std::string html =
      RenderHtmlReport({ColdVsCached(), PrefetchSweep()}, {"cvc.json", "s.csv"});
  for (const char* fetch : {"<script", "<link", "<img", "src=", "href=", "url(", "@import"}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
  // The only address is SVG's namespace name, which is never fetched.
  const std::string ns = "http://www.w3.org/2000/svg";
  for (size_t at = html.find("http"); at != std::string::npos; at = html.find("http", at + 1)) {
    EXPECT_EQ(html.compare(at, ns.size(), ns), 0) << html.substr(at, 40);
  }
}

// A two-rank run: a bar per rank, its wait for the other as sync (pink), its idle after it;
// a one-rank document draws no per-rank chart.
TEST(HtmlReport, AMultiRankRunDrawsEachRanksIdleBySyncAndItsOwnStages) {
  nlohmann::json doc = ColdVsCached();
  nlohmann::json& v = doc["variants"][0];
  v["ranks"] = {{{"rank", 0},
                 {"gpu_idle_fraction", 0.6},
                 {"stall_seconds", {{"fetch", 0}, {"preprocess", 0}, {"sync", 3.0}}}},
                {{"rank", 1},
                 {"gpu_idle_fraction", 0.6},
                 {"stall_seconds", {{"fetch", 0}, {"preprocess", 3.0}, {"sync", 0.01}}}}};
  const std::string chart = ChartAfter(RenderHtmlReport({doc}, {"r.json"}), "GPU idle per rank");
  ASSERT_FALSE(chart.empty());
  const auto sync = Bars(chart, "bar", "#CC79A7");
  const auto preprocess = Bars(chart, "bar", "#E69F00");
  ASSERT_EQ(sync.size(), 2u);
  ASSERT_EQ(preprocess.size(), 1u);
  EXPECT_GT(sync[0].width, 100 * sync[1].width);  // rank 0 waited, rank 1 hardly
  EXPECT_LT(sync[0].y, preprocess[0].y);          // rank 0's row first
  EXPECT_NEAR(sync[0].width, preprocess[0].width, 1);
  EXPECT_NE(chart.find("cold rank 1"), std::string::npos);
  EXPECT_NE(chart.find("idle 60.0%"), std::string::npos);
  EXPECT_EQ(RenderHtmlReport({ColdVsCached()}, {"c.json"}).find("GPU idle per rank"),
            std::string::npos);
}

TEST(HtmlReport, ADocumentWithoutVariantsIsRefusedByName) {
  try {
    RenderHtmlReport({nlohmann::json{{"scenario", "x"}}}, {"odd.json"});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("odd.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace stallscope
