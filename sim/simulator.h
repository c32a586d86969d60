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
// CPU work is not run but charged at the rates of the scenario's node (cluster.node,
// config/node_options.h): bytes→float normalization, content verification, JPEG decode,
// landing received bytes, memcpy (RAM-tier hits), one large copy (the emulated device's copy of
// a batch, and its checkpoint snapshot), copying into a RAM tier; `loader.preprocess.cost` at
// the node's cost factor. Storage reads pass through
// the node's NIC (a FIFO at node.nic that may overlap the storage's own transfer); the CUDA
// device's copy runs at node.h2d. Nothing here measures the host: the same scenario gives the
// same result every time.
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
// path without `clear` starts from what the earlier one left (a warm restart). The first
// simulation of a one-rank job to name a path without `clear` starts from what a real run
// would find there: the entries of this dataset in that directory on this host
// (DiskTier::Survey), admitted in the real tier's order.
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
#include "config/scenario.h"
#include "pipeline/analysis.h"
#include "pipeline/pipeline.h"
#include "pipeline/run_plan.h"

namespace stallscope {

struct SimulationStats {
  uint32_t ranks = 1;
  uint64_t events = 0;           // events processed (main queue and storage/disk/network models)
  double wall_seconds = 0;       // real time the simulation took
  double simulated_seconds = 0;  // simulated time it covered
};

// A disk tier a Simulator keeps between variants: its policy and how many entries it holds.
struct KeptDisk {
  std::unique_ptr<EvictionPolicy> policy;
  uint64_t entries = 0;
};
// The disk tiers a Simulator keeps between variants, by "path|dataset|node" (a later variant
// naming the same path starts warm).
using DiskPolicies = std::map<std::string, KeptDisk>;

struct SimulatedDataset;  // sim/rank_loop.h
// Directories a Simulator has listed, by path (a grid of simulations lists its files once).
using ListedDatasets = std::map<std::string, std::shared_ptr<const SimulatedDataset>>;

// What the simulated nodes' resources did, summed over nodes (for naming the one that binds).
struct NodeUsage {
  double seconds = 0;      // the simulated run's length
  double nic_seconds = 0;  // the NICs' busy time passing storage bytes on
  // The workers' CPU seconds by the work they did, and the receiving threads'.
  double cpu_normalize = 0, cpu_verify = 0, cpu_jpeg = 0, cpu_cost = 0, cpu_receive = 0;
};

struct SimulationResult {
  RunRecord record;       // as a real run's, merged over ranks
  AnalysisInputs inputs;  // for Analyze(): batch and workers summed over ranks
  SimulationStats stats;
  NodeUsage usage;
  // Several ranks: each rank's own stall split over the measured steps (its wait for the
  // slowest rank as sync); empty for one rank.
  std::vector<StageSeconds> rank_stalls;
};

class Simulator {
 public:
  Simulator();
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

  // Forgets the disk tiers earlier variants left (each --max-accelerators trial and each
  // advise point starts as the disk is now).
  void ForgetDisks() { disks_.clear(); }

 private:
  // Disk tiers' policies by "path|dataset|node", kept between variants.
  DiskPolicies disks_;
  ListedDatasets listed_;
};

// The scenario as a real run on this host can measure it, for validating the simulator: one
// node with one GPU, on the emulated device, without the distributed tier (no peers), the node
// being `host` (sim/host_model.h: measured here).
Scenario OnThisHost(Scenario scenario, const NodeOptions& host);

// The node resource that binds, in words, when one does ("node NIC: ...", "node CPU: jpeg
// decode ..."); empty otherwise. Appended to the verdict by RunVariant.
std::string NodeBinding(const Scenario& scenario, const VariantResult& result,
                        const NodeUsage& usage);

// How the simulator models the scenario's storage, in words, with where the model came from
// (the banner and the JSON's storage_model): a directory without storage.profile or storage
// keys is modelled as storage without limits, and says so.
std::string DescribeStorageModel(const Scenario& scenario);

// Throws BadInput (exit 2) for a scenario the simulator cannot run, naming the key.
void CheckSimulatable(const Scenario& scenario);

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_SIMULATOR_H_
