// The Perfetto trace of a hand-made three-batch run: steps, copies and stalls where and when
// the milestones put them, in microseconds from the run's start. The expected stall split is
// worked out by hand from the milestones below (DESIGN.md's rule: the gap before a step is
// charged to the stage its batch was in), not by calling the analysis.
#include "report/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace stallscope {
namespace {

constexpr double kStart = 1000.0;  // the run's start on the clock; the trace counts from it
constexpr int kPid = 7;
constexpr double kTolerance = 1e-3;  // microseconds

// Seconds after the run's start as a clock time.
double At(double seconds) { return kStart + seconds; }

// Three batches of 64 (times in ms after the start):
//   batch 0: fetch 0-10, preprocessed 12, copy 12-13, step 13-43
//   batch 1: fetch 5-50, preprocessed 54, copy 54-56, step 57-87
//            the 14 ms gap 43-57: fetch 7 (43-50), preprocess 4 (50-54), transfer 2 (54-56),
//            other 1 (56-57)
//   batch 2: fetch 20-40, preprocessed 95, copy 95-99, step 100-130
//            the 13 ms gap 87-100: fetch 0 (done at 40), preprocess 8 (87-95), transfer 4
//            (95-99), other 1 (99-100)
RunRecord ThreeBatchRun() {
  RunRecord run;
  run.device = "emulated";
  run.start = kStart;
  run.end = At(0.131);
  run.batch_size = 64;
  run.warmup_steps = 0;
  struct Milestones {
    double fetch_start, fetch_done, preprocess_done, copy_start, copy_done, step_start, step_end;
  };
  const Milestones ms[] = {
      {0, 10, 12, 12, 13, 13, 43}, {5, 50, 54, 54, 56, 57, 87}, {20, 40, 95, 95, 99, 100, 130}};
  for (const Milestones& m : ms) {
    BatchRecord b;
    b.epoch = 0;
    b.samples = 64;
    b.fetch_start = At(m.fetch_start / 1e3);
    b.fetch_done = At(m.fetch_done / 1e3);
    b.preprocess_done = At(m.preprocess_done / 1e3);
    b.copy_start = At(m.copy_start / 1e3);
    b.copy_done = At(m.copy_done / 1e3);
    b.copy_seconds = (m.copy_done - m.copy_start) / 1e3;
    b.step_start = At(m.step_start / 1e3);
    b.step_end = At(m.step_end / 1e3);
    b.step_busy = 0.03;
    run.batches.push_back(b);
  }
  return run;
}

// The same run as recorded with PipelineOptions::trace: reads and preprocessing chunks.
RunRecord TracedRun() {
  RunRecord run = ThreeBatchRun();
  // Two reads in flight together on thread 0, a cache hit on thread 1, and a skipped sample
  // (end 0: no read recorded).
  run.reads = {{.start = At(0.001), .end = At(0.008), .sample = 11, .tier = -1, .thread = 0},
               {.start = At(0.002), .end = At(0.003), .sample = 12, .tier = -1, .thread = 0},
               {.start = At(0.006), .end = At(0.0065), .sample = 13, .tier = 0, .thread = 1},
               {.start = At(0.007), .end = 0, .sample = 14, .tier = -1, .thread = 0}};
  run.chunks = {{.start = At(0.050), .end = At(0.054), .batch = 1, .worker = 0, .samples = 64},
                {.start = At(0.041), .end = At(0.095), .batch = 2, .worker = 1, .samples = 64}};
  return run;
}

nlohmann::json Events(const RunRecord& run) {
  nlohmann::json events = nlohmann::json::array();
  AppendTraceEvents(events, run, "cold", kPid, {"memory", "disk"});
  return events;
}

// Track names by track id, from the thread_name metadata.
std::map<int, std::string> TrackNames(const nlohmann::json& events) {
  std::map<int, std::string> out;
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "thread_name") out[e["tid"]] = e["args"]["name"];
  }
  return out;
}

// The spans named `name`, in the order written.
std::vector<nlohmann::json> Spans(const nlohmann::json& events, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e["ph"] == "X" && e["name"] == name) out.push_back(e);
  }
  return out;
}

std::vector<nlohmann::json> SpansOfCategory(const nlohmann::json& events, const std::string& cat) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e["ph"] == "X" && e["cat"] == cat) out.push_back(e);
  }
  return out;
}

// The one span named `name`, on the track named `track`, from `ts` for `dur` (microseconds).
void ExpectSpan(const nlohmann::json& events, const std::string& name, const std::string& track,
                double ts, double dur) {
  SCOPED_TRACE(name);
  const std::vector<nlohmann::json> spans = Spans(events, name);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(TrackNames(events)[spans[0]["tid"].get<int>()], track);
  EXPECT_NEAR(spans[0]["ts"].get<double>(), ts, kTolerance);
  EXPECT_NEAR(spans[0]["dur"].get<double>(), dur, kTolerance);
}

TEST(Trace, StepsOnTheComputeStreamInMicrosecondsFromTheRunStart) {
  const nlohmann::json events = Events(ThreeBatchRun());
  ExpectSpan(events, "step 0", "compute stream", 13000, 30000);
  ExpectSpan(events, "step 1", "compute stream", 57000, 30000);
  ExpectSpan(events, "step 2", "compute stream", 100000, 30000);
}

TEST(Trace, CopiesOnTheCopyStream) {
  const nlohmann::json events = Events(ThreeBatchRun());
  ExpectSpan(events, "H2D 0", "copy stream", 12000, 1000);
  ExpectSpan(events, "H2D 1", "copy stream", 54000, 2000);
  ExpectSpan(events, "H2D 2", "copy stream", 95000, 4000);
}

TEST(Trace, TheStallBeforeAStepIsNamedByTheStageItIsChargedTo) {
  const nlohmann::json events = Events(ThreeBatchRun());
  struct Expected {
    int before_step;
    std::string stage;
    double ts, dur;
  };
  // From the milestones (see ThreeBatchRun), laid end to end from the previous step's end.
  const std::vector<Expected> expected = {
      {1, "fetch", 43000, 7000}, {1, "preprocess", 50000, 4000}, {1, "transfer", 54000, 2000},
      {1, "other", 56000, 1000}, {2, "preprocess", 87000, 8000}, {2, "transfer", 95000, 4000},
      {2, "other", 99000, 1000}};
  const std::vector<nlohmann::json> stalls = SpansOfCategory(events, "stall");
  ASSERT_EQ(stalls.size(), expected.size());  // none before step 0, no empty fetch before 2
  const std::map<int, std::string> tracks = TrackNames(events);
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    const nlohmann::json& s = stalls[i];
    EXPECT_EQ(s["name"], "stall: " + expected[i].stage);
    EXPECT_EQ(s["args"]["stage"], expected[i].stage);
    EXPECT_EQ(s["args"]["before_step"], expected[i].before_step);
    EXPECT_EQ(tracks.at(s["tid"].get<int>()), "compute stream");
    EXPECT_NEAR(s["ts"].get<double>(), expected[i].ts, kTolerance);
    EXPECT_NEAR(s["dur"].get<double>(), expected[i].dur, kTolerance);
  }
}

TEST(Trace, NoStallIsDrawnBeforeTheMeasuredWindow) {
  RunRecord run = ThreeBatchRun();
  run.warmup_steps = 1;  // step 0 is the warm-up; the window starts at step 1
  const std::vector<nlohmann::json> stalls = SpansOfCategory(Events(run), "stall");
  ASSERT_EQ(stalls.size(), 3u);
  for (const auto& s : stalls) EXPECT_EQ(s["args"]["before_step"], 2);
}

TEST(Trace, ThePidIsNamedAfterTheVariant) {
  const nlohmann::json events = Events(ThreeBatchRun());
  int named = 0;
  for (const auto& e : events) {
    EXPECT_EQ(e["pid"], kPid);
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], "stallscope cold");
      ++named;
    }
  }
  EXPECT_EQ(named, 1);
}

TEST(Trace, BatchesFetchedTogetherAreOnSeparateFetchLanes) {
  const nlohmann::json events = Events(ThreeBatchRun());
  const std::map<int, std::string> tracks = TrackNames(events);
  const std::vector<nlohmann::json> fetches = SpansOfCategory(events, "fetch");
  ASSERT_EQ(fetches.size(), 3u);
  EXPECT_EQ(fetches[1]["name"], "fetch batch 1");
  EXPECT_NEAR(fetches[1]["ts"].get<double>(), 5000, kTolerance);
  EXPECT_NEAR(fetches[1]["dur"].get<double>(), 45000, kTolerance);
  for (const auto& f : fetches) {
    EXPECT_EQ(tracks.at(f["tid"].get<int>()).rfind("fetch lane ", 0), 0u);
  }
  // Batch 1 (5-50 ms) overlaps both others; no two spans of one lane overlap.
  EXPECT_NE(fetches[0]["tid"], fetches[1]["tid"]);
  EXPECT_NE(fetches[1]["tid"], fetches[2]["tid"]);
  for (size_t a = 0; a < fetches.size(); ++a) {
    for (size_t b = a + 1; b < fetches.size(); ++b) {
      if (fetches[a]["tid"] != fetches[b]["tid"]) continue;
      const double a_end = fetches[a]["ts"].get<double>() + fetches[a]["dur"].get<double>();
      const double b_end = fetches[b]["ts"].get<double>() + fetches[b]["dur"].get<double>();
      EXPECT_TRUE(a_end <= fetches[b]["ts"].get<double>() ||
                  b_end <= fetches[a]["ts"].get<double>())
          << fetches[a]["name"] << " and " << fetches[b]["name"];
    }
  }
}

TEST(Trace, ReadsAndChunksOnlyWhenTheRunRecordedThem) {
  const nlohmann::json plain = Events(ThreeBatchRun());
  EXPECT_TRUE(SpansOfCategory(plain, "read").empty());
  EXPECT_TRUE(SpansOfCategory(plain, "preprocess").empty());

  const nlohmann::json events = Events(TracedRun());
  const std::map<int, std::string> tracks = TrackNames(events);
  const std::vector<nlohmann::json> reads = SpansOfCategory(events, "read");
  ASSERT_EQ(reads.size(), 3u);  // the skipped sample 14 has no read
  std::map<int, nlohmann::json> by_sample;
  for (const auto& r : reads) by_sample[r["args"]["sample"].get<int>()] = r;
  ASSERT_EQ(by_sample.count(11) + by_sample.count(12) + by_sample.count(13), 3u);
  EXPECT_EQ(by_sample[11]["name"], "read storage");
  EXPECT_EQ(by_sample[13]["name"], "read memory");  // tier 0 of {"memory", "disk"}
  EXPECT_EQ(by_sample[13]["args"]["tier"], "memory");
  EXPECT_NEAR(by_sample[11]["ts"].get<double>(), 1000, kTolerance);
  EXPECT_NEAR(by_sample[11]["dur"].get<double>(), 7000, kTolerance);
  // Reads in flight together on one thread are on separate lanes of that thread.
  EXPECT_NE(by_sample[11]["tid"], by_sample[12]["tid"]);
  EXPECT_EQ(tracks.at(by_sample[11]["tid"].get<int>()).rfind("reads: thread 0", 0), 0u);
  EXPECT_EQ(tracks.at(by_sample[12]["tid"].get<int>()).rfind("reads: thread 0", 0), 0u);
  EXPECT_EQ(tracks.at(by_sample[13]["tid"].get<int>()).rfind("reads: thread 1", 0), 0u);

  ExpectSpan(events, "preprocess batch 1", "worker 0", 50000, 4000);
  ExpectSpan(events, "preprocess batch 2", "worker 1", 41000, 54000);
}

TEST(Trace, TraceDocumentHoldsTheEventsInMilliseconds) {
  const nlohmann::json events = Events(ThreeBatchRun());
  const nlohmann::json doc = TraceDocument(events);
  EXPECT_EQ(doc["traceEvents"], events);
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
}

TEST(Trace, TwoVariantsAreTwoProcessesInOneTrace) {
  nlohmann::json events = nlohmann::json::array();
  AppendTraceEvents(events, ThreeBatchRun(), "cold", 1, {});
  AppendTraceEvents(events, ThreeBatchRun(), "cached", 2, {});
  std::map<int, std::string> processes;
  for (const auto& e : events) {
    if (e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
  }
  EXPECT_EQ(processes,
            (std::map<int, std::string>{{1, "stallscope cold"}, {2, "stallscope cached"}}));
  EXPECT_EQ(Spans(events, "step 2").size(), 2u);
}

}  // namespace
}  // namespace stallscope
