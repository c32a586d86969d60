// Simulator: a scenario run as a discrete-event simulation on a simulated clock.
//
// It mirrors the Pipeline (pipeline/pipeline.h) stage by stage, with the same rules and, where
// the outcome is a decision rather than a duration, the same code:
//   - the sampler (pipeline/sampler.h): the same seeded order of every epoch;
//   - the cache: the same EvictionPolicy objects (cache/policy.h) laid out as the real tiers
//     lay them out (a memory tier's 16 shards and block rounding, a disk tier's 4 KiB
//     rounding), so hit ratios are exact, not estimated;
//   - storage: the same StorageModel (storage/storage_model.h) that SimulatedStorage runs on
//     real time: latency distribution, bandwidth shared by the reads in flight, IOPS, max in
//     flight, faults;
//   - the fetcher (one batch at a time, at most `prefetch` ahead of the device, prefetch + 1
//     staging slots freed when the copy is done), the worker pool (chunks of a batch, workers
//     per rank, cores per node), the copy (in order, at most one batch ahead of the device),
//     the step (emulated: step_time).
// CPU work is not run but charged at rates measured on this host at start-up (HostModel):
// bytes→float normalization, content verification, memcpy (RAM-tier hits and the emulated
// device's copy); `loader.preprocess.cost` is charged as written.
//
// Cluster (cluster.nodes × cluster.gpus_per_node ranks): each rank has its own loader and a
// strided shard of every epoch (rank r reads positions r, r + R, …; the remainder of n / R is
// dropped, like PyTorch's DistributedSampler with drop_last), the ranks of a node share its
// cache tiers and cores, all ranks share the storage (one StorageModel), and a `distributed`
// tier serves a sample held by another node's tiers over that node's network link
// (cluster.network_bandwidth into each node). Steps are synchronous: step k starts when every
// rank's batch k is on its device and step k - 1 has ended, so the slowest rank sets the pace.
// The result is a RunRecord as a real run writes it, analysed by the same code (Analyze); in a
// cluster each step's milestones are those of the rank whose batch arrived last (the one the
// cluster waited for) and counts are summed over ranks.
//
// Disk tiers outlive a variant: a later variant of the same Simulator that names the same
// path without `clear` starts from what the earlier one left (a warm restart).
//
// Thread-safety: a Simulator is used from one thread.
#ifndef STALLSCOPE_SIM_SIMULATOR_H_
#define STALLSCOPE_SIM_SIMULATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/policy.h"
#include "pipeline/analysis.h"
#include "pipeline/pipeline.h"
#include "pipeline/run_plan.h"
#include "config/scenario.h"

namespace stallscope {

// What CPU work costs on this host (measured by Measure(), or set by a test). The defaults
// charge nothing (1e12 B/s).
struct HostModel {
  uint32_t cores = 1;                        // std::thread::hardware_concurrency()
  double normalize_bytes_per_second = 1e12;  // NormalizeBytes: input bytes per second
  double verify_bytes_per_second = 1e12;     // Storage::Verify on synthetic content
  double memcpy_bytes_per_second = 1e12;     // a RAM-tier hit's copy; the emulated device's copy
  double burn_seconds_per_second = 1;        // what 1 s of loader.preprocess.cost takes
  double burn_all_cores_seconds_per_second = 1;  // the same with every core busy
  double fresh_write_bytes_per_second = 1e12;    // copying into never-touched memory (a RAM tier)
  // Landing a storage read's bytes on the receiving thread (the simulated storage generates
  // them there; a real network or disk path copies them): bytes per second.
  double receive_bytes_per_second = 1e12;
  // Measures the rates on buffers of `sample_bytes` (at most 16 MiB); takes about 0.1 s.
  static HostModel Measure(uint64_t sample_bytes);
  // The mean of two measurements (e.g. taken before and after a real run it is compared with).
  static HostModel Mean(const HostModel& a, const HostModel& b);
};

// The pinned host-to-device rate charged for a `gpu.device: cuda` copy: measured on the H200
// (docs/gpu, bench_h2d: 52.3 GB/s through the pipeline).
constexpr double kSimulatedH2DBytesPerSecond = 52.3e9;

struct SimulationStats {
  uint32_t ranks = 1;
  uint64_t events = 0;           // events processed (main queue and storage/disk/network models)
  double wall_seconds = 0;       // real time the simulation took
  double simulated_seconds = 0;  // simulated time it covered
};

struct SimulationResult {
  RunRecord record;       // as a real run's, merged over ranks
  AnalysisInputs inputs;  // for Analyze(): batch and workers summed over ranks
  SimulationStats stats;
};

class Simulator {
 public:
  explicit Simulator(const HostModel& host);
  ~Simulator();

  // Simulates one resolved scenario (one variant). Throws BadInput (pipeline/runner.h) for
  // what cannot be simulated.
  SimulationResult Run(const Scenario& scenario);
  // Run() and Analyze(): the VariantResult a real run of the scenario would report.
  // `record`, when given, receives the simulated run's record (for a trace or metrics).
  VariantResult RunVariant(const Scenario& scenario, SimulationStats* stats = nullptr,
                           RunRecord* record = nullptr);

  // The plan each rank's loader runs in a simulation of `scenario` (the Pipeline's own
  // function, pipeline/run_plan.h, over a rank's shard). Throws BadInput as Run() does.
  static RunPlan PlanFor(const Scenario& scenario);

  const HostModel& host() const { return host_; }
  // Replaces the host model (a validation re-measures it next to each real run: a shared
  // machine's speed drifts by several per cent within minutes).
  void set_host(const HostModel& host) { host_ = host; }
  // Forgets the disk tiers earlier variants left (each --max-accelerators trial starts cold).
  void ForgetDisks() { disks_.clear(); }

 private:
  class Run_;

  HostModel host_;
  // Disk tiers' policies by "path|dataset|node", kept between variants.
  std::map<std::string, std::unique_ptr<EvictionPolicy>> disks_;
};

// The scenario as a real run on this host can measure it, for validating the simulator: one
// node with one GPU, on the emulated device, without the distributed tier (no peers).
Scenario OnThisHost(Scenario scenario);

// Throws BadInput (exit 2) for a scenario the simulator cannot run, naming the key.
void CheckSimulatable(const Scenario& scenario);

// MLPerf Storage's headline figure by search over cluster size: the largest number of
// accelerators (cluster.nodes × gpus_per_node, gpus_per_node as given) whose simulated AU stays
// at or above `au`. AU falls as nodes are added (they share the storage), so nodes are doubled
// until AU drops below the target, then bisected.
struct MaxAccelerators {
  uint32_t nodes = 0;  // 0: even one node misses the target
  uint64_t accelerators = 0;
  double au = 0;  // at `nodes`
  struct Try {
    uint32_t nodes;
    uint64_t accelerators;
    double au;
  };
  std::vector<Try> tried;           // in the order simulated
  bool limited_by_dataset = false;  // stopped where every rank would get under one batch
};
MaxAccelerators FindMaxAccelerators(Simulator& simulator, const Scenario& scenario, double au);

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_SIMULATOR_H_
