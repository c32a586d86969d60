// The start-up budget of a real run: the memory it will hold (staging slots, raw and
// preprocessed, and RAM cache tiers) against what this host gives (MemAvailable, and the
// cgroup's memory.max less memory.current where one is set), checked after the dataset is
// listed and before the cache, the staging slots or any thread exist. A run that cannot fit is
// refused with one message naming the key, the need and what is available (exit 2), instead
// of an abort or the kernel's OOM kill part-way. Counts with no sane use (workers, I/O
// threads, prefetch, retries) are capped by the parser (pipeline/options.h).
//
// Thread-safety: pure functions, but ReadHostMemory() reads /proc and /sys.
#ifndef STALLSCOPE_APP_BUDGET_H_
#define STALLSCOPE_APP_BUDGET_H_

#include <cstdint>
#include <optional>

#include "config/scenario.h"
#include "pipeline/run_plan.h"

namespace stallscope {

// Bytes of memory this process may still take: MemAvailable, lowered to the cgroup's room
// when a cgroup limit is set. nullopt when neither can be read (the check is then skipped).
std::optional<uint64_t> ReadHostMemory();

// What one memory tier can come to hold in this run: its capacity, or all the samples the run
// reads (min(dataset, steps × batch) of at most `max_sample_bytes`, block-rounded as the tier
// stores them) when that is less — a 32 GiB tier for 2 GiB of reads holds 2 GiB.
uint64_t MemoryTierNeed(const TierOptions& tier, const RunPlan& plan, uint64_t num_samples,
                        uint64_t max_sample_bytes);

// Host memory a run keeps per step: the pipeline's record of the step and its timing, and
// the analysis's per-step rows (pipeline/pipeline.h, pipeline/analysis.h).
uint64_t StepRecordBytes();

struct RunBudget {
  uint64_t staging_bytes = 0;   // slots × batch × (raw row + preprocessed row)
  uint64_t ram_tier_bytes = 0;  // memory tiers not allowed to overcommit (MemoryTierNeed)
  uint64_t step_bytes = 0;      // total steps × StepRecordBytes()
};
RunBudget BudgetOf(const Scenario& scenario, const RunPlan& plan, uint64_t num_samples,
                   uint64_t max_sample_bytes);

// Throws BadInput when the run will not fit in `available` bytes, naming the key.
// `ranks_on_host`: a multi-rank run's ranks on this host, which start alike and see the same
// memory free: each may take its share of it.
// `checkpoint_bytes`: host memory the checkpoints hold (CheckpointHostBytes).
void CheckBudget(const Scenario& scenario, const RunPlan& plan, uint64_t num_samples,
                 uint64_t max_sample_bytes, uint64_t available, uint32_t ranks_on_host = 1,
                 uint64_t checkpoint_bytes = 0);

// Host memory a synthetic dataset (storage.kind simulated or memory) takes before the run
// starts, saturating at UINT64_MAX: each sample's size (8 B); the sampler's epoch order, the
// fetcher's copy and the one being shuffled (8 B each); with a belady tier, each epoch's
// inverse order (4 B per sample per epoch); with memory storage, every sample's offset (8 B)
// and bytes. 0 for a directory (its listing is what the directory holds).
uint64_t DatasetHostBytes(const Scenario& scenario);
// Throws BadInput naming dataset.samples (or dataset.sample_size, for memory storage) when
// DatasetHostBytes() exceeds `available`. Called before the storage is made.
void CheckDatasetFits(const Scenario& scenario, uint64_t available);

// Files a run may hold open at once: the dataset reader's (loader.io_depth per I/O thread, for
// a directory), each disk tier's reader (loader.io_depth) and writer, a checkpoint, and 64
// for the process itself (libraries, sockets, logs).
uint64_t OpenFilesNeed(const Scenario& scenario);
// Raises this process's soft RLIMIT_NOFILE (ulimit -n) to OpenFilesNeed() when it is lower,
// up to the hard limit; throws BadInput naming loader.io_depth when the hard limit is lower
// still. (The ring-size limit needs no check: 4 entries per file in flight, io_depth ≤ 4096,
// within the kernel's 32768.)
void CheckOpenFiles(const Scenario& scenario);

// Host memory one rank's checkpoints hold: the emulated device's state (its "weights", in
// host memory) and the snapshot buffer (async mode, a GPU's state, or a restore), each
// `rank_bytes` rounded up to 4 KiB.
uint64_t CheckpointHostBytes(const CheckpointOptions& checkpoint, uint64_t rank_bytes,
                             bool state_on_host);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_BUDGET_H_
