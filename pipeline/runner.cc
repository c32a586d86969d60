#include "pipeline/runner.h"

#include <fmt/format.h>

#include "cache/epoch_oracle.h"
#include "pipeline/sampler.h"
#include "storage/directory_storage.h"
#include "storage/synthetic.h"

namespace stallscope {

void CheckFaults(const Scenario& s) {
  const auto& f = s.storage.faults;
  const bool faults = f.error_rate > 0 || f.timeout_rate > 0 || f.truncate_rate > 0 ||
                      f.spike_rate > 0 || (f.stall_every > 0 && f.stall_for > 0);
  if (faults && s.storage.kind != "simulated") {
    throw SetupError(fmt::format(
        "{}: storage.faults: faults are injected by the simulated storage only (storage.kind "
        "is {}); a real directory meets real ones",
        s.file, s.storage.kind));
  }
  if (f.error_rate + f.timeout_rate + f.truncate_rate > 1) {
    throw SetupError(fmt::format(
        "{}: storage.faults: error_rate + timeout_rate + truncate_rate is {:.3g}, above 1", s.file,
        f.error_rate + f.timeout_rate + f.truncate_rate));
  }
}

void CheckRunnable(const Scenario& s) {
  CheckFaults(s);
  if (s.cluster.nodes * s.cluster.gpus_per_node > 1) {
    throw SetupError(fmt::format(
        "{}: cluster: {} nodes x {} GPUs can only be simulated (`stallscope simulate`, the "
        "simulator issue); `run` measures this host",
        s.file, s.cluster.nodes, s.cluster.gpus_per_node));
  }
  for (size_t i = 0; i < s.cache_tiers.size(); ++i) {
    if (s.cache_tiers[i].kind == "distributed") {
      throw SetupError(fmt::format(
          "{}: cache.tiers.{}.kind: a distributed tier (the other nodes' caches) can only be "
          "simulated (`stallscope simulate`); `run` measures this host",
          s.file, i));
    }
    try {
      CheckTier(s.cache_tiers[i], fmt::format("cache.tiers.{}", i));
    } catch (const CacheError& e) {
      throw SetupError(fmt::format("{} (variant {}): {}", s.file, s.variant, e.what()));
    }
  }
}

SimulatedStorageOptions StorageModelOptions(const Scenario& s) {
  SimulatedStorageOptions o;
  o.bandwidth_bytes_per_second = s.storage.bandwidth;
  o.latency_p50_seconds = s.storage.latency_p50;
  o.latency_p99_seconds = s.storage.latency_p99;
  o.iops = s.storage.iops;
  o.max_inflight = s.storage.max_inflight;
  const auto& f = s.storage.faults;
  o.faults = {f.error_rate, f.timeout_rate, f.timeout,     f.truncate_rate,
              f.spike_rate, f.spike,        f.stall_every, f.stall_for};
  return o;
}

std::unique_ptr<Storage> MakeStorage(const Scenario& s, bool quiet) {
  SyntheticDataset d{s.dataset.samples, s.dataset.sample_size, s.dataset.sample_size_stdev, s.seed,
                     s.dataset.classes};
  if (s.storage.kind == "memory") return std::make_unique<MemoryStorage>(d);
  if (s.storage.kind == "simulated") {
    return std::make_unique<SimulatedStorage>(d, StorageModelOptions(s));
  }
  DirectoryStorageOptions o;
  o.path = s.dataset.path;
  o.io_threads = s.loader.io_threads;
  o.io_depth = s.loader.io_depth;
  o.direct_io = s.storage.direct_io;
  o.cold = s.storage.cold;
  o.classes = s.dataset.classes;
  o.read_timeout = s.loader.read_timeout;
  o.quiet = quiet;
  return std::make_unique<DirectoryStorage>(o);
}

PipelineOptions ToPipelineOptions(const Scenario& s) {
  PipelineOptions p;
  p.seed = s.seed;
  p.batch_size = s.loader.batch_size;
  p.prefetch = s.loader.prefetch;
  p.workers = s.loader.workers;
  p.preprocess = s.loader.preprocess;
  p.preprocess_cost = s.loader.preprocess_cost;
  p.image_size = s.loader.image_size;
  p.epochs = s.run.epochs;
  p.max_steps = s.run.max_steps;
  p.verify = s.run.verify;
  p.on_error = s.loader.on_error;
  p.retries = s.loader.on_error == "retry" ? s.loader.retries : 0;
  p.retry_backoff = s.loader.retry_backoff;
  return p;
}

VariantResult RunVariant(const Scenario& s, Storage& storage, Device& device,
                         const RunHooks& hooks) {
  CheckRunnable(s);
  // The sampler's future order: belady's oracle (and only consulted by it).
  const Sampler sampler(storage.num_samples(), s.seed);
  const EpochOrderOracle oracle(
      storage.num_samples(), s.run.epochs,
      [&sampler](uint64_t epoch, std::vector<uint64_t>& out) { sampler.Order(epoch, out); });
  Cache::Options co;
  co.tiers = s.cache_tiers;
  co.num_samples = storage.num_samples();
  co.max_sample_bytes = storage.max_sample_bytes();
  co.oracle = &oracle;
  co.dataset_fingerprint = storage.Fingerprint();
  co.io_depth = s.loader.io_depth;
  co.quiet = hooks.quiet;
  std::unique_ptr<Cache> cache_owner;
  try {
    cache_owner = std::make_unique<Cache>(co);
  } catch (const CacheError& e) {
    throw SetupError(fmt::format("{} (variant {}): {}", s.file, s.variant, e.what()));
  }
  Cache& cache = *cache_owner;
  std::unique_ptr<Pipeline> pipeline;
  try {
    PipelineOptions po = ToPipelineOptions(s);
    po.trace = hooks.trace;
    po.warmup_steps = s.run.warmup_steps;
    po.observer = hooks.observer;
    pipeline = std::make_unique<Pipeline>(po, storage, cache, device);
  } catch (const std::invalid_argument& e) {
    throw SetupError(s.file + ": " + e.what());
  }
  if (pipeline->total_steps() <= s.run.warmup_steps) {
    throw SetupError(fmt::format(
        "{}: run.warmup_steps: the run has {} step(s) and the first {} are warm-up, so nothing "
        "would be measured; lower run.warmup_steps or raise run.epochs / dataset.samples",
        s.file, pipeline->total_steps(), s.run.warmup_steps));
  }
  if (hooks.on_start) hooks.on_start(s, storage, cache, *pipeline);
  RunRecord record = pipeline->Run();
  if (hooks.on_finish) hooks.on_finish();
  if (hooks.on_record) {
    std::vector<std::string> tier_names;
    for (const TierOptions& t : s.cache_tiers) tier_names.push_back(t.kind);
    hooks.on_record(record, tier_names);
  }
  if (record.failed) throw RunError(s.variant + ": " + record.error);
  if (record.partial && record.batches.size() <= s.run.warmup_steps) {
    VariantResult v;  // interrupted before anything was measured
    v.name = s.variant;
    v.device = record.device;
    v.steps = record.batches.size();
    v.wall_seconds = record.end - record.start;
    v.partial = true;
    v.bottleneck_text = "interrupted before the first measured step";
    return v;
  }
  AnalysisInputs in;
  in.warmup_steps = s.run.warmup_steps;
  in.batch_size = s.loader.batch_size;
  in.workers = s.loader.workers;
  in.prefetch = s.loader.prefetch;
  in.nominal_step_seconds = device.nominal_step_seconds();
  in.have_cache = !cache.empty();
  VariantResult v = Analyze(s.variant, record, in);
  v.partial = record.partial;
  v.gpu_hour_cost = s.gpu_hour_cost;
  return v;
}

}  // namespace stallscope
