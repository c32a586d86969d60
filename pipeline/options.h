// The pipeline library's settings, one struct per scenario section it owns (scenarios/README.md
// documents every key; each field's default here is the key's only default):
//   loader.*  LoaderOptions  (its I/O keys are storage's IoOptions)
//   run.*     RunOptions
// PipelineOptions is what one Pipeline runs with: those two, the seed, and the run's own
// wiring (trace, observer).
//
// Thread-safety: plain values.
#ifndef STALLSCOPE_PIPELINE_OPTIONS_H_
#define STALLSCOPE_PIPELINE_OPTIONS_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/names.h"
#include "base/seed.h"
#include "storage/storage_options.h"

namespace stallscope {

// none: hand the raw bytes over; normalize: bytes → float32 in [0, 1]; jpeg-decode:
// libjpeg-turbo decode, crop, ImageNet normalization, CHW floats.
enum class PreprocessKind { kNone, kNormalize, kJpegDecode };
constexpr NameTable<PreprocessKind, 3> kPreprocessKindNames = {
    {{PreprocessKind::kNone, "none"},
     {PreprocessKind::kNormalize, "normalize"},
     {PreprocessKind::kJpegDecode, "jpeg-decode"}}};
inline const char* NameOf(PreprocessKind k) { return NameOf(kPreprocessKindNames, k); }

// Where `normalize` and `jpeg-decode` normalize: on the host's workers (float32 rows), or on
// the device, as DALI's GPU crop-mirror-normalize does: the workers hand over bytes
// (`normalize`: the raw bytes; `jpeg-decode`: the crop's HWC uint8 pixels, a quarter of the
// floats' bytes) and the device scales them as the first kernel of its step.
enum class NormalizeOn { kHost, kDevice };
constexpr NameTable<NormalizeOn, 2> kNormalizeOnNames = {
    {{NormalizeOn::kHost, "host"}, {NormalizeOn::kDevice, "device"}}};

// What a failed read does: retry (up to `retries` times, then fail), skip the sample, or fail.
enum class OnError { kRetry, kSkip, kFail };
constexpr NameTable<OnError, 3> kOnErrorNames = {
    {{OnError::kRetry, "retry"}, {OnError::kSkip, "skip"}, {OnError::kFail, "fail"}}};

struct PreprocessOptions {
  PreprocessKind kind = PreprocessKind::kNormalize;
  double cost = 0;            // seconds of extra real CPU work per sample (thread CPU time)
  uint32_t image_size = 224;  // jpeg-decode: output side in pixels (8 to 4096)
  NormalizeOn normalize_on = NormalizeOn::kHost;

  bool operator==(const PreprocessOptions&) const = default;
};

// Caps on counts with no sane use beyond them (scenarios/README.md), refused by the parser:
constexpr uint32_t kMaxBatchSize = (1u << 20) - 1;  // the simulator's token has 20 bits for it
constexpr uint32_t kMaxPrefetch = 4094;  // slots = prefetch + 1 < 4096 (12 bits of a token)
constexpr uint32_t kMaxWorkers = 1024;   // threads; far beyond any host's cores
constexpr uint32_t kMaxIoThreads = 256;  // each holds a ring and an eventfd
constexpr uint32_t kMaxIoDepth = 4096;   // 4 ring entries per file: within the kernel's 32768
constexpr uint32_t kMaxRetries = 100;    // backoff doubles to 1 s: 100 retries ≈ 100 s a read

struct LoaderOptions {
  uint32_t batch_size = 256;
  uint32_t prefetch = 4;  // batches prepared ahead of the device
  uint32_t workers = 2;   // preprocessing threads
  PreprocessOptions preprocess;
  OnError on_error = OnError::kRetry;
  uint32_t retries = 3;          // with on_error retry
  double retry_backoff = 0.010;  // seconds before the first retry; doubles, at most 1 s
  IoOptions io;                  // io_depth, io_threads, read_timeout

  // Retries a failed read gets: `retries` under on_error retry, else none.
  uint32_t retries_allowed() const { return on_error == OnError::kRetry ? retries : 0; }

  bool operator==(const LoaderOptions&) const = default;
};

struct RunOptions {
  uint32_t epochs = 3;
  uint32_t warmup_steps = 1;  // steps excluded from the measured window
  uint64_t max_steps = 0;     // 0 = whole epochs
  double time_limit = 0;      // seconds; the run stops there as at Ctrl-C (partial); 0 = none
  bool verify = true;         // check every delivered sample's content

  bool operator==(const RunOptions&) const = default;
};

// checkpoint.*: checkpoints during a run (pipeline/checkpointer.h takes them).
enum class CheckpointMode { kSync, kAsync };
constexpr NameTable<CheckpointMode, 2> kCheckpointModeNames = {
    {{CheckpointMode::kSync, "sync"}, {CheckpointMode::kAsync, "async"}}};
inline const char* NameOf(CheckpointMode m) { return NameOf(kCheckpointModeNames, m); }

// MLPerf Storage v2.0's checkpoint workloads: the whole checkpoint and the ranks that write it.
struct CheckpointPreset {
  const char* name;
  uint64_t bytes;
  uint32_t ranks;
};
constexpr CheckpointPreset kCheckpointPresets[] = {
    {"llama3-8b", 105'000'000'000ULL, 8},
    {"llama3-70b", 912'000'000'000ULL, 64},
    {"llama3-405b", 5'290'000'000'000ULL, 512},
    {"llama3-1t", 18'000'000'000'000ULL, 1024},
};

struct CheckpointOptions {
  uint64_t every = 0;   // steps between checkpoints; 0: by `interval`
  double interval = 0;  // seconds between checkpoints (when every is 0); both 0: none
  uint64_t bytes = 0;   // the job's checkpoint, all ranks together (size, or model's)
  std::string model;    // the MLPerf preset `bytes` came from; empty: size
  CheckpointMode mode = CheckpointMode::kSync;
  std::string path;          // a directory; empty: the scenario's simulated storage
  bool fsync = true;         // fdatasync each file (and the directory after the rename)
  bool direct = false;       // O_DIRECT
  uint32_t keep = 2;         // checkpoints kept per rank
  bool restore = false;      // read the newest checkpoint back before the first step
  uint64_t block = 1 << 20;  // bytes per write (and restore read)
  uint32_t io_depth = 8;     // writes in flight
  // simulate only: the write rate of `path`'s directory (bench-checkpoint measures it);
  // 0 = writes there take no time. `run` measures the directory itself.
  double bandwidth = 0;

  bool enabled() const { return every > 0 || interval > 0; }
  // One rank's share of a job of `ranks`: bytes / ranks, rounded up to 4096.
  uint64_t rank_bytes(uint32_t ranks) const {
    return (bytes / std::max<uint32_t>(ranks, 1) + 4095) / 4096 * 4096;
  }
  bool operator==(const CheckpointOptions&) const = default;
};

// When checkpoints fall: after every `every`-th step, or after the first step to end
// `interval` or more after the previous checkpoint (the first: after the first step's start).
// The pipeline and the simulator both ask it.
class CheckpointSchedule {
 public:
  explicit CheckpointSchedule(const CheckpointOptions& o)
      : every_(o.every), interval_(o.interval) {}
  void Start(double first_step_start) {
    last_ = first_step_start;
    started_ = true;
  }
  // A time-interval schedule whose interval has passed at `now` (a multi-rank job's vote at
  // a step's barrier: the ranks take the checkpoint after that step if any rank votes).
  bool IntervalPassed(double now) const {
    return by_interval() && started_ && now - last_ >= interval_;
  }
  bool by_interval() const { return every_ == 0 && interval_ > 0; }
  void Taken(double end) { last_ = end; }
  // After step `step` (0-based) ended at `end`.
  bool Due(uint64_t step, double end) {
    if (every_ > 0) return (step + 1) % every_ == 0;
    if (interval_ <= 0 || end - last_ < interval_) return false;
    last_ = end;
    return true;
  }

 private:
  uint64_t every_;
  double interval_;
  double last_ = 0;
  bool started_ = false;
};

class StepObserver;
class CheckpointStore;

// Synchronous steps across the ranks of a multi-rank run: the device thread calls Arrive()
// once per step, after the step's batch is on its device (or when this rank is stopping),
// with its flags, and it returns when every rank has arrived (the time inside is the `sync`
// stall) with every rank's flags or-ed: kStopping from any rank stops every rank before that
// step, so all ranks keep the same steps; kCheckpoint from any rank takes an interval
// checkpoint after that step on every rank, so all ranks checkpoint the same steps.
// Implemented over MPI in app/.
class StepSync {
 public:
  static constexpr uint32_t kStopping = 1, kCheckpoint = 2;
  virtual uint32_t Arrive(uint64_t step, uint32_t flags) = 0;

 protected:
  ~StepSync() = default;
};

// This loader's share of every epoch's order in a run of `ranks` ranks: positions
// rank, rank + ranks, rank + 2 × ranks, ... of the epoch's order, floor(samples / ranks) of
// them, the simulator's sharding (sim/rank_loop.cc). The remainder, the last
// samples mod ranks positions of each epoch's order, is read by no rank that epoch (the
// order changes every epoch, so every sample is read in some epoch).
struct RankShard {
  uint32_t rank = 0;
  uint32_t ranks = 1;

  uint64_t samples(uint64_t dataset_samples) const { return dataset_samples / ranks; }
  // The epoch-order position of this rank's `i`-th sample.
  uint64_t position(uint64_t i) const { return i * ranks + rank; }
};

struct PipelineOptions {
  uint64_t seed = kDefaultSeed;
  LoaderOptions loader;
  RunOptions run;
  bool trace = false;                // record every read and preprocessing chunk (for --trace)
  StepObserver* observer = nullptr;  // borrowed; called after every step
  RankShard shard;                   // one rank of one by default
  StepSync* step_sync = nullptr;     // borrowed; multi-rank runs only
  CheckpointOptions checkpoint;      // with a store: checkpoints during the run
  CheckpointStore* checkpoint_store = nullptr;  // borrowed
  uint64_t checkpoint_bytes = 0;                // this rank's share
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_OPTIONS_H_
