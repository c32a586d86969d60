#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/errors.h"
#include "base/units.h"
#include "sim/rank_loop.h"

namespace stallscope {

Simulator::Simulator() = default;
Simulator::~Simulator() = default;

SimulationResult Simulator::Run(const Scenario& scenario) {
  RankLoop run(disks_, listed_, scenario);
  return run.Go();
}

VariantResult Simulator::RunVariant(const Scenario& s, SimulationStats* stats, RunRecord* record) {
  SimulationResult r = Run(s);
  if (stats) *stats = r.stats;
  if (r.record.failed) throw RunFailed(s.variant + ": " + r.record.error);
  VariantResult v = Analyze(s.variant, r.record, r.inputs);
  v.gpus = r.stats.ranks;
  if (v.checkpoints) {
    const CheckpointOptions& c = s.checkpoint;
    v.checkpoints->mode = NameOf(c.mode);
    v.checkpoints->target =
        c.path.empty() ? std::string("the simulated storage (storage.write)")
                       : fmt::format("directory {} modelled at {} (checkpoint.bandwidth)", c.path,
                                     c.bandwidth > 0 ? FormatRate(c.bandwidth) : "no limit");
  }
  // A straggler is named where the scenario makes one (cluster.straggler): the simulated
  // ranks are otherwise alike, and which of them the model serves last when they ask at the
  // same instant is its tie-break, not a slow rank (timing jitter turns it in real runs).
  if (s.cluster.straggler.rank >= 0 && s.cluster.straggler.slowdown > 1) {
    std::vector<double> sync;
    for (const StageSeconds& k : r.rank_stalls) sync.push_back(k.sync);
    NameStraggler(v, sync, [&](size_t k) { return OwnStallText(r.rank_stalls[k]); });
  }
  const std::string binding = NodeBinding(s, v, r.usage);
  if (!binding.empty()) v.bottleneck_text += "; " + binding;
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

std::string DescribeStorageModel(const Scenario& s) {
  const StorageOptions& st = s.storage;
  if (st.kind == StorageKind::kMemory) return "memory: no storage model";
  const SimulatedStorageOptions& m = st.model;
  const bool limited = m.bandwidth_bytes_per_second > 0 || m.latency_p50_seconds > 0 || m.iops > 0;
  std::string out = fmt::format(
      "bandwidth {}, latency p50 {} p99 {}, IOPS {}",
      m.bandwidth_bytes_per_second > 0 ? FormatRate(m.bandwidth_bytes_per_second) : "unlimited",
      FormatDuration(m.latency_p50_seconds), FormatDuration(m.latency_p99_seconds),
      m.iops > 0 ? fmt::format("{:.0f}", m.iops) : "unlimited");
  if (st.kind == StorageKind::kSimulated) return "simulated storage: " + out;
  out = fmt::format("directory {}: {}, loader.io_depth {} in flight per rank", s.dataset.path, out,
                    s.loader.io.io_depth);
  if (st.cold) {
    out += fmt::format(", cold: each epoch waits for the last one's reads, then evicts ({})",
                       FormatDuration(m.evict_seconds));
  }
  if (!st.model_source.empty()) return out + " (" + st.model_source + ")";
  if (!limited) {
    return out +
           " (no storage.profile: the directory is modelled without limits; `stallscope "
           "calibrate --dir DIR -o FILE` measures one)";
  }
  return out + " (the scenario's storage keys)";
}

std::string NodeBinding(const Scenario& s, const VariantResult& v, const NodeUsage& u) {
  if (u.seconds <= 0) return "";
  const double nodes = s.cluster.nodes;
  const double ranks = nodes * s.cluster.gpus_per_node;
  const NodeOptions& node = s.cluster.node;
  if (v.bottleneck_stage == "fetch") {
    const double nic = u.nic_seconds / (nodes * u.seconds);
    if (nic >= 0.9) {
      return fmt::format("node NIC: {} into each node (cluster.node.nic), busy {:.0f}% of the run",
                         FormatRate(node.nic), nic * 100);
    }
    const double receive = u.cpu_receive / (ranks * u.seconds);
    if (receive >= 0.9) {
      return fmt::format(
          "node CPU: landing received bytes ({} per core, cluster.node.receive), each rank's "
          "receiving thread busy {:.0f}% of the run",
          FormatRate(node.receive), receive * 100);
    }
    return "";
  }
  if (v.bottleneck_stage == "preprocess") {
    const double work = u.cpu_normalize + u.cpu_verify + u.cpu_jpeg + u.cpu_cost;
    const double busy = work / (nodes * node.cores * u.seconds);
    if (busy < 0.85 || work <= 0) return "";
    const std::pair<double, const char*> parts[] = {{u.cpu_jpeg, "jpeg decode"},
                                                    {u.cpu_normalize, "normalize"},
                                                    {u.cpu_verify, "verify"},
                                                    {u.cpu_cost, "loader.preprocess.cost"}};
    const auto top = *std::max_element(std::begin(parts), std::end(parts));
    return fmt::format(
        "node CPU: {} ({:.0f}% of the workers' CPU time; {} cores per node busy {:.0f}% of the "
        "run, cluster.node.cores)",
        top.second, top.first / work * 100, node.cores, busy * 100);
  }
  if (v.bottleneck_stage == "transfer" && s.gpu.device == DeviceKind::kCuda) {
    return fmt::format("node H2D: {} per GPU (cluster.node.h2d)", FormatRate(node.h2d));
  }
  return "";
}

Scenario OnThisHost(Scenario s, const NodeOptions& host) {
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.cluster.node = host;
  s.gpu.device = DeviceKind::kEmulated;
  if (s.has_distributed_tier()) s.cache_tiers.pop_back();
  if (s.cluster.straggler.rank > 0) s.cluster.straggler = {};  // (no such rank at 1 x 1)
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
  uint64_t ram = 0;
  for (const TierOptions& t : s.cache_tiers) ram += t.kind == TierKind::kMemory ? t.capacity : 0;
  const bool per_rank = s.cache_scope == CacheScope::kRank;
  if (per_rank) ram *= s.cluster.gpus_per_node;  // every rank its own tiers
  if (ram > s.cluster.node.memory) {
    throw BadInput(fmt::format(
        "{} (variant {}): cluster.node.memory: the RAM cache tiers need {} per node{}, the node "
        "has {}",
        s.file, s.variant, FormatBinaryBytes(static_cast<double>(ram)),
        per_rank ? fmt::format(" ({} ranks' own, cache.scope: rank)", s.cluster.gpus_per_node) : "",
        FormatBinaryBytes(static_cast<double>(s.cluster.node.memory))));
  }
  // Each set of tiers keeps a few bytes per sample for its policy's index.
  const double sets = per_rank ? static_cast<double>(s.cluster.nodes) * s.cluster.gpus_per_node
                               : static_cast<double>(s.cluster.nodes);
  if (!s.cache_tiers.empty() && sets * static_cast<double>(s.dataset.samples) > 4e9) {
    throw BadInput(fmt::format(
        "{} (variant {}): cache: {:.0f} sets of tiers ({}) over {} samples exceed what the "
        "simulator indexes (4e9 entries); fewer ranks, or cache.scope: node",
        s.file, s.variant, sets, per_rank ? "one per rank" : "one per node", s.dataset.samples));
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
  const uint64_t ranks = static_cast<uint64_t>(s.cluster.nodes) * s.cluster.gpus_per_node;
  if (s.cluster.straggler.rank >= 0 && static_cast<uint64_t>(s.cluster.straggler.rank) >= ranks) {
    throw BadInput(
        fmt::format("{} (variant {}): cluster.straggler.rank: {}, but the cluster has "
                    "{} rank(s) (0 to {})",
                    s.file, s.variant, s.cluster.straggler.rank, ranks, ranks - 1));
  }
  if (ranks > (1u << 24)) {
    throw BadInput(
        fmt::format("{} (variant {}): cluster: at most 16777216 ranks", s.file, s.variant));
  }
}

}  // namespace stallscope
