#include "report/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>

#include "pipeline/analysis.h"

namespace stallscope {
namespace {

// Track ids: fixed tracks first, then families of lanes.
constexpr int kComputeTid = 1;
constexpr int kCopyTid = 2;
constexpr int kCheckpointTid = 3;
constexpr int kWorkerTid = 100;
constexpr int kFetchTid = 1000;
constexpr int kReadTid = 10000;  // + 1000 * thread + lane

// Greedy interval partitioning: the fewest lanes such that no two intervals of one lane
// overlap. Returns each interval's lane.
std::vector<int> AssignLanes(const std::vector<std::pair<double, double>>& spans) {
  std::vector<size_t> order(spans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return spans[a].first < spans[b].first; });
  using Free = std::pair<double, int>;  // (lane free from, lane)
  std::priority_queue<Free, std::vector<Free>, std::greater<>> lanes;
  std::vector<int> lane(spans.size(), 0);
  int next = 0;
  for (size_t i : order) {
    if (!lanes.empty() && lanes.top().first <= spans[i].first) {
      lane[i] = lanes.top().second;
      lanes.pop();
    } else {
      lane[i] = next++;
    }
    lanes.push({spans[i].second, lane[i]});
  }
  return lane;
}

}  // namespace

void AppendTraceEvents(nlohmann::json& events, const RunRecord& run, const std::string& variant,
                       int pid, const std::vector<std::string>& tier_names,
                       const std::string& rank) {
  const double t0 = run.start;
  auto us = [t0](double t) { return (t - t0) * 1e6; };
  std::map<int, std::string> threads;
  auto span = [&](int tid, const std::string& name, const char* cat, double start, double end,
                  nlohmann::json args) {
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", tid},
                      {"name", name},
                      {"cat", cat},
                      {"ts", us(start)},
                      {"dur", std::max(0.0, (end - start) * 1e6)},
                      {"args", std::move(args)}});
  };
  events.push_back(
      {{"ph", "M"},
       {"pid", pid},
       {"name", "process_name"},
       {"args", {{"name", "stallscope " + variant + (rank.empty() ? "" : " rank " + rank)}}}});

  const auto& b = run.batches;
  threads[kComputeTid] = "compute stream";
  threads[kCopyTid] = "copy stream";
  for (size_t k = 0; k < b.size(); ++k) {
    span(kComputeTid, fmt::format("step {}", k), "step", b[k].step_start, b[k].step_end,
         {{"epoch", b[k].epoch}, {"samples", b[k].samples}, {"busy_s", b[k].step_busy}});
    span(kCopyTid, fmt::format("H2D {}", k), "transfer", b[k].copy_start, b[k].copy_done, {});
    if (k <= run.warmup_steps) continue;
    // The stall before step k, split as the analysis splits it, laid end to end in the order
    // they happen: the checkpoint after the previous step first.
    const auto lengths = SplitStall(b[k - 1].step_end, b[k]).parts();
    const auto& stages = kStallStageNames;
    constexpr int kOrder[kStallStages] = {4, 0, 1, 2, 3, 5};
    static_assert(kStallStages == 6, "kOrder lists every stage once");
    double from = b[k - 1].step_end;
    for (int s : kOrder) {
      const double to = from + lengths[s];
      if (to > from) {
        span(kComputeTid, std::string("stall: ") + stages[s], "stall", from, to,
             {{"stage", stages[s]}, {"before_step", k}});
      }
      from = to;
    }
  }
  // Checkpoints: the device's wait, and (async) the write beside the next steps.
  for (const CheckpointSpan& c : run.checkpoints) {
    threads[kCheckpointTid] = "checkpoints";
    span(kCheckpointTid, fmt::format("checkpoint after step {}", c.step), "checkpoint", c.start,
         c.resumed, {{"bytes", c.bytes}, {"error", c.error}});
    if (c.write_start >= c.resumed) {
      threads[kCheckpointTid + 1] = "checkpoint writes";
      span(kCheckpointTid + 1, fmt::format("write checkpoint {}", c.step), "checkpoint",
           c.write_start, c.write_end,
           {{"bytes", c.bytes}, {"waited_for_previous", c.waited_for_previous}});
    }
  }
  // Fetch lanes.
  std::vector<std::pair<double, double>> fetches;
  for (const BatchRecord& r : b) fetches.emplace_back(r.fetch_start, r.fetch_done);
  const std::vector<int> fetch_lane = AssignLanes(fetches);
  for (size_t k = 0; k < b.size(); ++k) {
    threads[kFetchTid + fetch_lane[k]] = fmt::format("fetch lane {}", fetch_lane[k]);
    span(kFetchTid + fetch_lane[k], fmt::format("fetch batch {}", k), "fetch", b[k].fetch_start,
         b[k].fetch_done,
         {{"storage_reads", b[k].storage_reads}, {"storage_bytes", b[k].storage_bytes}});
  }
  // Workers.
  for (const ChunkSpan& c : run.chunks) {
    threads[kWorkerTid + c.worker] = fmt::format("worker {}", c.worker);
    span(kWorkerTid + c.worker, fmt::format("preprocess batch {}", c.batch), "preprocess", c.start,
         c.end, {{"samples", c.samples}});
  }
  // Reads, per completing thread, in lanes.
  std::map<int, std::vector<const ReadSpan*>> by_thread;
  for (const ReadSpan& r : run.reads) {
    if (r.end > 0) by_thread[r.thread].push_back(&r);
  }
  for (const auto& [thread, reads] : by_thread) {
    std::vector<std::pair<double, double>> iv;
    for (const ReadSpan* r : reads) iv.emplace_back(r->start, r->end);
    const std::vector<int> lane = AssignLanes(iv);
    for (size_t i = 0; i < reads.size(); ++i) {
      const int tid = kReadTid + 1000 * thread + lane[i];
      threads[tid] = fmt::format("reads: thread {} lane {}", thread, lane[i]);
      const ReadSpan& r = *reads[i];
      const std::string tier =
          r.tier < 0
              ? "storage"
              : (static_cast<size_t>(r.tier) < tier_names.size() ? tier_names[r.tier] : "tier");
      span(tid, "read " + tier, "read", r.start, r.end, {{"sample", r.sample}, {"tier", tier}});
    }
  }
  for (const auto& [tid, name] : threads) {
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"name", "thread_name"},
                      {"args", {{"name", name}}}});
  }
}

nlohmann::json TraceDocument(nlohmann::json events) {
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace stallscope
