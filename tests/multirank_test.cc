// Multi-rank runs as users start them: `mpirun` (Open MPI; --oversubscribe, and as root its
// run-as-root switches) launching the ranks as separate processes on this host, each with its
// own loader and emulated device, steps meeting at an MPI all-reduce.
//
// Ground truth comes from the test's own set-up: which sample a row holds is read back from
// its content (the dataset's bytes name their sample), and the straggler is the rank whose
// storage the test slowed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <thread>

#ifdef STALLSCOPE_HAVE_CUDA
#include "gpu/cuda_util.h"
#endif
#include "pipeline/analysis.h"
#include "pipeline/sampler.h"
#include "report/report.h"
#include "tests/cli_util.h"
#include "tests/http_get.h"
#include "tests/mpirun.h"

namespace stallscope::cli {
namespace {

class MultiRank : public Cli {
 protected:
  // Each rank's delivered ids per step, and its result.
  struct Rank {
    std::vector<std::pair<uint32_t, std::vector<int64_t>>> steps;
    RankResult result;
  };
  std::vector<Rank> RunRanks(int ranks, const std::string& yaml, const std::string& mode = "") {
    const std::string file = Write("ranks.yaml", yaml);
    const std::string out = (dir_.path() / "out").string();
    std::filesystem::create_directories(out);
    const Result r = Command(Mpirun(ranks) + " " + RANK_MAIN + " " + file + " " + out + " " + mode);
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<Rank> all(ranks);
    for (int k = 0; k < ranks; ++k) {
      std::ifstream ids(out + "/rank-" + std::to_string(k) + ".txt");
      std::string line;
      while (std::getline(ids, line)) {
        std::istringstream in(line);
        uint32_t epoch;
        in >> epoch;
        std::vector<int64_t> row;
        for (int64_t id; in >> id;) row.push_back(id);
        all[k].steps.emplace_back(epoch, std::move(row));
      }
      std::ifstream json(out + "/rank-" + std::to_string(k) + ".json");
      all[k].result = RankFromJson(nlohmann::json::parse(json));
    }
    return all;
  }
};

// Every sample of every epoch reaches exactly one rank, verified; the remainder (the last
// samples mod ranks positions of the epoch's order) reaches none.
TEST_F(MultiRank, EverySampleOfEveryEpochReachesExactlyOneRank) {
  constexpr int64_t kSamples = 1000;
  const std::string yaml = R"(seed: 7
dataset: {samples: 1000, sample_size: 4KiB, classes: 10}
storage: {kind: simulated, latency: {p50: 100us, p99: 300us}}
loader: {batch_size: 32, prefetch: 3, workers: 2, preprocess: none}
gpu: {step_time: 1ms}
run: {epochs: 3, verify: true}
)";
  for (int ranks : {2, 3}) {
    const std::vector<Rank> all = RunRanks(ranks, yaml);
    const int64_t per_rank = kSamples / ranks;
    const Sampler sampler(kSamples, 7);
    std::vector<uint64_t> order;
    for (uint32_t e = 0; e < 3; ++e) {
      std::map<int64_t, int> seen;
      for (const Rank& r : all) {
        for (const auto& [epoch, ids] : r.steps) {
          if (epoch != e) continue;
          for (int64_t id : ids) {
            ASSERT_GE(id, 0) << "a row that is no sample's content, " << ranks << " ranks";
            ASSERT_EQ(++seen[id], 1) << "sample " << id << " twice in epoch " << e;
          }
        }
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), per_rank * ranks) << ranks << " ranks";
      sampler.Order(e, order);
      for (int64_t pos = per_rank * ranks; pos < kSamples; ++pos) {
        EXPECT_EQ(seen.count(static_cast<int64_t>(order[pos])), 0u)
            << "the remainder's sample at position " << pos << " was read";
      }
    }
    for (const Rank& r : all) {
      EXPECT_EQ(r.result.samples_delivered, static_cast<uint64_t>(per_rank * 3));
      EXPECT_EQ(r.result.samples_verified, r.result.samples_delivered);
      EXPECT_EQ(r.result.integrity_errors, 0u);
    }
  }
}

// Rank 1's storage is slowed to a quarter of what its GPU consumes (the test's own set-up);
// rank 0's storage has 2x to spare. The job runs at rank 1's pace: rank 0 idles as much,
// and its idle is waiting for rank 1 (sync), not its own loader; the verdict names rank 1.
TEST_F(MultiRank, AStragglersPeersWaitAsSyncAndTheVerdictNamesIt) {
  // Demand per rank: 16 x 64 KiB / 10 ms = 105 MB/s; storage 210 MB/s, rank 1's 26 MB/s.
  const std::vector<Rank> all = RunRanks(2, R"(
dataset: {samples: 1600, sample_size: 64KiB}
storage: {kind: simulated, bandwidth: 210MB/s, max_inflight: 64}
loader: {batch_size: 16, prefetch: 2, workers: 1, preprocess: none}
gpu: {step_time: 10ms}
run: {epochs: 1, verify: false}
)",
                                         "straggler");
  const RankResult& fast = all[0].result;
  const RankResult& slow = all[1].result;
  // Rank 1 delivers a quarter of the demand: ~75% idle, all of it its own fetch.
  EXPECT_GT(slow.gpu_idle_fraction, 0.6);
  EXPECT_GT(slow.stall_seconds.fetch, 0.8 * slow.gpu_idle_fraction * slow.window_seconds);
  EXPECT_LT(slow.stall_seconds.sync, 0.1 * slow.stall_seconds.fetch);
  // Rank 0 idles with it, waiting at the barrier.
  EXPECT_NEAR(fast.gpu_idle_fraction, slow.gpu_idle_fraction, 0.05);
  EXPECT_GT(fast.stall_seconds.sync, 0.8 * fast.gpu_idle_fraction * fast.window_seconds);
  VariantResult job;
  CombineRanks(job, {fast, slow});
  EXPECT_EQ(job.bottleneck_stage, "sync") << job.bottleneck_text;
  EXPECT_NE(job.bottleneck_text.find("rank 1 (it waited"), std::string::npos)
      << job.bottleneck_text;
}

constexpr const char* kTwoRanks = R"(name: two
dataset: {samples: 1001, sample_size: 16KiB}
storage: {kind: simulated, bandwidth: 400MB/s}
loader: {batch_size: 25, prefetch: 2, workers: 1, preprocess: normalize}
gpu: {step_time: 5ms}
run: {epochs: 2}
)";

// A crash between the ranks' renames leaves rank 1 without its newest checkpoint (here its
// file is removed): a restore resumes both ranks from the newest step both hold, not each from
// its own newest; with no step in common every rank refuses, rank 0 naming what each holds.
TEST_F(MultiRank, RestoreResumesEveryRankFromTheNewestStepTheyAllHold) {
  const std::string ck = (dir_.path() / "ck").string();
  const std::string file =
      Write("ck.yaml", std::string(kTwoRanks) +
                           "checkpoint: {every: 10, size: 2MiB, keep: 2, path: " + ck + "}\n");
  const Result first = Stallscope("run " + file + " --quiet", Mpirun(2));
  ASSERT_EQ(first.code, 0) << first.err;
  // 40 steps per rank, a checkpoint after every tenth: 30 and 40 kept on each rank.
  const auto name = [&](int step, int rank) {
    return fmt::format("{}/ckpt-{:012}-r{:05}.stck", ck, step, rank);
  };
  for (const int rank : {0, 1}) {
    ASSERT_TRUE(std::filesystem::exists(name(30, rank)));
    ASSERT_TRUE(std::filesystem::exists(name(40, rank)));
  }
  std::filesystem::remove(name(40, 1));
  const std::string json = (dir_.path() / "r.json").string();
  const std::string restore = " --quiet --set checkpoint.restore=true --set run.max_steps=4 ";
  const Result r = Stallscope("run " + file + restore + "--json " + json, Mpirun(2));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto v = nlohmann::json::parse(std::ifstream(json))["variants"][0];
  EXPECT_EQ(v["checkpoints"]["restore"]["step"], 30);
  ASSERT_EQ(v["ranks"].size(), 2u);
  EXPECT_EQ(v["ranks"][0]["restored_step"], 30);
  EXPECT_EQ(v["ranks"][1]["restored_step"], 30);
  // Rank 0 holds only 40 now, rank 1 only 30 (the restore run wrote none: 4 steps).
  std::filesystem::remove(name(30, 0));
  const Result none = Stallscope("run " + file + restore, Mpirun(2));
  EXPECT_EQ(none.code, 2) << none.err;
  EXPECT_NE(none.err.find("checkpoint.restore: no step has a complete checkpoint on every rank"),
            std::string::npos)
      << none.err;
  EXPECT_NE(none.err.find("rank 0: 40; rank 1: 30"), std::string::npos) << none.err;
}

// `mpirun -np 2 stallscope run`: rank 0 writes one result, the job's and every rank's, and one
// trace with a process per rank, each with its own steps.
TEST_F(MultiRank, RunWritesTheJobAndEveryRank) {
  const std::string file = Write("two.yaml", kTwoRanks);
  const std::string json = (dir_.path() / "r.json").string();
  const std::string trace = (dir_.path() / "r.trace").string();
  const Result r =
      Stallscope("run " + file + " --quiet --json " + json + " --trace " + trace, Mpirun(2));
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<int, std::string> processes;  // pid → name
  std::map<int, int> steps;              // pid → step spans
  const nlohmann::json events = nlohmann::json::parse(std::ifstream(trace))["traceEvents"];
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X" && e["cat"] == "step") steps[e["pid"]]++;
  }
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[10000], "stallscope base rank 0");
  EXPECT_EQ(processes[10001], "stallscope base rank 1");
  // 2 epochs of 500 samples per rank in batches of 25: 40 steps each.
  EXPECT_EQ(steps[10000], 40);
  EXPECT_EQ(steps[10001], 40);
  EXPECT_NE(r.out.find("rank 1 idle / sync / stage"), std::string::npos) << r.out;
  const auto v = nlohmann::json::parse(std::ifstream(json))["variants"][0];
  EXPECT_EQ(v["gpus"], 2);
  ASSERT_EQ(v["ranks"].size(), 2u);
  // 1001 samples, 2 ranks: 500 each per epoch (one sample, the remainder, read by neither).
  EXPECT_EQ(v["samples_delivered"], 2 * 500 * 2);
  EXPECT_EQ(v["samples_verified"], 2 * 500 * 2);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(v["ranks"][k]["rank"], k);
    EXPECT_EQ(v["ranks"][k]["samples_delivered"], 500 * 2);
    EXPECT_TRUE(v["ranks"][k]["stall_seconds"].contains("sync"));
  }
}

TEST_F(MultiRank, AClusterOfAnotherSizeIsRefusedOnceByRankZero) {
  const std::string file = Write("two.yaml", kTwoRanks);
  const Result r = Stallscope("run " + file + " --quiet --set cluster.nodes=3", Mpirun(2));
  EXPECT_EQ(r.code, 2) << r.err;
  const std::string needle = "this run was launched with 2";
  const size_t first = r.err.find(needle);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(needle, first + 1), std::string::npos) << "printed twice: " << r.err;
  EXPECT_EQ(r.out, "");
}

// A rank killed mid-run ends the job within 10 s (nobody hangs in a collective), and the
// launcher's message names the rank.
TEST_F(MultiRank, ARankKilledMidRunEndsTheJobNamingTheRank) {
  std::string yaml = kTwoRanks;
  yaml.replace(yaml.find("epochs: 2"), 9, "epochs: 500");
  const std::string file = Write("long.yaml", yaml);
  Result r;
  std::thread job([&] { r = Stallscope("run " + file + " --quiet", Mpirun(2, false)); });
  // Rank 1 is the second stallscope process running this file.
  pid_t victim = 0;
  for (int i = 0; i < 200 && !victim; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    FILE* p =
        popen(("pgrep -f '^" + std::string(STALLSCOPE_BIN) + " run " + file + "'").c_str(), "r");
    std::vector<pid_t> pids;
    for (int pid; fscanf(p, "%d", &pid) == 1;) pids.push_back(pid);
    pclose(p);
    if (pids.size() == 2) victim = std::max(pids[0], pids[1]);
  }
  ASSERT_NE(victim, 0) << "the two ranks never started";
  std::this_thread::sleep_for(std::chrono::seconds(1));  // mid-run
  const auto killed = std::chrono::steady_clock::now();
  kill(victim, SIGKILL);
  job.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(seconds, 10.0);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("process rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("signal 9"), std::string::npos) << r.err;
}

// Ctrl-C on mpirun: Open MPI passes it to the ranks as SIGTERM (then SIGKILL a few seconds
// later); they stop together at the next step's vote, and rank 0 writes the job's partial
// result, as a one-rank run does.
TEST_F(MultiRank, CtrlCOnMpirunWritesRankZerosPartialResult) {
  // (Under ASan+UBSan on 2026-12-03 rank 0 wrote no partial result: a rank stopped in the
  // middle of a step left without the next step's barrier, where its peer then waited for
  // ever. Run.ARankStoppedMidStepTellsItsPeersAtTheNextBarrier holds the fix.)
  std::string yaml = kTwoRanks;
  yaml.replace(yaml.find("epochs: 2"), 9, "epochs: 500");
  const std::string file = Write("long.yaml", yaml);
  const std::string json = (dir_.path() / "partial.json").string();
  // Open MPI sends SIGKILL 1 s after its SIGTERM (odls_base_sigkill_timeout); sanitized
  // builds, several times slower to analyse and write, get 10 s.
  const std::string grace = testing::kSanitized ? " --mca odls_base_sigkill_timeout 10" : "";
  std::vector<std::string> args = {"/bin/sh", "-c",
                                   "exec " + Mpirun(2) + grace + " " + STALLSCOPE_BIN + " run " +
                                       file + " --quiet --json " + json};
  const pid_t mpirun = Spawn(args);
  ASSERT_GT(mpirun, 0);
  const Stopped stopped = SignalAfter(mpirun, 2.0 * testing::kTimingSlack, SIGINT);
  ASSERT_NE(stopped.status, -1);
  const double took = stopped.seconds;
  // Sanitized builds: each process's leak check at exit (with the slow unwinder Open MPI's
  // suppressions need) takes seconds of its own (seen: 18 s in all under ASan).
  EXPECT_LT(took, testing::kSanitized ? 60.0 : 10.0);
  std::ifstream in(json);
  ASSERT_TRUE(in) << "no partial result written";
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["partial"], true);
  const auto& v = doc["variants"][0];
  EXPECT_EQ(v["partial"], true);
  ASSERT_EQ(v["ranks"].size(), 2u);
  EXPECT_GT(v["steps"].get<uint64_t>(), 5u);
  EXPECT_LT(v["steps"].get<uint64_t>(), 500u * 20);  // it did not run to the end
  for (int k = 0; k < 2; ++k) EXPECT_GT(v["ranks"][k]["samples_delivered"].get<uint64_t>(), 0u);
}

// --metrics-listen under mpirun: every rank serves its own metrics at the port plus its local
// rank, each series labelled with the rank.
TEST_F(MultiRank, EveryRankServesItsMetricsLabelledByRank) {
  const std::string file = Write("two.yaml", kTwoRanks);
  const unsigned port = 20000 + static_cast<unsigned>(getpid()) % 20000;
  Result r;
  std::thread job([&] {
    r = Stallscope(
        "run " + file + " --quiet --linger 4s --metrics-listen 127.0.0.1:" + std::to_string(port),
        Mpirun(2));
  });
  // The last scrape of each rank during the linger: the whole run's counters.
  std::string seen[2];
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    bool done = true;
    for (int k = 0; k < 2; ++k) {
      try {
        const std::string body = testing::Get(static_cast<unsigned short>(port + k), "/metrics");
        if (body.find("stallscope_steps_total") != std::string::npos) seen[k] = body;
      } catch (const std::exception&) {  // not listening (yet, or any more)
      }
      done = done && seen[k].find("rank=\"" + std::to_string(k) + "\"") != std::string::npos;
    }
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  job.join();
  ASSERT_EQ(r.code, 0) << r.err;
  for (int k = 0; k < 2; ++k) {
    EXPECT_NE(seen[k].find("rank=\"" + std::to_string(k) + "\""), std::string::npos)
        << "rank " << k << " at port " << port + k << ":\n"
        << seen[k];
    EXPECT_EQ(seen[k].find("rank=\"" + std::to_string(1 - k) + "\""), std::string::npos)
        << "rank " << k << " serves its own series only";
  }
}

// `mpirun -np 2 stallscope bench-dir` (MLPerf Storage's multi-client arrangement): the two
// clients read disjoint halves of the directory, together every file once; rank 0 reports
// the clients together and each, and the training loop runs a rank per client.
TEST_F(MultiRank, BenchDirClientsReadTheDirectoryOnceBetweenThem) {
  const std::string data = (dir_.path() / "data").string();
  ASSERT_EQ(Stallscope("gen " + data + " --samples 301 --size 20KiB:8KiB --quiet").code, 0);
  uint64_t files = 0, bytes = 0;  // the ground truth, from the disk
  for (const auto& e : std::filesystem::recursive_directory_iterator(data)) {
    if (!e.is_regular_file() || e.path().filename().string().starts_with(".stallscope")) continue;
    ++files;
    bytes += e.file_size();
  }
  ASSERT_EQ(files, 301u);
  const std::string json = (dir_.path() / "bd.json").string();
  const Result r = Stallscope(
      "bench-dir " + data + " --batch 10 --step-time 2ms --quiet --json " + json, Mpirun(2));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 clients"), std::string::npos) << r.out;
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(doc["files"], files);
  EXPECT_EQ(doc["bytes"], bytes);
  ASSERT_EQ(doc["clients"].size(), 2u);
  EXPECT_EQ(doc["clients"][0]["files_read"], 151);  // listing indexes 0, 2, …, 300
  EXPECT_EQ(doc["clients"][1]["files_read"], 150);
  EXPECT_EQ(doc["clients"][0]["bytes"].get<uint64_t>() + doc["clients"][1]["bytes"].get<uint64_t>(),
            bytes);
  const auto& t = doc["training"];
  EXPECT_EQ(t["gpus"], 2);
  ASSERT_EQ(t["ranks"].size(), 2u);
  EXPECT_EQ(t["samples_delivered"], 300);  // 150 per rank, the remainder read by none
  EXPECT_TRUE(t.contains("max_accelerators_at_au_0_9"));
  // A directory that is not there: one message, from rank 0, exit 2.
  const Result bad = Stallscope("bench-dir " + data + "-nope --quiet", Mpirun(2));
  EXPECT_EQ(bad.code, 2) << bad.err;
  const size_t first = bad.err.find("no such directory");
  ASSERT_NE(first, std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("no such directory", first + 1), std::string::npos) << bad.err;
  const Result option = Stallscope("bench-dir " + data +
                                       " --batch 10 --step-time 2ms --preprocess "
                                       "bogus --quiet",
                                   Mpirun(2));
  EXPECT_EQ(option.code, 2) << option.err;
  const size_t at = option.err.find("--preprocess bogus");
  ASSERT_NE(at, std::string::npos) << option.err;
  EXPECT_EQ(option.err.find("--preprocess bogus", at + 1), std::string::npos) << option.err;
}

int GpusVisible() {
#ifdef STALLSCOPE_HAVE_CUDA
  return gpu::CudaDeviceCount();
#else
  return 0;
#endif
}

// gpu.device: cuda needs a GPU per rank on a host: with one rank more than this host has
// GPUs (none on CI), rank 0 alone says so and the job exits 2.
TEST_F(MultiRank, CudaRanksWithoutAGpuEachAreRefusedOnceByRankZero) {
  const int gpus = GpusVisible();
  const std::string file = Write("two.yaml", kTwoRanks);
  const Result r =
      Stallscope("run " + file + " --quiet --set gpu.device=cuda", Mpirun(std::max(2, gpus + 1)));
  EXPECT_EQ(r.code, 2) << r.err;
  const std::string needle = gpus == 0 ? "no CUDA GPU is visible" : "ranks on this host but";
  const size_t first = r.err.find(needle);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(needle, first + 1), std::string::npos) << "printed twice: " << r.err;
}

// Two CUDA ranks train one model: every step all-reduces the gradients with NCCL (the bytes
// are the model's parameters, every step), fed from RAM the GPUs stay busy, the loss falls.
TEST_F(MultiRank, CudaRanksAllReduceTheirGradientsWithNccl) {
  if (GpusVisible() < 2) GTEST_SKIP() << "needs two CUDA GPUs";
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast stays off (shared GPU hosts)
  const std::string file = Write("dp.yaml", R"(
dataset: {samples: 8192, sample_size: 4KiB, classes: 100}
storage: {kind: memory}
loader: {batch_size: 256, prefetch: 8, workers: 2, preprocess: {kind: normalize}}
gpu: {device: cuda, step_time: 50ms, model: {input: 1024, hidden: 0, layers: 4, classes: 100}}
run: {epochs: 4, verify: false}
)");
  const std::string json = (dir_.path() / "dp.json").string();
  const Result r =
      Stallscope("run " + file + " --quiet --json " + json, Mpirun(2) + " -x NCCL_NVLS_ENABLE");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("all-reduce"), std::string::npos) << r.out;
  const auto v = nlohmann::json::parse(std::ifstream(json))["variants"][0];
  const auto& g = v["gpu"];
  const double width = g["model"]["hidden_width"];
  // input 1024 → width → width → width → 100 (padded to 128), weights and biases.
  const double params = 1024 * width + 2 * width * width + width * 128 + 3 * width + 128;
  const double steps = g["loss"]["steps"];
  EXPECT_EQ(g["allreduce"]["bytes"].get<double>(), steps * params * 4);
  EXPECT_GT(g["allreduce"]["seconds"].get<double>(), 0);
  ASSERT_EQ(v["ranks"].size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_GT(v["ranks"][k]["allreduce_seconds"].get<double>(), 0);
    EXPECT_LE(v["ranks"][k]["gpu_idle_fraction"].get<double>(), 0.02) << "rank " << k;
  }
  EXPECT_LT(g["loss"]["last"].get<double>(), g["loss"]["first"].get<double>());
}

}  // namespace
}  // namespace stallscope::cli
