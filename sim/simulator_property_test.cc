// Sanity properties of the simulator over randomized scenarios (sizes, bandwidths, latencies,
// batch, step time, CPU work, caches): on a fixed shared storage AU never rises as nodes are
// added; more prefetch, more workers, a larger cache or faster storage never lower AU. Each
// by at most 0.5 percentage points. The scenarios come from fixed seeds, so a failure names a
// scenario that reproduces.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "sim/simulator.h"

namespace stallscope {
namespace {

constexpr double kTolerance = 0.005;
constexpr int kScenarios = 120;

// Log-uniform in [lo, hi].
double LogUniform(std::mt19937_64& g, double lo, double hi) {
  return lo * std::pow(hi / lo, std::uniform_real_distribution<double>(0, 1)(g));
}
uint32_t Between(std::mt19937_64& g, uint32_t lo, uint32_t hi) {
  return std::uniform_int_distribution<uint32_t>(lo, hi)(g);
}

struct Drawn {
  Scenario s;
  std::string text;  // what was drawn, for a failure's message
};

// One node of G ranks; storage somewhere between a quarter and twice the node's demand.
Drawn RandomScenario(uint64_t seed) {
  std::mt19937_64 g(seed);
  Drawn d;
  Scenario& s = d.s;
  s.file = "property.yaml";
  s.variant = fmt::format("seed-{}", seed);
  s.seed = seed;
  s.cluster.gpus_per_node = Between(g, 1, 4);
  s.dataset.sample_size = static_cast<uint64_t>(LogUniform(g, 8 << 10, 2 << 20));
  s.dataset.sample_size_stdev = Between(g, 0, 1) ? s.dataset.sample_size / 5 : 0;
  s.loader.batch_size = Between(g, 4, 48);
  s.gpu.step_time = LogUniform(g, 0.005, 0.1);
  s.gpu.device = DeviceKind::kEmulated;
  const double demand = static_cast<double>(s.cluster.gpus_per_node) * s.loader.batch_size *
                        s.dataset.sample_size / s.gpu.step_time;
  s.storage.kind = StorageKind::kSimulated;
  s.storage.model.bandwidth_bytes_per_second = demand * LogUniform(g, 0.25, 2);
  s.storage.model.latency_p50_seconds = LogUniform(g, 50e-6, 4e-3);
  s.storage.model.latency_p99_seconds = s.storage.model.latency_p50_seconds * LogUniform(g, 1, 8);
  s.storage.model.max_inflight = 1024;
  s.loader.prefetch = Between(g, 0, 3);
  s.loader.workers = Between(g, 1, 3);
  s.loader.io.io_depth = 64;
  const bool normalize = Between(g, 0, 1);
  s.loader.preprocess.kind = normalize ? PreprocessKind::kNormalize : PreprocessKind::kNone;
  s.loader.preprocess.cost =
      Between(g, 0, 1) ? LogUniform(g, 1e-5, 0.5 * s.gpu.step_time / s.loader.batch_size) : 0;
  s.run.verify = Between(g, 0, 1);
  s.cluster.node.cores = Between(g, 2, 8);
  s.cluster.node.normalize = 1e9;
  s.cluster.node.verify = 2e9;
  s.cluster.node.receive = 4e9;
  s.cluster.node.cost_factor = 1;
  s.cluster.node.cost_factor_busy = 1.2;
  // 40 steps per rank per epoch at 4 nodes (the most the node property tries).
  s.dataset.samples = 4ULL * s.cluster.gpus_per_node * s.loader.batch_size * 40;
  s.run.epochs = 1;
  s.run.max_steps = 30;
  d.text = fmt::format(
      "seed {}: {} GPU(s)/node, {} cores, samples {} x {} B (stdev {}), batch {}, step {:.1f} ms, "
      "storage {:.1f} MB/s (demand {:.1f} MB/s per node), latency p50 {:.2f} ms p99 {:.2f} ms, "
      "prefetch {}, workers {}, {}, cost {:.1f} us, verify {}",
      seed, s.cluster.gpus_per_node, s.cluster.node.cores, s.dataset.samples, s.dataset.sample_size,
      s.dataset.sample_size_stdev, s.loader.batch_size, s.gpu.step_time * 1e3,
      s.storage.model.bandwidth_bytes_per_second / 1e6, demand / 1e6,
      s.storage.model.latency_p50_seconds * 1e3, s.storage.model.latency_p99_seconds * 1e3,
      s.loader.prefetch, s.loader.workers, normalize ? "normalize" : "none",
      s.loader.preprocess.cost * 1e6, s.run.verify);
  return d;
}

double AuOf(const Scenario& s) {
  Simulator sim;
  return sim.RunVariant(s).au;
}

// Utilization over the epochs after the first (their windows' total).
double LaterEpochsUtilization(const Scenario& s) {
  Simulator sim;
  const VariantResult v = sim.RunVariant(s);
  double busy = 0, window = 0;
  for (size_t e = 1; e < v.epochs.size(); ++e) {
    busy += (1 - v.epochs[e].gpu_idle_fraction) * v.epochs[e].window_seconds;
    window += v.epochs[e].window_seconds;
  }
  return window > 0 ? busy / window : 0;
}

// The draws must reach the interesting cases: a property that held only at AU 100% would say
// nothing. At least a quarter of the base scenarios idle the GPU by more than 10%, and at least
// a tenth reach AU 90% or more.
void ExpectSpread(const std::vector<double>& aus, const char* what) {
  const auto low = std::count_if(aus.begin(), aus.end(), [](double a) { return a < 0.9; });
  const auto high = std::count_if(aus.begin(), aus.end(), [](double a) { return a >= 0.9; });
  std::printf("%s: %zu scenarios, %ld with AU < 90%%, %ld with AU >= 90%%\n", what, aus.size(),
              static_cast<long>(low), static_cast<long>(high));
  EXPECT_GE(low * 4, static_cast<long>(aus.size())) << what;
  EXPECT_GE(high * 10, static_cast<long>(aus.size())) << what;
}

TEST(SimulatorProperties, AddingNodesToAFixedStorageNeverRaisesAu) {
  std::vector<double> aus;
  for (uint64_t seed = 1; seed <= kScenarios; ++seed) {
    const Drawn d = RandomScenario(seed);
    double previous = 2;
    for (uint32_t nodes = 1; nodes <= 4; ++nodes) {
      Scenario s = d.s;
      s.cluster.nodes = nodes;
      const double au = AuOf(s);
      EXPECT_LE(au, previous + kTolerance) << d.text << "\n  at " << nodes << " nodes";
      if (nodes == 1) aus.push_back(au);
      previous = au;
    }
  }
  ExpectSpread(aus, "one node");
}

TEST(SimulatorProperties, MorePrefetchWorkersCacheOrBandwidthNeverLowersAu) {
  std::vector<double> aus;
  for (uint64_t seed = 101; seed < 101 + kScenarios; ++seed) {
    Drawn d = RandomScenario(seed);
    Scenario& base = d.s;
    // Two epochs over a smaller dataset, with a RAM tier holding part of it (or none), so a
    // cache has hits to give.
    base.dataset.samples /= 4;
    base.run.epochs = 3;
    base.run.max_steps = 0;
    const uint64_t bytes = base.dataset.samples * base.dataset.sample_size;
    std::mt19937_64 g(seed);
    const bool cached = Between(g, 0, 2) > 0;
    if (cached) {
      const PolicyKind policy = Between(g, 0, 1) ? PolicyKind::kFillOnce : PolicyKind::kLru;
      base.cache_tiers = {TierOptions{
          .kind = TierKind::kMemory,
          .capacity = static_cast<uint64_t>(static_cast<double>(bytes) * LogUniform(g, 0.1, 0.6)),
          .policy = policy}};
    }
    const double au = AuOf(base);
    aus.push_back(au);
    struct Change {
      const char* what;
      Scenario s;
    };
    std::vector<Change> changes;
    changes.push_back({"prefetch + 2", base});
    changes.back().s.loader.prefetch += 2;
    changes.push_back({"workers x 2", base});
    changes.back().s.loader.workers *= 2;
    changes.push_back({"bandwidth x 2", base});
    changes.back().s.storage.model.bandwidth_bytes_per_second *= 2;
    for (const Change& c : changes) {
      const double changed = AuOf(c.s);
      EXPECT_GE(changed, au - kTolerance)
          << d.text << "\n  " << c.what << ": AU " << au << " -> " << changed;
    }
    // A larger RAM tier: over the epochs after the first. The first pays for filling it —
    // copies into fresh pages on the receiving thread, as the real tier's are — and where that
    // thread is the bottleneck while a later stage binds the later epochs, the whole run's AU
    // can drop a few points (seed 143: 47.3% -> 43.6% over 3 epochs, later epochs 56.6% and
    // 57.2%). scenarios/README.md says so.
    if (cached) {
      Scenario bigger = base;
      bigger.cache_tiers[0].capacity *= 2;
      const double before = LaterEpochsUtilization(base), after = LaterEpochsUtilization(bigger);
      EXPECT_GE(after, before - kTolerance)
          << d.text
          << fmt::format(", cache {} B {}", base.cache_tiers[0].capacity,
                         NameOf(base.cache_tiers[0].policy))
          << "\n  cache x 2: later epochs' utilization " << before << " -> " << after;
    }
  }
  ExpectSpread(aus, "base scenarios");
}

}  // namespace
}  // namespace stallscope
