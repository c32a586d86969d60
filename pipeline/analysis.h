// Analysis: from a RunRecord's per-batch milestones to the numbers DESIGN.md defines.
//
//   window      = start of step `warmup_steps` .. end of the last step
//   idle        = 1 - busy / window;  AU = sum of step compute times / window
//   stall       = for each step after the first in the window, the gap between the end of
//                 the previous step and the start of this one, charged to the stage batch k
//                 was in during the gap: fetch (until all its samples were read),
//                 preprocess (until all were preprocessed), transfer (until the copy to the
//                 device finished); the rest of the gap (step-launch delay) is `other`.
//   capacities  = each stage's rate while it was busy: fetch = samples / union of fetch
//                 intervals, preprocess = samples / worker-busy-seconds × workers, transfer =
//                 samples / copy seconds, gpu = batch / step time.
//   verdict     = the stage that limits the GPU (see Verdict() in analysis.cc for the rule).
//
// Thread-safety: pure functions over their arguments.
#ifndef STALLSCOPE_PIPELINE_ANALYSIS_H_
#define STALLSCOPE_PIPELINE_ANALYSIS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace stallscope {

struct TierEpoch {
  uint64_t lookups = 0, hits = 0, bytes = 0, evictions = 0;
  double hit_ratio = 0;
};

// The gap before a step, from the end of the previous step to this step's start, split along
// the batch's milestones: fetch (until fetch_done), preprocess (until preprocess_done),
// transfer (until copy_done), sync (multi-rank: until the step's barrier let it go,
// sync_done), and the rest as other.
StageSeconds SplitStall(double previous_end, const BatchRecord& r);

// The q-quantile (0..1) of `values` by nearest rank; 0 for none.
double Quantile(std::vector<double> values, double q);

struct EpochResult {
  uint32_t epoch = 0;
  std::vector<TierEpoch> tiers;  // in cache.tiers order
  double gpu_idle_fraction = 0;
  double cache_hit_ratio = 0;
  double samples_per_second = 0;
  double window_seconds = 0;
  StageSeconds stall;  // the epoch's idle split by stage, like VariantResult::stall
};

struct TierResult {
  std::string name;
  std::string policy;
  uint64_t hits = 0, misses = 0, evictions = 0;
  double hit_ratio = 0;
  uint64_t bytes = 0;  // bytes served from the tier
  uint64_t bytes_held = 0, capacity = 0, write_drops = 0, bad_entries = 0;
  uint64_t entries_at_start = 0;  // disk: entries found on disk at start (a warm start)
};

// One slice of the measured window (the window is cut into equal slices).
struct TimelinePoint {
  double t = 0;            // seconds from the window's start to the slice's middle
  double utilization = 0;  // busy fraction of the slice
  double queue_ready = 0, queue_preprocessing = 0, queue_fetching = 0;  // mean batches
};

// One rank of a multi-rank run, as rank 0 reports it (VariantResult::ranks).
struct RankResult {
  uint32_t rank = 0;
  uint32_t node = 0;  // rank / cluster.gpus_per_node
  double gpu_idle_fraction = 0;
  double au = 0;
  double window_seconds = 0;
  double samples_per_second = 0;
  double bytes_per_second = 0;  // this rank's reads; the job's is their sum
  StageSeconds stall_seconds;
  double cache_hit_ratio = 0;
  uint64_t samples_delivered = 0, samples_verified = 0, integrity_errors = 0, samples_skipped = 0;
  uint64_t read_errors = 0;
  std::string bottleneck_stage, bottleneck_text;  // this rank's own verdict
  double allreduce_seconds = 0;  // CUDA data-parallel: its gradient all-reduces on the GPU
  int64_t restored_step = -1;    // checkpoint.restore: the step it read back; -1: none
};

// checkpoint.*: what the run's checkpoints cost (pipeline/checkpointer.h).
struct CheckpointResult {
  std::string mode;                  // sync | async
  std::string target;                // the store's description
  uint64_t count = 0;                // checkpoints taken (this rank)
  uint64_t bytes = 0;                // written (this rank)
  uint64_t failed = 0;               // writes given up (loader.on_error skip)
  uint64_t cut_short = 0;            // writes the run's stop ended (Ctrl-C, run.time_limit)
  uint64_t waited_for_previous = 0;  // async: the previous write was still going
  double seconds = 0;                // the writes' own time, summed
  double bytes_per_second = 0;       // bytes / seconds
  double device_wait_seconds = 0;    // the device waited (sync: the writes; async: snapshots)
  // Fetch stalls in the measured window that fell while a checkpoint write was going.
  double fetch_stall_during_writes = 0;
  std::string error;  // the first failure's message
  RestoreRecord restore;
};

struct VariantResult {
  std::string name;
  double gpu_idle_fraction = 0;
  double au = 0;
  double window_seconds = 0;
  double wall_seconds = 0;
  double busy_seconds = 0;
  double samples_per_second = 0;
  double bytes_per_second = 0;  // bytes read (storage + cache tiers) per wall second
  uint64_t bytes_storage = 0;
  std::vector<std::pair<std::string, uint64_t>> bytes_by_tier;  // memory, disk
  StageSeconds stall;
  std::string bottleneck_stage;  // fetch | preprocess | transfer | gpu
  std::string bottleneck_text;
  // Samples per second; nullopt when a stage did no work (e.g. no preprocessing).
  std::optional<double> capacity_fetch, capacity_preprocess, capacity_transfer;
  double capacity_gpu = 0;
  double fetch_batches_in_flight = 0;  // mean number of batches being fetched while any was
  std::vector<TierResult> cache;
  double cache_hit_ratio = 0;  // over all tiers
  uint64_t samples_delivered = 0, samples_verified = 0, integrity_errors = 0, samples_skipped = 0;
  uint64_t read_errors = 0;
  std::vector<uint64_t> skipped_samples;
  // Dataset entries the listing skipped as not samples (Storage::listing_skips): how many, and
  // the first few named.
  uint64_t entries_skipped = 0;
  std::vector<std::string> entries_skipped_first;
  double step_wait_p50 = 0, step_wait_p99 = 0;
  uint64_t steps = 0;
  std::vector<EpochResult> epochs;
  std::vector<TimelinePoint> timeline;  // 10 to kTimelinePoints slices of the window
  std::string device;
  // A real GPU's own measurements (empty busy_source on the emulated device). busy_seconds
  // above is then CUPTI's union of kernel intervals; this is the CUDA-event cross-check.
  DeviceReport gpu;
  bool partial = false;             // interrupted (Ctrl-C): measured over the steps that completed
  bool time_limit_reached = false;  // ... by run.time_limit, not a signal
  double event_busy_fraction = 0;   // Σ event-timed step busy in the window / window
  double loss_first = 0, loss_last = 0;         // mean loss of the first and last 10 steps
  uint32_t gpus = 1;                            // accelerators (cluster.nodes × gpus_per_node)
  std::optional<double> gpu_hour_cost;          // cost.gpu_hour, USD
  std::vector<RankResult> ranks;                // multi-rank runs: every rank, in rank order
  std::optional<CheckpointResult> checkpoints;  // with checkpoint.*
};

// The checkpoints' part of `v` from the record (pipeline/analysis_checkpoint.cc), and the
// verdict when the device waited for checkpoints more than for any stage of the loader, or
// when checkpoint writes slowed the loader's reads.
void AnalyzeCheckpoints(VariantResult& v, const RunRecord& run, size_t warmup);

// This rank's part of a multi-rank run.
RankResult RankResultOf(const VariantResult& v, uint32_t rank, uint32_t node);

// Rank 0's result `v` becomes the job's (DESIGN.md): idle, AU, stalls and rates are the
// means (rates the sums) over `ranks`, counts the sums, `gpus` the number of ranks; the
// verdict names the straggler when waiting for the slowest rank (`sync`) is the largest
// stall: the rank the others waited for (the one that waited least) and its own verdict.
// Epochs, timeline and cache tiers stay rank 0's.
void CombineRanks(VariantResult& v, std::vector<RankResult> ranks);

// The job's verdict when waiting for the slowest rank (`sync`, v.stall) is the largest stall
// and the job idles >= 5%: "sync-bound: ranks wait … for the slowest rank, rank K …", K the
// rank that waited least of `rank_sync` (each rank's sync seconds) and `why(K)` what held it
// up. Returns whether it set the verdict. CombineRanks (real runs) and the simulator use it.
bool NameStraggler(VariantResult& v, const std::vector<double>& rank_sync,
                   const std::function<std::string(size_t)>& why);
// What a rank's own stalls (fetch, preprocess, transfer) were mostly: "preprocess-stalled
// 3.20 s (waiting for preprocessing)".
std::string OwnStallText(const StageSeconds& s);

// Idle time in money (cost.gpu_hour): what the idle fraction costs per 1,000 GPU-hours and
// per day on `gpus` accelerators.
struct IdleCost {
  double per_1000_gpu_hours = 0;
  double per_day = 0;
};
inline IdleCost IdleCostOf(const VariantResult& v) {
  const double rate = v.gpu_hour_cost.value_or(0);
  return {v.gpu_idle_fraction * 1000 * rate, v.gpu_idle_fraction * v.gpus * 24 * rate};
}

constexpr int kTimelinePoints = 100;

struct AnalysisInputs {
  uint32_t warmup_steps = 1;
  uint32_t batch_size = 1;
  uint32_t workers = 1;
  uint32_t prefetch = 0;
  double nominal_step_seconds = 0;  // the device's busy time per step when fed at once
  bool have_cache = false;
  // The record is a simulated job's: its stall split is the mean over several ranks, so its
  // sync is no one rank's wait and the verdict judges the stages (NameStraggler names a rank).
  bool job_of_ranks = false;
};

// Throws std::invalid_argument when the run has no step after the warm-up.
VariantResult Analyze(const std::string& name, const RunRecord& run, const AnalysisInputs& in);

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_ANALYSIS_H_
