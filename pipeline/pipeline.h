// Pipeline: one run of the loader against a device, recorded step by step.
//
//   fetcher thread ── cache lookup (hit: copy) | miss: Storage::Submit ──┐
//                                     storage threads complete reads ────┤ batch fetched
//   worker threads (loader.workers) ── verify + preprocess, in chunks ───┤ batch ready
//   copy thread ── Device::CopyIn into the free input buffer, slot freed ┤ batch on device
//   device thread (the caller of Run) ── Device::Step ───────────────────┘
//
// Memory is allocated once, before the first read: prefetch + 1 staging slots, each holding
// one batch of raw bytes and (with normalize) its float rows. A slot moves free → fetching →
// fetched → ready → free (after the copy), DALI's free/ready discipline. The fetcher may work
// on batch b only while b <= (the batch the device is on) + prefetch, so prefetch 0 means no
// overlap at all between loading and the step.
//
// Every batch's milestones (fetch start/done, preprocess done, copy start/done, step
// start/end) are recorded; stall attribution and all reported numbers are derived from
// them afterwards (pipeline/analysis.h).
//
// Thread-safety: Run() is called once, from one thread. live() may be read from any thread
// while Run() is going.
#ifndef STALLSCOPE_PIPELINE_PIPELINE_H_
#define STALLSCOPE_PIPELINE_PIPELINE_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache.h"
#include "pipeline/device.h"
#include "pipeline/options.h"
#include "pipeline/run_plan.h"
#include "pipeline/sampler.h"
#include "storage/storage.h"

namespace stallscope {

struct BatchRecord;
class Checkpointer;

// Batches waiting at each stage, sampled after every step.
struct QueueDepths {
  uint32_t fetching = 0;       // slots whose reads are in flight
  uint32_t preprocessing = 0;  // fetched, waiting for or in the workers
  uint32_t ready = 0;          // preprocessed, waiting for the copy
};

// Told about every completed step, on the device thread (live metrics).
class StepObserver {
 public:
  // `previous_end` is when the step before ended (0 for the first step); `in_window` is
  // false for warm-up steps.
  virtual void OnStep(const BatchRecord& batch, double previous_end, bool in_window,
                      const QueueDepths& queues) = 0;

 protected:
  ~StepObserver() = default;
};

// The stall stages, in the order StageSeconds::parts() gives them (JSON, metrics, trace).
constexpr int kStallStages = 6;
constexpr const char* kStallStageNames[kStallStages] = {"fetch", "preprocess", "transfer",
                                                        "sync",  "checkpoint", "other"};

struct StageSeconds {
  double fetch = 0, preprocess = 0, transfer = 0, sync = 0, checkpoint = 0, other = 0;
  std::array<double, kStallStages> parts() const {
    return {fetch, preprocess, transfer, sync, checkpoint, other};
  }
  double charged() const {  // all but other
    return fetch + preprocess + transfer + sync + checkpoint;
  }
  // Adds the charged stages of `o` (not `other`, which is what idle leaves over).
  void AddCharged(const StageSeconds& o) {
    fetch += o.fetch;
    preprocess += o.preprocess;
    transfer += o.transfer;
    sync += o.sync;
    checkpoint += o.checkpoint;
  }
};

// One step's batch, from its first read to the end of its training step.
struct BatchRecord {
  uint32_t epoch = 0;
  uint32_t samples = 0;                         // planned
  uint32_t skipped = 0;                         // given up after errors (on_error: skip)
  uint32_t cache_lookups[kMaxCacheTiers] = {};  // samples that reached tier t
  uint32_t cache_hits[kMaxCacheTiers] = {};
  uint64_t cache_bytes[kMaxCacheTiers] = {};
  uint64_t storage_bytes = 0;
  uint32_t storage_reads = 0;
  double fetch_start = 0, fetch_done = 0, preprocess_done = 0;
  double copy_start = 0, copy_done = 0, copy_seconds = 0;
  double step_start = 0, step_end = 0, step_busy = 0;
  // Multi-rank: when the step's barrier let this rank go (0 in a one-rank run).
  double sync_done = 0;
  // When the checkpoint taken after the previous step let the device go on (0: none).
  double checkpoint_done = 0;
  // Simulated multi-rank steps (sim/): the gap before this step split per stage along each
  // rank's own milestones (its wait for the slowest rank as sync) and averaged over the ranks,
  // as a multi-rank run's job figures are; the milestones above are the slowest rank's. When
  // set, Analyze charges this instead of splitting the milestones.
  std::optional<StageSeconds> ranks_split;
  QueueDepths queues;  // sampled right after this step
};

// With PipelineOptions::trace: one sample's read, from submission (or the cache lookup) to
// completion, and the thread that completed it.
struct ReadSpan {
  double start = 0, end = 0;  // end 0: no read recorded (a skipped sample)
  uint64_t sample = 0;
  int tier = -1;   // cache tier that served it; -1 = storage
  int thread = 0;  // a small per-process id of the completing thread
};

// With PipelineOptions::trace: one preprocessing chunk on one worker.
struct ChunkSpan {
  double start = 0, end = 0;
  uint64_t batch = 0;
  int worker = 0;
  uint32_t samples = 0;
};

// One checkpoint (checkpoint.*), taken after step `step` ended.
struct CheckpointSpan {
  uint64_t step = 0;
  uint64_t bytes = 0;  // this rank's
  double start = 0;    // the device thread began it (the step had ended)
  double resumed = 0;  // the device could go on: sync, the write done; async, the snapshot taken
  double write_start = 0, write_end = 0;  // async: on the writer thread, beside the next steps
  bool waited_for_previous = false;       // async: the previous write had not finished yet
  int error = 0;                          // errno of a write that failed (loader.on_error skip)
};

// checkpoint.restore: the newest checkpoint read back before the first step.
struct RestoreRecord {
  bool done = false;
  uint64_t step = 0, bytes = 0;
  double seconds = 0;
};

struct RunRecord {
  std::string device;
  std::vector<BatchRecord> batches;
  uint64_t batches_per_epoch = 0;
  double start = 0, end = 0;       // wall span of the run
  double worker_busy_seconds = 0;  // sum over workers of time spent preprocessing
  bool preprocess_stage = true;    // false when there was nothing to do (none, no verify)
  uint64_t samples_verified = 0;
  uint64_t integrity_errors = 0;
  uint64_t read_errors = 0;  // failed attempts, including those retried
  std::vector<uint64_t> skipped_samples;
  std::vector<ReadSpan> reads;    // with trace: batch b's at [b * batch_size, ...)
  std::vector<ChunkSpan> chunks;  // with trace
  uint32_t batch_size = 0;
  uint32_t warmup_steps = 0;
  std::vector<TierStats> cache;
  // Each tier's eviction count when each epoch's first batch started, and at the end.
  std::vector<std::vector<uint64_t>> tier_evictions;
  DeviceReport device_report;
  std::vector<CheckpointSpan> checkpoints;
  RestoreRecord restore;
  std::string checkpoint_error;  // the first failed checkpoint write's message
  bool partial = false;  // stopped early by RequestStop(): `batches` holds the completed steps
  bool time_limit_reached = false;  // ... by run.time_limit
  bool failed = false;
  std::string error;
};

// Counters for a progress display; updated as the run goes.
struct LiveCounters {
  std::atomic<uint32_t> epoch{0};
  std::atomic<uint64_t> steps{0};
  std::atomic<uint64_t> samples{0};
  std::atomic<double> busy_seconds{0};  // summed over completed steps
  std::atomic<double> first_step_start{0};
  std::atomic<double> last_step_end{0};
};

class Pipeline final : private ReadCallback {
 public:
  // Storage, cache and device are borrowed and must outlive the Pipeline.
  // Throws BadInput for options no run can have (MakeRunPlan, too many cache tiers).
  Pipeline(const PipelineOptions& options, Storage& storage, Cache& cache, Device& device);

  // The plan a Pipeline with these options runs over `storage` (what the constructor uses).
  static RunPlan PlanFor(const PipelineOptions& options, const Storage& storage);
  const RunPlan& plan() const { return plan_; }
  ~Pipeline();

  // checkpoint.restore reads checkpoint `step` (the one every rank of a multi-rank job holds)
  // rather than this rank's newest. Before Run().
  void RestoreStep(uint64_t step) { restore_step_ = step; }
  RunRecord Run();
  // Stops a Run() in progress soon (Ctrl-C): the step in flight finishes, nothing new
  // starts, reads in flight complete, and Run() returns the completed steps marked partial.
  // Safe from any thread.
  void RequestStop();
  const LiveCounters& live() const { return live_; }
  uint64_t total_steps() const { return plan_.total_batches; }
  // Bytes of staging memory allocated up front (for the start-up banner).
  uint64_t staging_bytes() const;

 private:
  struct Slot;

  void ResetForRun();
  void DeviceLoop();
  bool StepDone(uint64_t b, const StepTiming& t, double& previous_end);
  void FinishRecord(RunRecord& rec);
  void FetcherLoop();
  void WorkerLoop(int worker);
  void CopyLoop();
  void StartBatch(uint64_t batch, Slot& slot, const std::vector<uint64_t>& order);
  void OnReadComplete(const ReadRequest& request, int64_t result) override;
  void FetchDone(Slot& slot);
  void SnapshotEvictions();
  // Batches at each stage after step `step` (approximate: a batch in a worker counts as
  // fetching). Takes mu_.
  QueueDepths SampleQueues(uint64_t step);
  void MarkReady(Slot& slot);
  void Fail(const std::string& message);
  DeviceBatch MakeDeviceBatch(const Slot& slot) const;
  std::byte* CopySource(const Slot& slot) const;
  void ScheduleRetry(const ReadRequest& request, uint32_t attempt);
  void StopAll();  // every stage winds down: stop_, stopping_, every condition variable
  void RetryLoop();

  // Constant after construction.
  const PipelineOptions options_;
  Storage& storage_;
  Cache& cache_;
  Device& device_;
  const int buffers_;  // device input buffers: batch b goes to b % buffers_
  const Sampler sampler_;
  const RunPlan plan_;
  std::vector<std::unique_ptr<Slot>> slots_;

  std::mutex mu_;
  std::condition_variable fetch_cv_;   // slot freed, device advanced, or stop
  std::condition_variable worker_cv_;  // batch fetched, or stop
  std::condition_variable copy_cv_;    // batch ready, device advanced, or stop
  std::condition_variable device_cv_;  // batch copied, or stop
  // Guarded by mu_.
  std::vector<int> free_slots_;
  std::deque<int> fetched_;         // slots waiting for the workers, in batch order
  std::vector<int> slot_of_batch_;  // -1 until the fetcher assigns one
  std::vector<uint8_t> ready_;      // per batch: preprocessed
  std::vector<uint8_t> copied_;     // per batch: on the device
  uint64_t device_batch_ = 0;       // the batch the device is on or waiting for
  uint64_t fetches_done_ = 0;
  bool stop_ = false;
  std::string error_;

  std::vector<BatchRecord> records_;  // each field written by the stage that owns it
  std::atomic<bool> failed_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> interrupted_{false};
  std::mutex limit_mu_;
  std::condition_variable limit_cv_;  // the run is over (the time limit's timer ends)
  bool run_over_ = false;             // guarded by limit_mu_
  std::atomic<bool> time_limit_reached_{false};
  uint64_t steps_done_ = 0;  // device thread  // set with stop_: retries stop waiting out backoffs
  // Retries waiting out their backoff, a min-heap on `due` (RetryLoop's thread sends them).
  struct Retry {
    double due;
    ReadRequest request;
  };
  struct RetryLater {
    bool operator()(const Retry& a, const Retry& b) const { return a.due > b.due; }
  };
  std::mutex retry_mu_;
  std::condition_variable retry_cv_;
  std::vector<Retry> retries_;  // guarded by retry_mu_
  bool retry_stop_ = false;     // guarded by retry_mu_
  std::atomic<uint64_t> reads_outstanding_{0};
  std::atomic<uint64_t> verified_{0}, integrity_errors_{0}, read_errors_{0};
  std::vector<double> worker_busy_;   // per worker, written by that worker
  std::vector<ReadSpan> read_spans_;  // with trace; batch b's slice written by its fetch
  std::vector<std::vector<ChunkSpan>> chunk_spans_;    // with trace; per worker
  std::vector<uint64_t> skipped_;                      // guarded by mu_
  std::vector<std::vector<uint64_t>> tier_evictions_;  // fetcher thread, then Run()
  LiveCounters live_;
  std::unique_ptr<Checkpointer> checkpointer_;  // with options_.checkpoint_store
  std::optional<uint64_t> restore_step_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_PIPELINE_H_
