// Runner: a resolved Scenario → storage, cache and pipeline → one VariantResult.
//
// Errors in the set-up (a scenario this build cannot run, a bad dataset directory) throw
// BadInput or the storage/cache errors, all reported as exit code 2 with nothing run; a
// run that fails part-way (a read error beyond loader.retries) throws RunFailed, exit code 1.
//
// Thread-safety: RunVariant() is reentrant; the hooks are called on the calling thread.
#ifndef STALLSCOPE_APP_RUNNER_H_
#define STALLSCOPE_APP_RUNNER_H_

#include <functional>
#include <memory>
#include <stdexcept>

#include "base/errors.h"
#include "config/scenario.h"
#include "pipeline/analysis.h"
#include "pipeline/device.h"
#include "pipeline/pipeline.h"
#include "storage/directory_storage.h"
#include "storage/storage.h"
#include "storage/storage_model.h"

namespace stallscope {

struct RunHooks {
  bool quiet = false;
  // Called once the pipeline is built, before the first read (banner, progress display).
  std::function<void(const Scenario&, const Storage&, const Cache&, Pipeline&)> on_start;
  // Called when the run is over, before analysis.
  std::function<void()> on_finish;
  // Record every read and preprocessing chunk, and hand the run's record to on_record
  // (for --trace).
  bool trace = false;
  // Told about every step (live metrics); borrowed.
  StepObserver* observer = nullptr;
  std::function<void(const RunRecord&)> on_record;
  // Multi-rank runs: this rank's share of the dataset, and the per-step barrier (borrowed).
  RankShard shard;
  StepSync* step_sync = nullptr;
  uint32_t ranks_on_host = 1;  // they share this host's memory (the start-up budget)
  // Called once everything is set up, right before the first read (multi-rank runs agree
  // there that every rank is ready).
  std::function<void()> before_run;
  // Multi-rank runs with checkpoint.restore, right after before_run, on every rank: this
  // rank's complete checkpoint steps in, the step every rank restores out (collective).
  std::function<uint64_t(const std::vector<uint64_t>&)> agree_restore;
};

// Throws BadInput for scenario features this build does not run yet, and for a cluster
// whose size is not the `ranks` this run was launched with (cache set-up problems throw
// CacheError, which also means exit code 2).
void CheckRunnable(const Scenario& scenario, uint32_t ranks = 1);

// `shared`: simulated storage takes its budget from it (the other ranks of this host share it).
std::unique_ptr<Storage> MakeStorage(const Scenario& scenario, bool quiet,
                                     SharedStorageBudget* shared = nullptr);
// The scenario's directory dataset as DirectoryStorage's options.
DirectoryStorageOptions DirectoryOptionsOf(const Scenario& scenario, bool quiet);

VariantResult RunVariant(const Scenario& scenario, Storage& storage, Device& device,
                         const RunHooks& hooks);

// For the banners: "checkpoint: sync, 128.0 MiB a rank every 40 steps → directory /ckpt";
// empty without checkpoints.
std::string DescribeCheckpoints(const Scenario& scenario, uint32_t ranks);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_RUNNER_H_
