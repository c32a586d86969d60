#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/errors.h"
#include "sim/rank_loop.h"

namespace stallscope {

Simulator::Simulator(const HostModel& host) : host_(host) {}
Simulator::~Simulator() = default;

SimulationResult Simulator::Run(const Scenario& scenario) {
  RankLoop run(host_, disks_, scenario);
  return run.Go();
}

VariantResult Simulator::RunVariant(const Scenario& s, SimulationStats* stats, RunRecord* record) {
  SimulationResult r = Run(s);
  if (stats) *stats = r.stats;
  if (r.record.failed) throw RunFailed(s.variant + ": " + r.record.error);
  VariantResult v = Analyze(s.variant, r.record, r.inputs);
  v.gpus = r.stats.ranks;
  v.gpu_hour_cost = s.gpu_hour_cost;
  if (record) *record = std::move(r.record);
  return v;
}

RunPlan Simulator::PlanFor(const Scenario& s) {
  const SimulatedDataset d = LoadDataset(s);
  const uint64_t ranks = static_cast<uint64_t>(s.cluster.nodes) * s.cluster.gpus_per_node;
  return RankPlan(s, d.sizes.size() / std::max<uint64_t>(ranks, 1), d.max_sample_bytes,
                  d.can_verify);
}

Scenario OnThisHost(Scenario s) {
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.cluster.cpus_per_node = 0;  // this host's cores
  s.gpu.device = DeviceKind::kEmulated;
  if (s.has_distributed_tier()) s.cache_tiers.pop_back();
  return s;
}

void CheckSimulatable(const Scenario& s) {
  CheckFaults(s);
  for (size_t i = 0; i < s.cache_tiers.size(); ++i) {
    const TierOptions& t = s.cache_tiers[i];
    if (t.kind == TierKind::kDistributed) continue;
    if (t.capacity == 0) {
      throw BadInput(
          fmt::format("{} (variant {}): cache.tiers.{}.capacity: must be a positive size", s.file,
                      s.variant, i));
    }
    if (t.kind == TierKind::kDisk && t.read_bandwidth <= 0) {
      throw BadInput(fmt::format(
          "{} (variant {}): cache.tiers.{}.bandwidth: a disk tier's read rate must be positive",
          s.file, s.variant, i));
    }
  }
  if (s.has_distributed_tier() && s.cluster.network_bandwidth <= 0) {
    throw BadInput(
        fmt::format("{} (variant {}): cluster.network_bandwidth: a distributed cache tier needs it",
                    s.file, s.variant));
  }
  if (s.loader.prefetch > kMaxPrefetch || s.loader.batch_size > kMaxBatchSize) {
    throw BadInput(fmt::format(
        "{} (variant {}): loader: the simulator takes prefetch up to {} and batch_size up to {}",
        s.file, s.variant, kMaxPrefetch, kMaxBatchSize));
  }
  if (static_cast<uint64_t>(s.cluster.nodes) * s.cluster.gpus_per_node > (1u << 24)) {
    throw BadInput(
        fmt::format("{} (variant {}): cluster: at most 16777216 ranks", s.file, s.variant));
  }
}

}  // namespace stallscope
