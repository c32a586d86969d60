// Analysis of a run's checkpoints: totals, the fetch stalls that fell during checkpoint
// writes, and the checkpoint part of the verdict.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "base/units.h"
#include "pipeline/analysis.h"

namespace stallscope {

void AnalyzeCheckpoints(VariantResult& v, const RunRecord& run, size_t w) {
  if (run.checkpoints.empty() && !run.restore.done) return;
  CheckpointResult c;
  c.restore = run.restore;
  c.error = run.checkpoint_error;
  std::vector<std::pair<double, double>> writes;
  for (const CheckpointSpan& s : run.checkpoints) {
    ++c.count;
    if (s.error == ECANCELED) {
      ++c.cut_short;  // the run stopped while it was written: not a failure of its own
    } else if (s.error != 0) {
      ++c.failed;
    } else {
      c.bytes += s.bytes;
    }
    c.waited_for_previous += s.waited_for_previous;
    c.seconds += s.write_end - s.write_start;
    c.device_wait_seconds += s.resumed - s.start;
    writes.emplace_back(s.write_start, s.write_end);
  }
  c.bytes_per_second = c.seconds > 0 ? c.bytes / c.seconds : 0;
  // Each measured step's fetch stall (what SplitStall charges to fetch), against the writes.
  const auto& b = run.batches;
  for (size_t k = w + 1; k < b.size(); ++k) {
    const double z = std::max(b[k - 1].step_end, b[k].step_start);
    const double a = std::max(b[k - 1].step_end, std::min(z, b[k].checkpoint_done));
    const double fetch_end = std::min(z, b[k].fetch_done);
    for (const auto& [ws, we] : writes) {
      c.fetch_stall_during_writes += std::max(0.0, std::min(fetch_end, we) - std::max(a, ws));
    }
  }
  const StageSeconds& st = v.stall;
  const bool async = !run.checkpoints.empty() &&
                     run.checkpoints.front().write_start >= run.checkpoints.front().resumed;
  if (v.gpu_idle_fraction >= 0.05 &&
      st.checkpoint > std::max({st.fetch, st.preprocess, st.transfer, st.sync})) {
    v.bottleneck_stage = "checkpoint";
    v.bottleneck_text = fmt::format(
        "checkpoint-bound: the device waited {} in the window for checkpoints ({} taken, {} "
        "each, written at {} per rank)",
        FormatDuration(st.checkpoint), c.count,
        FormatBytes(c.count ? static_cast<double>(run.checkpoints.front().bytes) : 0.0),
        FormatRate(c.bytes_per_second));
    if (!async) {
      v.bottleneck_text +=
          "; asynchronous checkpoints (checkpoint.mode: async) would hold the "
          "device only for the snapshot";
    }
  } else if (v.bottleneck_stage == "fetch" && st.fetch > 0 &&
             c.fetch_stall_during_writes >= 0.25 * st.fetch) {
    v.bottleneck_text +=
        fmt::format("; {:.0f}% of the fetch stalls fell while checkpoint writes shared the storage",
                    100 * c.fetch_stall_during_writes / st.fetch);
  }
  if (c.waited_for_previous > 0) {
    v.bottleneck_text += fmt::format(
        "; {} of {} asynchronous checkpoints waited for the previous one's write (a write takes "
        "longer than the time between checkpoints)",
        c.waited_for_previous, c.count);
  }
  if (c.failed > 0) {
    v.bottleneck_text +=
        fmt::format("; {} checkpoint write(s) failed and were skipped: {}", c.failed, c.error);
  }
  if (c.cut_short > 0) {
    v.bottleneck_text += fmt::format("; {} checkpoint write(s) cut short by the stop", c.cut_short);
  }
  v.checkpoints = c;
}

}  // namespace stallscope
