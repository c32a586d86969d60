// Simulator tests that need no real run: closed forms (storage-bound clusters, fill-once hit
// ratios), the distributed tier, stragglers, determinism and bad input. The validation against
// real runs is tests/simulator_validation_test.cc.
#include "sim/simulator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "app/runner.h"
#include "cache/disk_tier.h"
#include "sim/max_accelerators.h"
#include "storage/content.h"
#include "storage/synthetic.h"

namespace stallscope {
namespace {

// A fixed node, so the tests do not depend on this machine's speed (or the defaults').
NodeOptions TestNode() {
  NodeOptions h;
  h.cores = 64;
  h.normalize = 2e9;
  h.verify = 4e9;
  h.memcpy = 20e9;
  h.fill = 5e9;
  h.receive = 1e12;
  h.nic = 1e12;
  h.cost_factor = h.cost_factor_busy = 1;  // the closed forms assume nothing but the storage
  return h;
}

// A storage-bound scenario: no latency, no CPU work, no cache.
Scenario StorageBound(uint32_t nodes, uint32_t gpus, double bandwidth) {
  Scenario s;
  s.file = "test.yaml";
  s.variant = "storage-bound";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = gpus;
  s.dataset.sample_size = 100000;  // 100 kB
  s.loader.batch_size = 32;
  s.loader.prefetch = 4;
  s.loader.preprocess.kind = PreprocessKind::kNone;
  s.run.verify = false;
  s.run.epochs = 1;
  s.gpu.device = DeviceKind::kEmulated;
  s.gpu.step_time = 0.100;  // per GPU: 32 × 100 kB / 0.1 s = 32 MB/s
  s.storage.kind = StorageKind::kSimulated;
  s.storage.model.bandwidth_bytes_per_second = bandwidth;
  s.storage.model.max_inflight = 1024;
  s.dataset.samples = static_cast<uint64_t>(nodes) * gpus * 32 * 40;  // 40 steps
  s.cluster.node = TestNode();
  return s;
}

// StorageBound at `bandwidth`, reading a real directory of `files` files of `bytes` each that
// this makes under the temporary directory (`name` and the pid); the caller removes it.
Scenario DirectoryBound(const std::string& name, int files, size_t bytes, double bandwidth) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("stallscope-simtest-" + name + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string data(bytes, 'x');
  for (int i = 0; i < files; ++i) std::ofstream(dir / ("f" + std::to_string(1000 + i))) << data;
  Scenario s = StorageBound(1, 1, bandwidth);
  s.storage.kind = StorageKind::kDirectory;
  s.dataset.path = dir.string();
  return s;
}

TEST(Simulator, StorageBoundClustersMatchBandwidthOverDemand) {
  Simulator sim;
  struct Case {
    uint32_t nodes, gpus;
    double bandwidth;
  };
  for (const Case c :
       {Case{4, 8, 512e6}, Case{16, 8, 1024e6}, Case{125, 8, 8000e6}, Case{2, 4, 64e6}}) {
    const Scenario s = StorageBound(c.nodes, c.gpus, c.bandwidth);
    const VariantResult v = sim.RunVariant(s);
    const double demand = c.nodes * c.gpus * 32 * 100000 / 0.100;  // bytes/s
    const double expected = std::min(1.0, c.bandwidth / demand);
    SCOPED_TRACE(testing::Message() << c.nodes << "x" << c.gpus << " at " << c.bandwidth / 1e6
                                    << " MB/s: AU " << v.au << ", expected " << expected);
    EXPECT_NEAR(v.au, expected, 0.02 * expected);
    EXPECT_EQ(v.gpus, c.nodes * c.gpus);
    EXPECT_EQ(v.bottleneck_stage, "fetch");
  }
}

// The node's cores are shared (issue #18): an emulated device's input copy is a memcpy on the
// host, so on one core it and the worker take turns, and a batch costs the host the sum of the
// two; on two cores they overlap and the slower of the two sets the pace. Ground truth: 8 ms
// of worker CPU (preprocess.cost) and an 8 ms copy (8 MiB at 1 GiB/s) per batch, 1 ms steps.
TEST(Simulator, OneCoreRunsTheWorkerAndTheEmulatedCopyInTurn) {
  Simulator sim;
  for (const uint32_t cores : {1u, 2u}) {
    Scenario s = StorageBound(1, 1, 0);
    s.dataset.sample_size = 1 << 20;
    s.loader.batch_size = 8;
    s.dataset.samples = 8 * 200;
    s.loader.workers = 1;
    s.loader.preprocess.cost = 1e-3;
    s.gpu.step_time = 1e-3;
    s.cluster.node.cores = cores;
    s.cluster.node.snapshot = 1 << 30;
    const VariantResult v = sim.RunVariant(s);
    const double expected = cores == 1 ? 1.0 / 16 : 1.0 / 8;
    SCOPED_TRACE(testing::Message()
                 << cores << " core(s): AU " << v.au << ", expected " << expected);
    EXPECT_NEAR(v.au, expected, 0.05 * expected);
  }
}

TEST(Simulator, FillOnceHitRatioIsCapacityOverDataset) {
  // 1600 samples of 64 KiB; a RAM tier of 25 MiB holds exactly 400 of them (a quarter):
  // blocks of 2 KiB split evenly over 16 shards, 25 samples per shard.
  Scenario s;
  s.file = "test.yaml";
  s.dataset.samples = 1600;
  s.dataset.sample_size = 64 * 1024;
  s.storage.model.bandwidth_bytes_per_second = 500e6;
  s.cache_tiers = {TierOptions{
      .kind = TierKind::kMemory, .capacity = 25ULL << 20, .policy = PolicyKind::kFillOnce}};
  s.loader.batch_size = 50;
  s.gpu.step_time = 0.010;
  s.run.epochs = 4;
  s.cluster.node = TestNode();
  Simulator sim;
  const VariantResult v = sim.RunVariant(s);
  ASSERT_EQ(v.epochs.size(), 4u);
  EXPECT_EQ(v.epochs[0].tiers[0].hits, 0u);
  for (int e = 1; e < 4; ++e) {
    EXPECT_EQ(v.epochs[e].tiers[0].hits, 400u) << "epoch " << e;
    EXPECT_DOUBLE_EQ(v.epochs[e].cache_hit_ratio, 0.25) << "epoch " << e;
  }
  EXPECT_EQ(v.cache[0].evictions, 0u);
}

// A node has one disk: per-rank disk tiers (cache.scope: rank) of one node's ranks share its
// read bandwidth; ranks on nodes of their own each have a whole disk.
TEST(Simulator, RanksOfANodeShareItsDisk) {
  Simulator sim;
  for (const uint32_t gpus : {4u, 1u}) {
    const uint32_t nodes = 4 / gpus;
    Scenario s = StorageBound(nodes, gpus, 100e9);  // storage: never the limit
    s.run.epochs = 2;
    s.cache_scope = CacheScope::kRank;
    constexpr double kDisk = 16e6;  // bytes/s
    s.cache_tiers = {TierOptions{.kind = TierKind::kDisk,
                                 .path = "/unused",
                                 .capacity = 1ULL << 30,
                                 .policy = PolicyKind::kFillOnce,
                                 .read_bandwidth = kDisk,
                                 .read_latency = 0}};
    const VariantResult v = sim.RunVariant(s);
    ASSERT_EQ(v.epochs.size(), 2u);
    // Epoch 1: each rank finds in its own tier the share h of its batch it read in epoch 0 (the
    // order is resharded every epoch), and reads it from its node's disk. The disk's demand:
    // gpus × 32 MB/s × h per node.
    const double h = v.epochs[1].cache_hit_ratio;
    ASSERT_GT(h, 0.1);
    const double demand = gpus * 32e6 * h;
    const double expected = std::min(1.0, kDisk / demand);
    SCOPED_TRACE(testing::Message() << nodes << "x" << gpus << ": hit ratio " << h
                                    << ", disk demand " << demand / 1e6 << " MB/s per node");
    EXPECT_NEAR(1 - v.epochs[1].gpu_idle_fraction, expected, 0.08);
  }
}

TEST(Simulator, DistributedTierServesTheUnionOfTheNodesCaches) {
  // 4 nodes, each RAM tier a quarter of the dataset (and some slack: a tier's 16 shards do not
  // get exactly even shares of a node's ids): epoch 0 fills each with its own shard, so from
  // epoch 1 on every sample is a local or a peer hit and storage is not read.
  Scenario s = StorageBound(4, 2, 200e6);
  s.dataset.samples = 4 * 2 * 32 * 20;
  s.dataset.sample_size = 64 * 1024;
  const uint64_t quarter = s.dataset.samples / 4 * s.dataset.sample_size;
  s.cache_tiers = {
      TierOptions{
          .kind = TierKind::kMemory, .capacity = quarter * 3 / 2, .policy = PolicyKind::kFillOnce},
      TierOptions{.kind = TierKind::kDistributed}};
  s.cluster.network_bandwidth = 12.5e9;
  s.run.epochs = 3;
  Simulator sim;
  const VariantResult fast = sim.RunVariant(s);
  ASSERT_EQ(fast.cache.size(), 2u);
  EXPECT_EQ(fast.cache[1].name, "distributed");
  for (int e = 1; e < 3; ++e) {
    const TierEpoch& local = fast.epochs[e].tiers[0];
    const TierEpoch& peer = fast.epochs[e].tiers[1];
    EXPECT_NEAR(local.hit_ratio, 0.25, 0.02) << "epoch " << e;
    EXPECT_EQ(peer.hits, peer.lookups) << "epoch " << e << ": every local miss is a peer hit";
    EXPECT_DOUBLE_EQ(fast.epochs[e].cache_hit_ratio, 1.0);
  }
  // Later epochs read nothing from storage: all storage bytes are epoch 0's.
  EXPECT_EQ(fast.bytes_storage, s.dataset.samples * s.dataset.sample_size);

  // The same cluster on a slow network: peer hits cost transfers, the GPUs wait.
  s.cluster.network_bandwidth = 20e6;
  const VariantResult slow = sim.RunVariant(s);
  EXPECT_GT(slow.gpu_idle_fraction, fast.gpu_idle_fraction + 0.2);
}

TEST(Simulator, SynchronousStepsWaitForTheSlowestRank) {
  // A heavy latency tail and no prefetch: each step waits for the slowest of R ranks, so idle
  // grows with the cluster though each rank's own demand and storage share are unchanged.
  auto idle_at = [](uint32_t nodes) {
    Scenario s = StorageBound(nodes, 1, 0);
    s.storage.model.latency_p50_seconds = 0.005;
    s.storage.model.latency_p99_seconds = 0.200;
    s.loader.prefetch = 0;
    Simulator sim;
    return sim.RunVariant(s).gpu_idle_fraction;
  };
  const double one = idle_at(1), many = idle_at(64);
  EXPECT_GT(many, one + 0.15) << "1 rank idle " << one << ", 64 ranks idle " << many;
}

TEST(Simulator, SameScenarioSameAnswer) {
  Scenario s = StorageBound(2, 4, 100e6);
  s.storage.model.latency_p50_seconds = 0.002;
  s.storage.model.latency_p99_seconds = 0.020;
  Simulator a, b;
  const VariantResult x = a.RunVariant(s), y = b.RunVariant(s);
  EXPECT_EQ(x.gpu_idle_fraction, y.gpu_idle_fraction);
  EXPECT_EQ(x.samples_delivered, y.samples_delivered);
}

// A kept disk tier (clear: false) in a one-rank simulation starts as a real tier opened there
// would: the test leaves every other sample of the dataset in the directory with a real
// DiskTier, and one epoch, which reads each sample once, hits exactly those. Entries of
// another dataset, `clear: true` and a job of two ranks (whose tiers this host's directory
// does not describe) start empty.
TEST(Simulator, AKeptDiskTierStartsWithTheEntriesARealRunWouldFindThere) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("stallscope-sim-disk-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Scenario s = StorageBound(1, 1, 100e6);
  s.cache_tiers = {TierOptions{.kind = TierKind::kDisk,
                               .path = dir.string(),
                               .capacity = 1ULL << 30,
                               .policy = PolicyKind::kFillOnce}};
  const uint64_t n = s.dataset.samples;
  uint64_t left = 0;
  {
    DiskTierOptions o;
    o.tier = s.cache_tiers[0];
    o.num_ids = n;
    o.max_item_bytes = s.dataset.sample_size;
    o.fingerprint = SyntheticFingerprint({.dataset = s.dataset, .seed = s.seed});
    o.quiet = true;
    DiskTier tier(o);
    for (uint64_t id = 0; id < n; id += 2) {
      const uint64_t size =
          SampleSizeOf(s.seed, id, s.dataset.sample_size, s.dataset.sample_size_stdev);
      tier.Admit(id, std::vector<std::byte>(size), 0);
      if (++left % 16 == 0) tier.Flush();  // never more writes in flight than buffers
    }
    tier.Flush();
    ASSERT_EQ(tier.Stats().write_drops, 0u);
  }
  ASSERT_EQ(DiskTier::Survey(dir.string(), SyntheticFingerprint({s.dataset, s.seed}), n, false)
                .entries.size(),
            left);

  const VariantResult warm = Simulator().RunVariant(s);
  ASSERT_EQ(warm.cache.size(), 1u);
  EXPECT_EQ(warm.cache[0].entries_at_start, left);
  EXPECT_EQ(warm.epochs[0].tiers[0].hits, left);

  Scenario other = s;  // another dataset: its entries are not this one's
  other.seed = s.seed + 1;
  Scenario cleared = s;
  cleared.cache_tiers[0].clear = true;
  Scenario two_ranks = s;
  two_ranks.cluster.gpus_per_node = 2;  // the same dataset, a shard of 640 samples each
  for (const Scenario* c : {&other, &cleared, &two_ranks}) {
    const VariantResult v = Simulator().RunVariant(*c);
    EXPECT_EQ(v.cache[0].entries_at_start, 0u) << c->seed << " " << c->cluster.gpus_per_node;
    EXPECT_EQ(v.epochs[0].tiers[0].hits, 0u);
  }
  // The simulation changes nothing on disk.
  EXPECT_EQ(DiskTier::Survey(dir.string(), SyntheticFingerprint({s.dataset, s.seed}), n, false)
                .entries.size(),
            left);
  std::filesystem::remove_all(dir);
}

// A directory read cold (DirectoryStorage::BeginEpoch): each epoch's first read waits until
// the last epoch's reads are in, then for the eviction. Storage-bound at 32 MB/s with no
// latency, the reads take the same time either way, so three epochs add three evictions.
TEST(Simulator, AColdDirectoryWaitsForTheLastEpochsReadsThenTheEviction) {
  // 64 files: 2 batches of 32 per epoch, 0.1 s each
  Scenario s = DirectoryBound("cold", 64, 100000, 32e6);
  s.run.epochs = 3;
  s.gpu.step_time = 0.001;
  Simulator sim;
  const double warm = sim.RunVariant(s).wall_seconds;
  s.storage.cold = true;
  const double barrier_only = sim.RunVariant(s).wall_seconds;
  s.storage.model.evict_seconds = 0.5;
  const double evicting = sim.RunVariant(s).wall_seconds;
  std::filesystem::remove_all(s.dataset.path);
  EXPECT_NEAR(warm, 6 * 0.1, 0.02);
  EXPECT_NEAR(barrier_only, warm, 0.01);
  EXPECT_NEAR(evicting - warm, 3 * 0.5, 0.01) << "one eviction before each of the 3 epochs";
}

// What a directory read costs the host's other cores (storage.host_per_read, measured by
// calibrate --dir beside a busy thread on every core) is CPU work on the node's cores, which
// nothing waits for but which the workers share the cores with. Ground truth, by the work
// the one core must do: 128 reads at once from storage with no latency, 2 ms of worker CPU
// per sample, so 256 ms of CPU alone and 512 ms with 2 ms more per read.
TEST(Simulator, WhatAReadCostsTheOtherCoresIsWorkTheCoresDo) {
  Scenario s = DirectoryBound("host", 64, 100000, 1e12);
  s.run.epochs = 2;
  s.gpu.step_time = 1e-6;
  s.loader.workers = 1;
  s.loader.preprocess.cost = 2e-3;
  s.cluster.node.cores = 1;
  s.cluster.node.snapshot = 1e15;  // the emulated copy costs nothing
  Simulator sim;
  const double alone = sim.RunVariant(s).wall_seconds;
  s.storage.model.host_per_read_seconds = 2e-3;
  const double charged = sim.RunVariant(s).wall_seconds;
  s.cluster.node.cores = 2;  // a core for the worker and one for the copy: nothing shared
  const double two_cores = sim.RunVariant(s).wall_seconds;
  std::filesystem::remove_all(s.dataset.path);
  EXPECT_NEAR(alone, 0.256, 0.01);
  EXPECT_NEAR(charged, 0.512, 0.02);
  EXPECT_NEAR(two_cores, 0.256, 0.01) << "charged only where the cores are shared";
}

// A read waits for a core beside busy threads even where a core is free
// (storage.read_wait_partial, measured by calibrate --dir beside busy threads on every core but
// one): the simulator adds it to a read that completes while the node's other threads are busy,
// in proportion to them. Ground truth the test sets: 256 reads one at a time, 1 ms each, on 2
// cores, in batches of 4. With no CPU work nothing waits (256 ms). With one worker spending
// 1.5 ms per sample the worker binds (the first batch's 4 ms of reads, then 384 ms of work)
// until reads wait 1 ms more whenever it is busy: then each read takes between 1.75 ms (the
// worker busy at three completions in four) and 2 ms (at every one).
TEST(Simulator, AReadWaitsBesideBusyThreadsWhereACoreIsFree) {
  Scenario s = DirectoryBound("partial", 256, 1000, 1e12);
  s.gpu.step_time = 1e-6;
  s.loader.batch_size = 4;
  s.loader.workers = 1;
  s.loader.io.io_depth = 1;
  s.loader.io.io_threads = 1;
  s.storage.model.latency_p50_seconds = s.storage.model.latency_p99_seconds = 1e-3;
  s.storage.model.cpu_per_read_seconds = 1e-6;
  s.storage.model.read_wait_busy_seconds = 1e-3;
  s.cluster.node.cores = 2;
  s.cluster.node.snapshot = 1e15;  // the emulated copy costs nothing
  Simulator sim;
  s.storage.model.read_wait_partial_seconds = 1e-3;
  const double fetch_alone = sim.RunVariant(s).wall_seconds;
  s.loader.preprocess.cost = 1.5e-3;
  const double waiting = sim.RunVariant(s).wall_seconds;
  s.storage.model.read_wait_partial_seconds = 0;
  const double not_waiting = sim.RunVariant(s).wall_seconds;
  std::filesystem::remove_all(s.dataset.path);
  EXPECT_NEAR(fetch_alone, 0.256, 0.003) << "no busy thread: no wait";
  EXPECT_NEAR(not_waiting, 0.004 + 0.384, 0.004);
  EXPECT_GE(waiting, 256 * 1.75e-3);
  EXPECT_LE(waiting, 256 * 2e-3 + 0.008);
}

TEST(Simulator, FaultsAreRetriedOrSkippedAsInRealRuns) {
  Scenario s = StorageBound(1, 1, 0);
  s.storage.model.faults.error_rate = 0.02;
  s.loader.on_error = OnError::kRetry;
  s.loader.retries = 5;
  Simulator sim;
  const VariantResult retried = sim.RunVariant(s);
  EXPECT_GT(retried.read_errors, 0u);
  EXPECT_EQ(retried.samples_skipped, 0u);
  EXPECT_EQ(retried.samples_delivered, s.dataset.samples);
  s.loader.on_error = OnError::kSkip;
  const VariantResult skipped = sim.RunVariant(s);
  EXPECT_GT(skipped.samples_skipped, 0u);
  EXPECT_EQ(skipped.samples_delivered + skipped.samples_skipped, s.dataset.samples);
  s.loader.on_error = OnError::kFail;
  EXPECT_THROW(sim.RunVariant(s), RunFailed);
}

TEST(Simulator, MaxAcceleratorsIsBandwidthOverPerGpuDemandAtTheTarget) {
  // Per GPU 32 MB/s; 1 GB/s keeps AU >= 0.9 up to 1e9 / (0.9 × 32e6) = 34.7 GPUs: 4 nodes of 8.
  Scenario s = StorageBound(1, 8, 1e9);
  s.dataset.samples = 400000;
  s.run.max_steps = 30;
  Simulator sim;
  const MaxAccelerators m = FindMaxAccelerators(sim, s, 0.9);
  EXPECT_EQ(m.nodes, 4u);
  EXPECT_EQ(m.accelerators, 32u);
  EXPECT_GE(m.au, 0.9);
  bool tried_five = false;
  for (const auto& t : m.tried) {
    if (t.nodes == 5) {
      tried_five = true;
      EXPECT_LT(t.au, 0.9);
    }
  }
  EXPECT_TRUE(tried_five);
}

TEST(Simulator, TheVerdictNamesTheNodeResourceThatBinds) {
  // 2 nodes of 8 GPUs, each GPU wanting 2 GB/s (16 GB/s per node), on 100 GB/s of storage
  // but a 10 GB/s NIC per node: AU 10 / 16.
  Scenario s = StorageBound(2, 8, 100e9);
  s.dataset.sample_size = 6250000;  // 32 × 6.25 MB / 0.1 s = 2 GB/s per GPU
  s.cluster.node.nic = 10e9;
  Simulator sim;
  const VariantResult nic = sim.RunVariant(s);
  EXPECT_EQ(nic.bottleneck_stage, "fetch");
  EXPECT_NEAR(nic.au, 10.0 / 16, 0.03) << nic.bottleneck_text;
  EXPECT_NE(nic.bottleneck_text.find("node NIC: 10.00 GB/s"), std::string::npos)
      << nic.bottleneck_text;

  // JPEG decode on 100 cores for 8 GPUs: each GPU wants 32 × 100 kB / 0.1 s = 32 MB/s of
  // JPEG, 256 MB/s per node; 100 cores at 2 MB/s decode 200 MB/s: AU 200 / 256.
  Scenario j = StorageBound(1, 8, 0);
  j.loader.preprocess.kind = PreprocessKind::kJpegDecode;
  j.loader.workers = 13;  // 104 workers for 100 cores
  j.cluster.node.cores = 100;
  j.cluster.node.jpeg_decode = 2e6;
  const VariantResult cpu = sim.RunVariant(j);
  EXPECT_EQ(cpu.bottleneck_stage, "preprocess") << cpu.bottleneck_text;
  EXPECT_NEAR(cpu.au, 200.0 / 256, 0.04) << cpu.bottleneck_text;
  EXPECT_NE(cpu.bottleneck_text.find("node CPU: jpeg decode"), std::string::npos)
      << cpu.bottleneck_text;
  // Normalized on the device, the decode runs at jpeg_decode_device: 100 cores at 2.4 MB/s
  // decode 240 MB/s of the 256 wanted.
  j.loader.preprocess.normalize_on = NormalizeOn::kDevice;
  j.cluster.node.jpeg_decode_device = 2.4e6;
  const VariantResult device = sim.RunVariant(j);
  EXPECT_EQ(device.bottleneck_stage, "preprocess") << device.bottleneck_text;
  EXPECT_NEAR(device.au, 240.0 / 256, 0.04) << device.bottleneck_text;
  j.loader.preprocess.normalize_on = NormalizeOn::kHost;
  // With cores to spare the workers bind, not the node: no node named.
  j.cluster.node.cores = 400;
  j.loader.workers = 2;
  const VariantResult workers = sim.RunVariant(j);
  EXPECT_EQ(workers.bottleneck_text.find("node CPU"), std::string::npos) << workers.bottleneck_text;
}

TEST(Simulator, BadInputNamesTheKey) {
  Scenario s = StorageBound(1, 1, 0);
  s.cache_tiers = {TierOptions{.kind = TierKind::kDistributed}};
  s.cluster.network_bandwidth = 0;
  try {
    CheckSimulatable(s);
    FAIL() << "a distributed tier without a network bandwidth was accepted";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.network_bandwidth"), std::string::npos);
  }
  // More ranks than samples: each rank needs a shard.
  Scenario tiny = StorageBound(8, 8, 0);
  tiny.dataset.samples = 10;
  Simulator sim;
  EXPECT_THROW(sim.RunVariant(tiny), BadInput);
}

TEST(Simulator, ScenarioFileRefusesAClusterOfZeroNodesAndADistributedTierWithoutNetwork) {
  const auto zero = ScenarioFile::Parse("cluster: {nodes: 0, gpus_per_node: 8}\n", "z.yaml");
  try {
    zero.Resolve("base");
    FAIL() << "zero nodes accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.nodes"), std::string::npos) << e.what();
  }
  const auto dist = ScenarioFile::Parse(
      "cluster: {nodes: 4}\ncache:\n  tiers:\n    - {kind: memory, capacity: 1GiB}\n"
      "    - {kind: distributed}\n",
      "d.yaml");
  try {
    dist.Resolve("base");
    FAIL() << "a distributed tier without cluster.network_bandwidth accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.network_bandwidth"), std::string::npos)
        << e.what();
  }
  const auto ok = ScenarioFile::Parse(
      "cluster: {nodes: 4, network_bandwidth: 12.5GB/s}\ncache:\n  tiers:\n"
      "    - {kind: memory, capacity: 1GiB}\n    - {kind: distributed}\n",
      "ok.yaml");
  const Scenario s = ok.Resolve("base");
  ASSERT_EQ(s.cache_tiers.size(), 2u);
  EXPECT_EQ(s.cache_tiers[1].kind, TierKind::kDistributed);
  EXPECT_DOUBLE_EQ(s.cluster.network_bandwidth, 12.5e9);
}

}  // namespace
}  // namespace stallscope
