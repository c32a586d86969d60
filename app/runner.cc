#include "app/runner.h"

#include <fmt/format.h>

#include <optional>

#include "app/budget.h"
#include "app/errors.h"
#include "base/units.h"
#include "cache/epoch_oracle.h"
#include "pipeline/sampler.h"
#include "storage/checkpoint_store.h"
#include "storage/directory_storage.h"
#include "storage/synthetic.h"

namespace stallscope {

namespace {

// A checkpoint.path directory, checked before anything runs: it can be made, it holds a
// checkpoint to restore, and it has room for the checkpoints the run keeps.
std::unique_ptr<DirectoryCheckpointStore> CheckpointDirectory(const Scenario& s, uint32_t rank,
                                                              uint64_t rank_bytes,
                                                              uint32_t ranks_on_host) {
  const CheckpointOptions& c = s.checkpoint;
  std::unique_ptr<DirectoryCheckpointStore> dir;
  try {
    dir = std::make_unique<DirectoryCheckpointStore>(
        DirectoryCheckpointOptions{c.path, rank, c.fsync, c.direct, c.keep, c.block, c.io_depth});
  } catch (const StorageError& e) {
    throw BadInput(fmt::format("{} (variant {}): {}", s.file, s.variant, e.what()));
  }
  if (c.restore && !dir->Latest()) {
    throw BadInput(
        fmt::format("{} (variant {}): checkpoint.restore: no checkpoint of rank {} in {} (files "
                    "ckpt-STEP-r{:05}.stck); run once without restore to write one",
                    s.file, s.variant, rank, c.path, rank));
  }
  if (c.enabled()) {
    // At most keep + 1 at once (the newest is written before the oldest goes); those this
    // rank has there already count as room.
    const uint64_t one = dir->Footprint(rank_bytes);
    const uint64_t held = std::min<uint64_t>(dir->Steps().size(), c.keep);
    const uint64_t need = one * (c.keep + 1 - held) * ranks_on_host;
    if (const auto free = dir->FreeBytes(); free && need > *free) {
      throw BadInput(fmt::format(
          "{} (variant {}): checkpoint.{}: {} checkpoint(s) of {} each (checkpoint.keep {} + the "
          "one being written{}) need {} more in {}; {} free",
          s.file, s.variant, c.model.empty() ? "size" : "model", c.keep + 1 - held,
          FormatBinaryBytes(static_cast<double>(one)), c.keep,
          ranks_on_host > 1 ? fmt::format(", for {} ranks", ranks_on_host) : "",
          FormatBinaryBytes(static_cast<double>(need)), c.path,
          FormatBinaryBytes(static_cast<double>(*free))));
    }
  }
  return dir;
}

// The scenario's checkpoint target: the directory, or the simulated storage.
std::unique_ptr<CheckpointStore> MakeCheckpointStore(const Scenario& s, Storage& storage,
                                                     uint32_t rank, uint64_t rank_bytes,
                                                     uint32_t ranks_on_host) {
  const CheckpointOptions& c = s.checkpoint;
  if (!c.path.empty()) return CheckpointDirectory(s, rank, rank_bytes, ranks_on_host);
  auto* simulated = dynamic_cast<SimulatedStorage*>(&storage);
  if (!simulated) {
    throw BadInput(
        fmt::format("{}: checkpoint.path: needed unless storage.kind is simulated", s.file));
  }
  return std::make_unique<SimulatedCheckpointStore>(*simulated, c.block, c.io_depth);
}

}  // namespace

void CheckRunnable(const Scenario& s, uint32_t ranks) {
  CheckFaults(s);
  CheckOpenFiles(s);
  const uint64_t cluster = static_cast<uint64_t>(s.cluster.nodes) * s.cluster.gpus_per_node;
  if (cluster != ranks) {
    throw BadInput(fmt::format(
        "{} (variant {}): cluster: {} nodes x {} GPUs = {} ranks, but this run was launched "
        "with {}; launch `mpirun -np {} stallscope run ...` (or `stallscope simulate` to "
        "model any size)",
        s.file, s.variant, s.cluster.nodes, s.cluster.gpus_per_node, cluster, ranks, cluster));
  }
  if (s.cluster.straggler.rank >= static_cast<int64_t>(ranks)) {
    throw BadInput(
        fmt::format("{} (variant {}): cluster.straggler.rank: {}, but the run has {} "
                    "rank(s) (0 to {})",
                    s.file, s.variant, s.cluster.straggler.rank, ranks, ranks - 1));
  }
  if (s.cluster.gpus_per_node > 1 && s.cache_scope == CacheScope::kNode && !s.cache_tiers.empty()) {
    throw BadInput(fmt::format(
        "{} (variant {}): cache.scope: node: the {} ranks of a node would share its cache "
        "tiers, which real runs cannot do yet (each rank is a process with its own tiers); set "
        "cache.scope: rank (`simulate` then models the same), or run one rank per node "
        "(cluster.gpus_per_node: 1)",
        s.file, s.variant, s.cluster.gpus_per_node));
  }
  if (!s.checkpoint.path.empty() && (s.checkpoint.enabled() || s.checkpoint.restore)) {
    CheckpointDirectory(s, 0, s.checkpoint.rank_bytes(ranks), 1);  // rank 0's, before any starts
  }
  for (size_t i = 0; i < s.cache_tiers.size(); ++i) {
    if (s.cache_tiers[i].kind == TierKind::kDistributed) {
      throw BadInput(fmt::format(
          "{}: cache.tiers.{}.kind: a distributed tier (the other nodes' caches) can only be "
          "simulated (`stallscope simulate`); `run` measures this host",
          s.file, i));
    }
    try {
      CheckTier(s.cache_tiers[i], fmt::format("cache.tiers.{}", i));
    } catch (const CacheError& e) {
      throw BadInput(fmt::format("{} (variant {}): {}", s.file, s.variant, e.what()));
    }
  }
}

DirectoryStorageOptions DirectoryOptionsOf(const Scenario& s, bool quiet) {
  return {.dataset = s.dataset, .storage = s.storage, .io = s.loader.io, .quiet = quiet};
}

std::unique_ptr<Storage> MakeStorage(const Scenario& s, bool quiet, SharedStorageBudget* shared) {
  const SettingUp doing(
      fmt::format("making the {} storage (variant {})", NameOf(s.storage.kind), s.variant));
  // A synthetic dataset's index is made here: refused first when this host cannot hold it.
  if (const auto available = ReadHostMemory()) CheckDatasetFits(s, *available);
  const SyntheticDataset d{.dataset = s.dataset, .seed = s.seed};
  switch (s.storage.kind) {
    case StorageKind::kMemory:
      return std::make_unique<MemoryStorage>(d);
    case StorageKind::kSimulated:
      return std::make_unique<SimulatedStorage>(d, s.storage.model, shared);
    case StorageKind::kDirectory:
      break;
  }
  return std::make_unique<DirectoryStorage>(DirectoryOptionsOf(s, quiet));
}

VariantResult RunVariant(const Scenario& s, Storage& storage, Device& device,
                         const RunHooks& hooks) {
  std::optional<SettingUp> doing;
  doing.emplace(fmt::format("planning the run (variant {})", s.variant));
  CheckRunnable(s, hooks.shard.ranks);
  const ListingSkips skips = storage.listing_skips();
  if (skips.count > 0 && s.loader.on_error == OnError::kFail) {
    throw RunFailed(
        fmt::format("{}: loader.on_error fail: {} dataset entries are not samples (first: {})",
                    s.file, skips.count, skips.first.front()));
  }
  PipelineOptions po = s.pipeline();
  if (static_cast<int64_t>(hooks.shard.rank) == s.cluster.straggler.rank) {
    po.loader.preprocess.cost *= s.cluster.straggler.slowdown;  // this rank is the slow one
  }
  po.trace = hooks.trace;
  po.observer = hooks.observer;
  po.shard = hooks.shard;
  po.step_sync = hooks.step_sync;
  const RunPlan plan = Pipeline::PlanFor(po, storage);
  RequireMeasuredSteps(plan, s.run.warmup_steps, s.file);
  const bool checkpoints = s.checkpoint.enabled() || s.checkpoint.restore;
  po.checkpoint_bytes = s.checkpoint.rank_bytes(hooks.shard.ranks);
  std::unique_ptr<CheckpointStore> checkpoint_store;
  if (checkpoints) {
    checkpoint_store =
        MakeCheckpointStore(s, storage, hooks.shard.rank, po.checkpoint_bytes, hooks.ranks_on_host);
    po.checkpoint = s.checkpoint;
    po.checkpoint_store = checkpoint_store.get();
  }
  // Before the cache, the staging slots or a thread exist: a run that cannot fit is refused.
  if (const auto available = ReadHostMemory()) {
    CheckBudget(
        s, plan, storage.num_samples(), storage.max_sample_bytes(), *available, hooks.ranks_on_host,
        checkpoints
            ? CheckpointHostBytes(s.checkpoint, po.checkpoint_bytes, device.name() == "emulated")
            : 0);
  }

  doing.emplace(fmt::format("making the cache tiers (variant {})", s.variant));
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
  co.io_depth = s.loader.io.io_depth;
  co.quiet = hooks.quiet;
  std::unique_ptr<Cache> cache_owner;
  try {
    cache_owner = std::make_unique<Cache>(co);
  } catch (const CacheError& e) {
    throw BadInput(fmt::format("{} (variant {}): {}", s.file, s.variant, e.what()));
  }
  Cache& cache = *cache_owner;
  doing.emplace(fmt::format("allocating the staging buffers (variant {})", s.variant));
  auto pipeline = std::make_unique<Pipeline>(po, storage, cache, device);
  doing.emplace(fmt::format("running the steps (variant {})", s.variant));
  if (hooks.on_start) hooks.on_start(s, storage, cache, *pipeline);
  if (hooks.before_run) hooks.before_run();
  if (checkpoint_store && s.checkpoint.restore && hooks.agree_restore) {
    pipeline->RestoreStep(hooks.agree_restore(checkpoint_store->Steps()));
  }
  RunRecord record = pipeline->Run();
  if (hooks.on_finish) hooks.on_finish();
  if (hooks.on_record) hooks.on_record(record);
  if (record.failed) throw RunFailed(s.variant + ": " + record.error);
  if (record.partial && record.batches.size() <= s.run.warmup_steps) {
    VariantResult v;  // interrupted before anything was measured
    v.name = s.variant;
    v.device = record.device;
    v.steps = record.batches.size();
    v.wall_seconds = record.end - record.start;
    v.partial = true;
    v.time_limit_reached = record.time_limit_reached;
    v.bottleneck_text = record.time_limit_reached
                            ? "run.time_limit reached before the first measured step"
                            : "interrupted before the first measured step";
    return v;
  }
  doing.emplace(fmt::format("analysing the run (variant {})", s.variant));
  AnalysisInputs in;
  in.warmup_steps = s.run.warmup_steps;
  in.batch_size = s.loader.batch_size;
  in.workers = s.loader.workers;
  in.prefetch = s.loader.prefetch;
  in.nominal_step_seconds = device.nominal_step_seconds();
  in.have_cache = !cache.empty();
  VariantResult v = Analyze(s.variant, record, in);
  if (v.checkpoints) {
    v.checkpoints->mode = NameOf(s.checkpoint.mode);
    v.checkpoints->target = checkpoint_store->Describe();
  }
  v.partial = record.partial;
  v.time_limit_reached = record.time_limit_reached;
  v.gpu_hour_cost = s.gpu_hour_cost;
  v.entries_skipped = skips.count;
  v.entries_skipped_first = skips.first;
  return v;
}

std::string DescribeCheckpoints(const Scenario& s, uint32_t ranks) {
  const CheckpointOptions& c = s.checkpoint;
  if (!c.enabled() && !c.restore) return "";
  std::string when = c.every > 0      ? fmt::format("every {} steps", c.every)
                     : c.interval > 0 ? fmt::format("every {}", FormatDuration(c.interval))
                                      : std::string("none taken");
  return fmt::format("checkpoint: {}, {} a rank{} {} → {}{}", NameOf(c.mode),
                     FormatBinaryBytes(static_cast<double>(c.rank_bytes(ranks))),
                     c.model.empty() ? "" : " (" + c.model + ")", when,
                     c.path.empty() ? std::string("the simulated storage") : c.path,
                     c.restore ? ", restore first" : "");
}

}  // namespace stallscope
