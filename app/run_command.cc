// `stallscope run`: every variant of a scenario, for real, side by side.
#include <unistd.h>

#include <cstdio>

#include "app/commands.h"
#include "app/make_device.h"
#include "app/outputs.h"
#include "app/progress.h"
#include "app/resolve.h"
#include "app/runner.h"
#include "app/signals.h"
#include "base/units.h"

namespace stallscope {
namespace {

// The start-up banner: what runs, and the memory it holds.
void PrintBanner(const Scenario& s, const Storage& storage, const Cache& cache, const Pipeline& p,
                 const Device& device) {
  uint64_t cache_bytes = 0;
  for (const TierOptions& t : s.cache_tiers) {
    if (t.kind == TierKind::kMemory) cache_bytes += t.capacity;
  }
  std::fprintf(stderr,
               "▶ %s: %s | cache: %s | %u workers, prefetch %u, batch %u | device: %s, "
               "step %s | memory budget: staging %s + RAM cache %s | %llu steps\n",
               s.variant.c_str(), storage.Describe().c_str(), cache.Describe().c_str(),
               s.loader.workers, s.loader.prefetch, s.loader.batch_size, device.name().c_str(),
               FormatDuration(s.gpu.step_time).c_str(),
               FormatBinaryBytes(static_cast<double>(p.staging_bytes())).c_str(),
               FormatBinaryBytes(static_cast<double>(cache_bytes)).c_str(),
               static_cast<unsigned long long>(p.total_steps()));
}

}  // namespace

int RunCommand(const RunCommandOptions& o) {
  const std::vector<Scenario> scenarios = ResolveVariants(o.scenario, o.variants, o.sets);
  for (const Scenario& s : scenarios) CheckRunnable(s);
  const bool quiet = o.out.quiet;
  Outputs outputs(o.out);
  // Open every real dataset before anything runs: a bad directory is bad input (exit 2).
  std::vector<std::unique_ptr<Storage>> storages(scenarios.size());
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (scenarios[i].storage.kind == StorageKind::kDirectory) {
      storages[i] = MakeStorage(scenarios[i], quiet);
    }
  }
  ProgressLine progress(!quiet && isatty(STDERR_FILENO));
  if (!quiet) {
    std::fprintf(stderr, "stallscope run: %s (%s), %zu variant(s)\n", scenarios[0].name.c_str(),
                 o.scenario.c_str(), scenarios.size());
  }
  std::vector<VariantResult> results;
  StopOnSignal stopper;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (StopSignal()) break;  // interrupted: the variants not started are not run
    const Scenario& s = scenarios[i];
    std::unique_ptr<Storage> storage = storages[i] ? std::move(storages[i]) : MakeStorage(s, quiet);
    std::unique_ptr<Device> device = MakeDevice(s);
    RunHooks hooks;
    hooks.quiet = quiet;
    hooks.on_start = [&](const Scenario& sc, const Storage& st, const Cache& cache, Pipeline& p) {
      stopper.Attach(&p);
      if (!quiet) PrintBanner(sc, st, cache, p, *device);
      progress.Start(sc.variant, p, sc.run.epochs);
    };
    hooks.on_finish = [&] {
      stopper.Attach(nullptr);
      progress.Stop();
    };
    hooks.observer = outputs.BeginVariant(s);
    hooks.trace = outputs.trace();
    hooks.on_record = [&](const RunRecord& record) { outputs.Record(s, record); };
    results.push_back(RunVariant(s, *storage, *device, hooks));
    outputs.EndVariant(s);
  }
  return outputs.Finish(scenarios[0].name, "run", results);
}

}  // namespace stallscope
