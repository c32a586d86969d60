// advise against an exhaustive grid over the same space, on scenarios whose answer is known
// by construction: latency that prefetch hides, CPU work that more workers (within the cores)
// absorb, storage that only a cache of the whole dataset (or faster storage) lifts, and a
// case with no solution in the space.
#include "sim/advise.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cache/disk_tier.h"
#include "storage/content.h"
#include "storage/generate.h"
#include "storage/synthetic.h"
#include "tests/timing.h"

namespace stallscope {
namespace {

// 20 steps an epoch of 20 ms, batch 16 of 16 KiB: 13 MB/s of demand.
const std::string kBase = R"(name: advise
dataset: {samples: 320, sample_size: 16KiB}
gpu: {device: emulated, step_time: 20ms}
cluster: {node: {cores: 4}}
)";

struct Case {
  std::string name, yaml;
  double target_idle;
  // The top change's knob key prefix; "*": any; empty: none reaches; "?": whatever the grid
  // finds (a solution or none), advise must match it.
  std::string expect_knob;
  bool whole = false;  // yaml is the whole scenario (kBase not prepended)
};

std::string Compare(const Case& c, const ScenarioFile& file, const std::string& variant,
                    const std::vector<Override>& sets = {});

// Returns the text of advise's top change ("" when none reaches).
std::string Check(const Case& c) {
  return Compare(c, ScenarioFile::Parse(c.whole ? c.yaml : kBase + c.yaml, c.name + ".yaml"),
                 "base");
}

std::string Compare(const Case& c, const ScenarioFile& file, const std::string& variant,
                    const std::vector<Override>& sets) {
  AdviseOptions o;
  o.variant = variant;
  o.sets = sets;
  o.target_idle = c.target_idle;
  // Every knob that applies to a one-node scenario: prefetch, workers, ram, bandwidth, cores.
  // The grid's best point, its cheapest points first (the same best as the whole grid's:
  // TheCheapestPointsFirstFindTheWholeGridsBest).
  Simulator sim;
  const AdviseResult grid = AdviseGridCheapestFirst(file, o, sim);
  const AdviseResult adv = Advise(file, o, sim);
  EXPECT_EQ(adv.space, grid.space);
  std::printf("%s: now idle %.1f%%; grid of %llu points (%llu simulated, cheapest first)",
              c.name.c_str(), adv.current.idle * 100, static_cast<unsigned long long>(grid.space),
              static_cast<unsigned long long>(grid.simulations));
  if (!grid.ranked.empty()) {
    const AdvisePoint& g = grid.points[grid.ranked.front()];
    std::printf(", best idle %.1f%% size %.0f", g.idle * 100, g.size);
  }
  std::printf("; advise %llu simulations", static_cast<unsigned long long>(adv.simulations));
  if (!adv.ranked.empty()) {
    const AdvisePoint& a = adv.points[adv.ranked.front()];
    std::printf(", top idle %.1f%% size %.0f: %s", a.idle * 100, a.size, PointSetText(a).c_str());
  }
  std::printf("\n");
  EXPECT_GE(grid.space, 200u) << c.name << ": a space this small says little";
  EXPECT_LE(adv.simulations, grid.space / 10) << c.name;
  if (c.expect_knob.empty() || (c.expect_knob == "?" && grid.ranked.empty())) {
    EXPECT_TRUE(grid.ranked.empty()) << c.name << ": the case was meant to have no solution";
    EXPECT_TRUE(adv.ranked.empty()) << c.name;
    // The closest point is the grid's closest, within 1 pp.
    EXPECT_LE(adv.points[adv.closest].idle, grid.points[grid.closest].idle + 0.01) << c.name;
    return "";
  }
  if (grid.ranked.empty() || adv.ranked.empty()) {
    ADD_FAILURE() << c.name << ": the case was meant to have a solution; the grid found "
                  << grid.ranked.size() << ", advise " << adv.ranked.size();
    return "";
  }
  const AdvisePoint& g = grid.points[grid.ranked.front()];
  const AdvisePoint& a = adv.points[adv.ranked.front()];
  auto cost = [](const AdvisePoint& p) { return p.priced ? p.cost_per_day : p.size; };
  EXPECT_LE(cost(a), cost(g) + 1e-9) << c.name << ": advise's top costs more than the grid's best";
  EXPECT_LE(a.idle, g.idle + 0.01) << c.name;
  if (c.expect_knob != "*" && c.expect_knob != "?") {  // one of the top point's changes
    EXPECT_TRUE(
        std::any_of(a.changes.begin(), a.changes.end(),
                    [&](const AdviseChange& ch) { return ch.key.starts_with(c.expect_knob); }))
        << c.name << ": top change " << PointSetText(a);
  }
  std::string text;
  for (const AdviseChange& ch : a.changes) text += ch.text + "; ";
  return text;
}

// 60 ms median reads, 3 steps' worth: prefetch 1 idles; 4 or more hides it.
const Case kLatency{"latency",
                    "storage: {kind: simulated, bandwidth: 100MB/s, latency: {p50: 60ms, p99: "
                    "90ms}, max_inflight: 256}\n"
                    "loader: {batch_size: 16, prefetch: 1, workers: 1, preprocess: none}\n"
                    "run: {epochs: 2}\n",
                    0.05, "loader.prefetch"};
// Storage-bound (3.3 MB/s against 13 MB/s); RAM is cheap and storage bandwidth dear.
const Case kPriced{"priced",
                   "storage: {kind: simulated, bandwidth: 3.3MB/s}\n"
                   "loader: {batch_size: 16, prefetch: 4, workers: 1, preprocess: none}\n"
                   "run: {epochs: 8}\n"
                   "cost: {gpu_hour: 2.5, ram_gib_day: 0.5, storage_gbps_day: 5000, core_day: 1}\n",
                   0.30, "cache.tiers"};
// One epoch from storage at a tenth of the demand: no cache helps within one epoch, and
// storage 4x faster still idles 60%.
const Case kNone{"none",
                 "storage: {kind: simulated, bandwidth: 1.3MB/s}\n"
                 "loader: {batch_size: 16, prefetch: 4, workers: 1, preprocess: none}\n"
                 "run: {epochs: 1}\n",
                 0.01, ""};

TEST(Advise, LatencyIsHiddenByPrefetch) { Check(kLatency); }

// Ground truth for the grid the other tests compare with: simulating the grid's cheapest points
// first, and stopping at the first cost that reaches the target, finds the same best point as
// simulating all of it (sized and priced), with fewer simulations; where nothing reaches, it is
// the whole grid.
TEST(Advise, TheCheapestPointsFirstFindTheWholeGridsBest) {
  for (const Case& c : {kLatency, kPriced, kNone}) {
    const ScenarioFile file = ScenarioFile::Parse(kBase + c.yaml, c.name + ".yaml");
    AdviseOptions o;
    o.variant = "base";
    o.target_idle = c.target_idle;
    Simulator sim;
    const AdviseResult all = AdviseExhaustive(file, o, sim);
    const AdviseResult first = AdviseGridCheapestFirst(file, o, sim);
    std::printf("%s: the whole grid %llu simulations, cheapest first %llu\n", c.name.c_str(),
                static_cast<unsigned long long>(all.simulations),
                static_cast<unsigned long long>(first.simulations));
    EXPECT_EQ(all.space, first.space);
    EXPECT_EQ(all.simulations, all.space);
    if (c.expect_knob.empty()) {
      EXPECT_TRUE(all.ranked.empty()) << c.name;
      EXPECT_TRUE(first.ranked.empty()) << c.name;
      EXPECT_EQ(first.simulations, all.simulations) << c.name;
      EXPECT_EQ(PointSetText(first.points[first.closest]), PointSetText(all.points[all.closest]));
      continue;
    }
    ASSERT_FALSE(all.ranked.empty()) << c.name;
    ASSERT_FALSE(first.ranked.empty()) << c.name;
    EXPECT_LT(first.simulations, all.simulations / 2) << c.name;
    const AdvisePoint &a = all.points[all.ranked.front()], &b = first.points[first.ranked.front()];
    EXPECT_EQ(PointSetText(b), PointSetText(a)) << c.name;
    EXPECT_DOUBLE_EQ(b.idle, a.idle) << c.name;
    // Every point that ranks with the front (as cheap) was simulated by both, alike.
    size_t ties = 0;
    for (size_t i : all.ranked) {
      const AdvisePoint& p = all.points[i];
      if (p.size != a.size || std::abs(p.cost_per_day - a.cost_per_day) > 1e-9) continue;
      ++ties;
      EXPECT_TRUE(std::any_of(first.ranked.begin(), first.ranked.end(),
                              [&](size_t j) {
                                return PointSetText(first.points[j]) == PointSetText(p) &&
                                       first.points[j].idle == p.idle;
                              }))
          << c.name << ": " << PointSetText(p);
    }
    EXPECT_GE(ties, 1u);
  }
}

TEST(Advise, SynchronousCheckpointsAreMadeAsynchronous) {
  // 16 MiB written every 20 steps (0.4 s) at 100 MB/s: each write holds the device 0.17 s
  // (~30% idle); beside the steps the writes need 42 MB/s, the loader's reads 13 MB/s.
  Check({"checkpoint",
         "storage: {kind: simulated, bandwidth: 100MB/s, latency: {p50: 1ms, p99: 2ms}}\n"
         "loader: {batch_size: 16, prefetch: 2, workers: 1, preprocess: none}\n"
         "checkpoint: {every: 20, size: 16MiB, mode: sync}\n"
         "run: {epochs: 5}\n",
         0.05, "checkpoint.mode"});
}

TEST(Advise, CpuWorkIsAbsorbedByWorkersWithinTheCores) {
  // 2.5 ms of CPU per sample, 16 a step of 20 ms: 2 workers' worth; the node has 4 cores.
  Check(
      {"workers",
       "storage: {kind: simulated, bandwidth: 100MB/s}\n"
       "loader: {batch_size: 16, prefetch: 2, workers: 1, preprocess: {kind: none, cost: 2500us}}\n"
       "run: {epochs: 2}\n",
       0.05, "loader.workers"});
}

TEST(Advise, JpegDecodeOnTooFewCoresIsNormalizedOnTheDevice) {
  // 16 samples of 16 KiB a 20 ms step: 13.1 MB/s of JPEG. 4 cores decode and normalize 3 MB/s
  // each (12 MB/s: preprocess-bound, about 8% idle); decoding only, with the normalization on
  // the device, 4 MB/s each (16 MB/s). More workers find no cores; more cores need more
  // workers too (two knobs). The one-knob answer is the device.
  const std::string top =
      Check({"jpeg",
             "name: advise\n"
             "dataset: {samples: 320, sample_size: 16KiB}\n"
             "gpu: {device: emulated, step_time: 20ms}\n"
             "storage: {kind: simulated, bandwidth: 100MB/s}\n"
             "loader: {batch_size: 16, prefetch: 4, workers: 4, preprocess: jpeg-decode}\n"
             "cluster: {node: {cores: 4, jpeg_decode: 3MB/s, jpeg_decode_device: 4MB/s}}\n"
             "run: {epochs: 2}\n",
             0.05, "loader.preprocess", /*whole=*/true});
  EXPECT_NE(top.find("normalized on the device"), std::string::npos) << top;
}

TEST(Advise, StorageAtAQuarterOfTheDemandNeedsTheWholeDatasetCachedOrFasterStorage) {
  // 3.3 MB/s against 13 MB/s: epoch 0 idles 75% whatever happens; over 8 epochs a cache of
  // the whole dataset makes the later epochs fed (idle ~27% in all), as does storage 4x faster.
  Check({"storage",
         "storage: {kind: simulated, bandwidth: 3.3MB/s}\n"
         "loader: {batch_size: 16, prefetch: 4, workers: 1, preprocess: none}\n"
         "run: {epochs: 8}\n",
         0.30, "*"});
}

TEST(Advise, PricesPickTheCheaperOfCacheAndFasterStorage) {
  Check(kPriced);  // the cache wins
}

TEST(Advise, NothingInTheSpaceReachesAnImpossibleTarget) { Check(kNone); }

TEST(Advise, OnlyADistributedCacheFeedsAClusterWhoseNodesHoldAQuarterEach) {
  // 4 nodes x 1 GPU sharing storage at 1/6 of their 52 MB/s; each node's RAM (2 MiB) holds a
  // quarter of the 5.2 MB dataset, so no node can cache it all. Over 16 epochs a distributed
  // tier (the union of the nodes' quarters) leaves only epoch 0 reading storage: idle
  // ~5 / 21 = 24%; storage 4x faster still feeds only 2/3 of the demand (33%).
  const std::string top = Check({"distributed", R"(name: distributed
dataset: {samples: 320, sample_size: 16KiB}
storage: {kind: simulated, bandwidth: 8.7MB/s}
cache: {tiers: [{kind: memory, capacity: 1400KiB, policy: fill-once}]}
loader: {batch_size: 4, prefetch: 4, workers: 1, preprocess: none}
gpu: {device: emulated, step_time: 5ms}
run: {epochs: 16}
cluster: {nodes: 4, gpus_per_node: 1, network_bandwidth: 1GB/s,
          node: {cores: 4, memory: 2MiB, nic: 1GB/s}}
)",
                                 0.28, "cache.tiers", true});
  EXPECT_NE(top.find("distributed"), std::string::npos) << top;
}

TEST(Advise, ANicBoundClusterNeedsAFasterNic) {
  // 2 nodes x 4 GPUs, storage fast (1 GB/s), each node's NIC 30 MB/s against its GPUs' 52 MB/s:
  // idle ~42%; a NIC twice as fast feeds them. Two epochs: no cache fills in time.
  Check({"nic", R"(name: nic
dataset: {samples: 2560, sample_size: 16KiB}
storage: {kind: simulated, bandwidth: 1GB/s}
loader: {batch_size: 16, prefetch: 4, workers: 1, preprocess: none}
gpu: {device: emulated, step_time: 20ms}
run: {epochs: 2}
cluster: {nodes: 2, gpus_per_node: 4, node: {cores: 4, nic: 30MB/s}}
)",
         0.05, "cluster.node.nic", true});
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

// A disk tier kept between runs (clear: false) over storage at half the demand: whether a
// simulation finds it warm changes its answer. Every point advise reports is what a fresh
// simulator predicts for it with the disk as it is on this host now, whatever the points
// simulated before it: first an empty directory, then one where a real tier left the whole
// dataset (as a finished run leaves it), where the current point no longer idles.
TEST(Advise, EveryPointStartsFromTheDiskAsItIsOnThisHost) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("stallscope-advise-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string yaml = kBase + R"(storage: {kind: simulated, bandwidth: 6.5MB/s}
cache:
  tiers: [{kind: disk, path: )" +
                           dir.string() + R"(, capacity: 64MiB, policy: lru}]
run: {epochs: 2}
)";
  const ScenarioFile file = ScenarioFile::Parse(yaml, "disk.yaml");
  AdviseOptions o;
  o.variant = "base";
  o.target_idle = 0.05;
  o.knobs = {"prefetch", "workers"};
  const auto advise_now = [&](size_t min_points) {
    Simulator sim;
    const AdviseResult adv = Advise(file, o, sim);
    EXPECT_GE(adv.points.size(), min_points);
    for (const AdvisePoint& p : adv.points) {
      Simulator fresh;
      const double idle = fresh.RunVariant(file.Resolve("base", PointSets(p))).gpu_idle_fraction;
      EXPECT_DOUBLE_EQ(p.idle, idle) << p.changes.size() << " changes";
    }
    return adv.current.idle;
  };
  const double empty = advise_now(3);
  // The case has signal: the same point on a disk one simulation warmed idles less.
  Simulator warm;
  const Scenario base = file.Resolve("base", {});
  EXPECT_DOUBLE_EQ(warm.RunVariant(base).gpu_idle_fraction, empty);
  EXPECT_LT(warm.RunVariant(base).gpu_idle_fraction, empty - 0.1);

  // A real tier leaves the whole dataset in the directory.
  const uint64_t n = base.dataset.samples;
  {
    DiskTierOptions d;
    d.tier = base.cache_tiers[0];
    d.num_ids = n;
    d.max_item_bytes = base.dataset.sample_size;
    d.fingerprint = SyntheticFingerprint({.dataset = base.dataset, .seed = base.seed});
    d.quiet = true;
    DiskTier tier(d);
    for (uint64_t id = 0; id < n; ++id) {
      tier.Admit(id,
                 std::vector<std::byte>(SampleSizeOf(base.seed, id, base.dataset.sample_size,
                                                     base.dataset.sample_size_stdev)),
                 0);
      if (id % 16 == 15) tier.Flush();  // never more writes in flight than buffers
    }
    tier.Flush();
    ASSERT_EQ(tier.Stats().write_drops, 0u);
  }
  const double found = advise_now(1);  // the current point reaches the target: no search
  std::printf("advise's current idle: %.1f%% on an empty disk, %.1f%% on the disk a run left\n",
              empty * 100, found * 100);
  EXPECT_LT(found, 0.01);
  EXPECT_GT(empty, 0.3);
  std::filesystem::remove_all(dir);
}

// Points are simulated side by side (one thread per core): one thread and four give the same
// points, in the same order, with the same answers.
TEST(Advise, TheAnswerIsTheSameOnOneThreadAndOnFour) {
  const ScenarioFile file = ScenarioFile::Parse(
      kBase + R"(storage: {kind: simulated, bandwidth: 6.5MB/s, latency: {p50: 5ms, p99: 5ms}}
loader: {prefetch: 1, preprocess: {kind: normalize, cost: 1ms}}
)",
      "threads.yaml");
  AdviseOptions o;
  o.variant = "base";
  o.target_idle = 0.6;  // reached by a few points: the ranking is compared too
  std::vector<AdviseResult> r;
  for (uint32_t threads : {1u, 4u}) {
    o.threads = threads;
    Simulator sim;
    r.push_back(Advise(file, o, sim));
  }
  ASSERT_GE(r[0].points.size(), 5u);
  ASSERT_GE(r[0].ranked.size(), 2u);
  ASSERT_EQ(r[0].points.size(), r[1].points.size());
  EXPECT_EQ(r[0].ranked, r[1].ranked);
  for (size_t i = 0; i < r[0].points.size(); ++i) {
    const AdvisePoint &a = r[0].points[i], &b = r[1].points[i];
    ASSERT_EQ(a.changes.size(), b.changes.size()) << "point " << i;
    for (size_t c = 0; c < a.changes.size(); ++c) EXPECT_EQ(a.changes[c].text, b.changes[c].text);
    EXPECT_DOUBLE_EQ(a.idle, b.idle) << "point " << i;
  }
}

// Every shipped scenario against the grid: its first variant that idles more than the target
// (a fed variant has nothing to advise), advise's answer against the grid's best point over
// the same space, as above; cluster_what_if at its own size (1,000 GPUs: its grid has 5,376
// points of ~4 s each, of which the cheapest 34 settle the best). Not here: real_directory (it
// needs a directory and a storage profile: RealDirectoryFromItsStorageProfileAgainstTheGrid).
TEST(Advise, EveryShippedScenarioAgainstTheGrid) {
  if (testing::kSanitized) GTEST_SKIP() << "a 1,000-GPU cluster's simulations: normal builds only";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(STALLSCOPE_SCENARIOS)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  int compared = 0;
  for (const std::filesystem::path& f : files) {
    const std::string name = f.stem().string();
    if (name == "real_directory") {  // needs a directory and a storage profile: below
      std::printf("%s: compared by RealDirectoryFromItsStorageProfileAgainstTheGrid\n",
                  name.c_str());
      continue;
    }
    const ScenarioFile file = ScenarioFile::Load(f.string());
    std::string variant;
    for (const std::string& v : file.variant_names()) {
      Simulator sim;
      if (sim.RunVariant(file.Resolve(v, {})).gpu_idle_fraction > 0.05) {
        variant = v;
        break;
      }
    }
    if (variant.empty()) {
      std::printf("%s: every variant idles under 5%%: nothing to advise\n", name.c_str());
      continue;
    }
    Compare({name + "/" + variant, "", 0.05, "?"}, file, variant);
    ++compared;
  }
  EXPECT_GE(compared, 6);
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

// The shipped real_directory scenario over a directory the test makes, modelled from storage
// profiles the test writes as `calibrate --dir` writes them: `cold` on a 30 MB/s disk against
// 52 MB/s of demand, whose answer is a cache of the dataset or a faster disk; `direct-qd1`, one
// read at a time of 1 ms for a GPU that wants 64 files every 5 ms from a 500 MB/s disk, whose
// answer is loader.io_depth. Advise against the exhaustive grid, as for the other shipped
// scenarios.
TEST(Advise, RealDirectoryFromItsStorageProfileAgainstTheGrid) {
  if (testing::kSanitized) GTEST_SKIP() << "grids of up to 6,720 points: normal builds only";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("stallscope-advise-dir-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  GenerateDataset({.dir = (dir / "data").string(), .samples = 1280, .size_mean = 16384});
  const auto profile = [&](const std::string& name, bool direct, const std::string& storage) {
    const std::string path = (dir / name).string();
    std::ofstream(path) << "profile: {date: test, host: test, path: " << (dir / "data").string()
                        << ", cold: true, direct_io: " << (direct ? "true" : "false")
                        << ", io_depth: 64, io_threads: 1, files: 1280, probe_files: 64, "
                           "bytes: 20971520}\nstorage: {"
                        << storage << ", latency: {p50: 1ms, p99: 4ms}, evict: 20ms}\n";
    return path;
  };
  const auto set = [](const std::string& key, const std::string& value) {
    return Override{key, YAML::Node(value), "test"};
  };
  const ScenarioFile file =
      ScenarioFile::Load(std::string(STALLSCOPE_SCENARIOS) + "/real_directory.yaml");
  const std::string data = (dir / "data").string();
  const std::string cold = Compare(
      {"real_directory/cold", "", 0.05, "*"}, file, "cold",
      {set("dataset.path", data),
       set("storage.profile", profile("cold.yaml", false, "bandwidth: 30MB/s, iops: 3000"))});
  const std::string qd1 = Compare(
      {"real_directory/direct-qd1", "", 0.05, "loader.io_depth"}, file, "direct-qd1",
      {set("dataset.path", data),
       set("storage.profile", profile("direct.yaml", true, "bandwidth: 500MB/s, iops: 40000"))});
  std::printf("cold: %s\ndirect-qd1: %s\n", cold.c_str(), qd1.c_str());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stallscope
