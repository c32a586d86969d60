// Runner: a resolved Scenario → storage, cache and pipeline → one VariantResult.
//
// Errors in the set-up (a scenario this build cannot run, a bad dataset directory) throw
// SetupError or the storage/cache errors, all reported as exit code 2 with nothing run; a
// run that fails part-way (a read error beyond loader.retries) throws RunError, exit code 1.
//
// Thread-safety: RunVariant() is reentrant; the hooks are called on the calling thread.
#ifndef STALLSCOPE_PIPELINE_RUNNER_H_
#define STALLSCOPE_PIPELINE_RUNNER_H_

#include <functional>
#include <memory>
#include <stdexcept>

#include "pipeline/analysis.h"
#include "pipeline/device.h"
#include "pipeline/pipeline.h"
#include "pipeline/scenario.h"
#include "storage/storage.h"
#include "storage/storage_model.h"

namespace stallscope {

class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
  std::function<void(const RunRecord&, const std::vector<std::string>& tier_names)> on_record;
};

// Throws SetupError for storage.faults on a storage that cannot inject them, or rates that
// add up to more than 1 (run and simulate alike).
void CheckFaults(const Scenario& scenario);

// Throws SetupError for scenario features this build does not run yet.
// (Cache set-up problems throw CacheError, which also means exit code 2.)
void CheckRunnable(const Scenario& scenario);

std::unique_ptr<Storage> MakeStorage(const Scenario& scenario, bool quiet);
// The storage.* keys as the storage model's options (SimulatedStorage and the simulator).
SimulatedStorageOptions StorageModelOptions(const Scenario& scenario);
PipelineOptions ToPipelineOptions(const Scenario& scenario);

VariantResult RunVariant(const Scenario& scenario, Storage& storage, Device& device,
                         const RunHooks& hooks);

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_RUNNER_H_
