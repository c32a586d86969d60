// The stallscope executable when things go wrong underneath it: files that vanish or hang
// mid-run, Ctrl-C and SIGTERM, SIGKILL in the middle of disk-tier writes, and the resident
// memory it promised at start-up.
#include "tests/cli_util.h"

namespace stallscope {
namespace {

using namespace cli;

TEST_F(Cli, FileVanishingMidRunIsSkippedOrFailsAsOnErrorSays) {
  for (const std::string mode : {"skip", "fail", "denied"}) {
    const std::string data = (dir_.path() / ("v-" + mode)).string();
    ASSERT_EQ(Stallscope("gen " + data + " --samples 200 --size 2KiB --quiet").code, 0);
    std::filesystem::create_directories(data + "/class_000/deep/deeper");
    std::ofstream(data + "/class_000/deep/deeper/empty.bin").close();
    const std::string victim = data + "/class_005/sample_0000105.bin";
    const std::string s = Write("v.yaml", "dataset: {path: " + data + R"(}
storage: {kind: directory}
loader: {batch_size: 10, workers: 1, prefetch: 1, retries: 1, on_error: )" +
                                              (mode == "fail" ? "fail" : "skip") + R"(}
gpu: {step_time: 50ms}
run: {epochs: 3, verify: false}
)");
    const std::string json = (dir_.path() / "v.json").string();
    // Each epoch takes about 1 s; the file goes after the listing, before the last epoch.
    std::thread remover([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1300));
      if (mode == "denied") {
        std::filesystem::permissions(victim, std::filesystem::perms::none);
      } else {
        std::filesystem::remove(victim);
      }
    });
    const std::string prefix = WithoutRootOverride();
    const Result r =
        Stallscope("run " + s + " --quiet --json " + json, mode == "denied" ? prefix : "");
    remover.join();
    if (mode == "fail") {
      EXPECT_EQ(r.code, 1) << r.err;
      EXPECT_NE(r.err.find("sample_0000105.bin"), std::string::npos) << r.err;
      continue;
    }
    ASSERT_EQ(r.code, 0) << r.err;
    std::ifstream in(json);
    const nlohmann::json v = nlohmann::json::parse(in)["variants"][0];
    const uint64_t skipped = v["samples_skipped"];
    EXPECT_GE(skipped, 1u);  // the last epoch at least (a slow start: all three)
    EXPECT_LE(skipped, 3u);
    EXPECT_EQ(v["samples_delivered"].get<uint64_t>() + skipped, 3u * 201);
    for (const auto& id : v["skipped_samples"]) EXPECT_EQ(id, v["skipped_samples"][0]);
    // Every other file was read whole each epoch: 2 KiB × 200 files, the empty one adds 0.
    EXPECT_EQ(v["bytes_read"]["storage"].get<uint64_t>(), (3 * 200 - skipped) * 2048);
  }
}

// A dataset file that hangs (replaced after the listing by a FIFO nobody writes): with
// `read_timeout` the read fails with ETIMEDOUT at its deadline and `skip` counts it; without
// a deadline, Ctrl-C still stops the run within 2 s (the hung read is cancelled).
TEST_F(Cli, HungReadTimesOutAndNeverHoldsCtrlC) {
  for (const std::string mode : {"deadline", "interrupt"}) {
    const std::string data = (dir_.path() / ("h-" + mode)).string();
    ASSERT_EQ(Stallscope("gen " + data + " --samples 200 --size 2KiB --quiet").code, 0);
    const std::string victim = data + "/class_005/sample_0000105.bin";
    const bool deadline = mode == "deadline";
    const std::string s = Write("h.yaml", "dataset: {path: " + data + R"(}
storage: {kind: directory}
loader: {batch_size: 10, workers: 1, prefetch: 1, on_error: skip, read_timeout: )" +
                                              (deadline ? "300ms" : "0") + R"(}
gpu: {step_time: 50ms}
run: {epochs: )" + (deadline ? "3" : "20") + R"(}
)");
    const std::string json = (dir_.path() / "h.json").string();
    std::filesystem::remove(json);
    const std::string bin = STALLSCOPE_BIN;
    const pid_t pid = Spawn({bin, "run", s, "--quiet", "--json", json});
    ASSERT_GT(pid, 0);
    // Each epoch takes about 1 s; the file turns into a FIFO after the listing.
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    std::filesystem::remove(victim);
    ASSERT_EQ(mkfifo(victim.c_str(), 0600), 0);
    int writer = -1;
    if (!deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2700));  // the read hangs by now
      // Proof that it does: a FIFO opens for writing without blocking only while a reader
      // waits on it. The writer stays open and writes nothing, so the read stays hung.
      writer = open(victim.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      EXPECT_GE(writer, 0) << "no read was waiting on the FIFO when Ctrl-C came";
      kill(pid, SIGINT);
    }
    const auto t0 = std::chrono::steady_clock::now();
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL() << mode << ": the run hung on the FIFO";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Nobody is waiting on the other end any more: release a read the test may have left.
    if (writer >= 0) close(writer);
    const int unblock = open(victim.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (unblock >= 0) close(unblock);
    ASSERT_TRUE(WIFEXITED(status)) << mode << ": killed by signal " << WTERMSIG(status);
    std::ifstream in(json);
    ASSERT_TRUE(in) << mode << ": no result written";
    const nlohmann::json doc = nlohmann::json::parse(in);
    const nlohmann::json& v = doc["variants"][0];
    if (!deadline) {
      EXPECT_LT(took, 2.0);
      EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
      EXPECT_EQ(doc["partial"], true);
      EXPECT_LT(v["steps"].get<uint64_t>(), 20u * 20);
      continue;
    }
    ASSERT_EQ(WEXITSTATUS(status), 0);
    const uint64_t skipped = v["samples_skipped"];
    EXPECT_GE(skipped, 1u);  // the last epoch at least (a slow start: all three)
    EXPECT_LE(skipped, 3u);
    EXPECT_EQ(v["samples_delivered"].get<uint64_t>() + skipped, 3u * 200);
    for (const auto& id : v["skipped_samples"]) EXPECT_EQ(id, v["skipped_samples"][0]);
  }
}

// Ctrl-C (SIGINT) or SIGTERM mid-run: stops within 2 s, writes the partial result and trace
// of what was measured, marked partial, exits 128 + signal; later variants do not run.
TEST_F(Cli, InterruptWritesPartialResultsAndStopsWithinTwoSeconds) {
  const std::string s = Write("long.yaml", R"(name: long
dataset: {samples: 100000, sample_size: 4KiB}
storage: {kind: simulated, bandwidth: 200MB/s, faults: {timeout_rate: 0.001, timeout: 500ms}}
loader: {batch_size: 64, workers: 1}
gpu: {step_time: 20ms}
run: {epochs: 5}
variants:
  first: {}
  second: {}
)");
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string json = (dir_.path() / "p.json").string();
    const std::string trace = (dir_.path() / "p.trace").string();
    std::filesystem::remove(json);
    const std::string bin = STALLSCOPE_BIN;
    const pid_t pid = Spawn({bin, "run", s, "--quiet", "--json", json, "--trace", trace});
    ASSERT_GT(pid, 0);
    const Stopped stopped = SignalAfter(pid, 1.5 * testing::kTimingSlack, sig);
    ASSERT_NE(stopped.status, -1);
    const int status = stopped.status;
    const double took = stopped.seconds;
    EXPECT_LT(took, 2.0) << "signal " << sig;
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    std::ifstream in(json);
    ASSERT_TRUE(in) << "no partial result written";
    const nlohmann::json doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc["partial"], true);
    ASSERT_EQ(doc["variants"].size(), 1u);  // the second variant never started
    const auto& v = doc["variants"][0];
    EXPECT_EQ(v["partial"], true);
    EXPECT_GT(v["steps"].get<uint64_t>(), 5u);
    EXPECT_LT(v["steps"].get<uint64_t>(), 5u * 1563);
    EXPECT_GT(v["window_seconds"].get<double>(), 0.1);
    std::ifstream tin(trace);
    EXPECT_TRUE(nlohmann::json::accept(tin)) << "trace not valid JSON";
  }
}

// A stop request while every worker is inside a 60 s work item (issue #21: such a run once
// ran on for 12 minutes after SIGTERM): the run ends within 2 s, exit 128 + SIGTERM, with its
// partial result written.
TEST_F(Cli, AStopEndsAWorkerInsideALongWorkItem) {
  const std::string s = Write("slow.yaml", R"(name: slow
dataset: {samples: 64, sample_size: 4KiB}
storage: {kind: simulated}
loader: {batch_size: 4, workers: 2, preprocess: {kind: normalize, cost: 60s}}
gpu: {step_time: 1ms}
run: {epochs: 1}
)");
  const std::string json = (dir_.path() / "slow.json").string();
  const std::string bin = STALLSCOPE_BIN;
  const pid_t pid = Spawn({bin, "run", s, "--quiet", "--json", json});
  ASSERT_GT(pid, 0);
  const Stopped stopped = SignalAfter(pid, 1.5 * testing::kTimingSlack, SIGTERM);
  ASSERT_NE(stopped.status, -1);
  const int status = stopped.status;
  EXPECT_LT(stopped.seconds, 2.0 * testing::kTimingSlack);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  std::ifstream in(json);
  ASSERT_TRUE(in) << "no partial result written";
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["variants"][0]["steps"], 0);
}

// The other long waits a stop must cut short (issue #21): an emulated step of 100 hours, a
// checkpoint written to storage of 1 byte per second, a read from storage of 1 byte per
// second. Each run is stopped by SIGINT after 1.5 s and must end within 2 s, partial JSON
// written. Before 2026-12-02 each of them ran on (the step slept its whole length, and the
// simulated storage finished every transfer and read it had started).
TEST_F(Cli, AStopEndsALongStepACheckpointWriteAndASlowRead) {
  const std::string s = Write("waits.yaml", R"(name: waits
dataset: {samples: 64, sample_size: 4KiB}
storage: {kind: simulated, bandwidth: 1GB/s, write: {shared: false, bandwidth: 1GB/s}}
loader: {batch_size: 4, workers: 1}
gpu: {step_time: 1ms}
run: {epochs: 1}
checkpoint: {every: 1, size: 1MiB, mode: sync}
)");
  const std::string bin = STALLSCOPE_BIN;
  for (const std::string set :
       {"gpu.step_time=100h", "storage.write.bandwidth=1B/s", "storage.bandwidth=1B/s"}) {
    const std::string json = (dir_.path() / "waits.json").string();
    std::filesystem::remove(json);
    const pid_t pid = Spawn({bin, "run", s, "--quiet", "--json", json, "--set", set});
    ASSERT_GT(pid, 0);
    const Stopped stopped = SignalAfter(pid, 1.5 * testing::kTimingSlack, SIGINT);
    ASSERT_NE(stopped.status, -1);
    EXPECT_LT(stopped.seconds, 2.0 * testing::kTimingSlack) << set;
    ASSERT_TRUE(WIFEXITED(stopped.status)) << set << ": signal " << WTERMSIG(stopped.status);
    EXPECT_EQ(WEXITSTATUS(stopped.status), 128 + SIGINT) << set;
    std::ifstream in(json);
    ASSERT_TRUE(in) << set << ": no partial result written";
    EXPECT_EQ(nlohmann::json::parse(in)["partial"], true) << set;
  }
}

// run.time_limit stops a run that would take 4.4 hours as Ctrl-C would, but on its own:
// after 2 s, the steps done analysed and written, marked partial and why; exit 0.
TEST_F(Cli, RunTimeLimitEndsTheRunWithAPartialResult) {
  const std::string s = Write("limit.yaml", R"(name: limit
dataset: {samples: 64, sample_size: 4KiB}
storage: {kind: simulated}
loader: {batch_size: 4, workers: 1}
gpu: {step_time: 100ms}
run: {epochs: 10000, warmup_steps: 2, time_limit: 2s}
)");
  const std::string json = (dir_.path() / "limit.json").string();
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = Stallscope("run " + s + " --quiet --json " + json);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_GE(seconds, 2.0);
  EXPECT_LT(seconds, 4.0 * testing::kTimingSlack);
  EXPECT_NE(r.out.find("(run.time_limit reached, partial)"), std::string::npos) << r.out;
  std::ifstream in(json);
  ASSERT_TRUE(in);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["variants"][0]["stopped_by"], "run.time_limit");
  // About 20 steps of 100 ms fit in 2 s; the step cut short by the limit is not counted.
  const int steps = doc["variants"][0]["steps"];
  EXPECT_GE(steps, 10);
  EXPECT_LE(steps, 20);
}

// 50 times: SIGKILL `stallscope run` at a random moment while its disk tier fills, then a
// verified run on the same cache directory: zero wrong bytes, and the tier keeps serving.
TEST_F(Cli, KilledRunsNeverLeaveWrongBytesInTheDiskTier) {
  const std::string cache = (dir_.path() / "cache").string();
  const std::string s = Write("crash.yaml", R"(name: crash
dataset: {samples: 600, sample_size: {mean: 16KiB, stdev: 4KiB}}
storage: {kind: simulated, bandwidth: 400MB/s}
cache:
  tiers: [{kind: disk, path: )" + cache + R"(, capacity: 8MiB, policy: lru}]
loader: {batch_size: 20, workers: 2}
gpu: {device: emulated, step_time: 1ms}
run: {epochs: 2, verify: true}
)");
  const std::string bin = STALLSCOPE_BIN;
  std::mt19937 rng(5);
  uint64_t disk_hits = 0;
  for (int round = 0; round < 50; ++round) {
    const pid_t pid = Spawn({bin, "run", s, "--quiet"});
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 400));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string json = (dir_.path() / "c.json").string();
    const Result r = Stallscope("run " + s + " --quiet --json " + json);
    ASSERT_EQ(r.code, 0) << "round " << round << ": " << r.err;
    std::ifstream in(json);
    const nlohmann::json v = nlohmann::json::parse(in)["variants"][0];
    ASSERT_EQ(v["integrity_errors"], 0) << "round " << round;
    ASSERT_EQ(v["samples_verified"], 1200) << "round " << round;
    disk_hits += v["cache"]["disk"]["hits"].get<uint64_t>();
  }
  EXPECT_GT(disk_hits, 0u);  // entries written before the kills were served
}

// Peak resident memory of `stallscope ARGS` (kilobytes), from wait4's rusage.
long PeakRssKb(const std::vector<std::string>& args) {
  const pid_t pid = Spawn(args);
  if (pid <= 0) return -1;
  int status = 0;
  struct rusage usage = {};
  wait4(pid, &status, 0, &usage);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? usage.ru_maxrss : -1;
}

// A dataset ten times the RAM tier: resident memory stays within what the banner states
// (RAM cache 32 MiB + staging 12.5 MiB) above the process's own baseline (the same binary on
// a one-batch run: code, libraries — cuBLAS and cuBLASLt are most of it — and heap), plus
// 32 MiB of slack for allocator and thread stacks.
TEST_F(Cli, ResidentMemoryStaysWithinTheStartupBudget) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizer builds keep freed memory in quarantine and shadow";
#endif
  const std::string big = Write("mem.yaml", R"(name: mem
dataset: {samples: 40000, sample_size: 8KiB}
storage: {kind: simulated, bandwidth: 4GB/s}
cache:
  tiers: [{kind: memory, capacity: 32MiB, policy: lru}]
loader: {batch_size: 64, prefetch: 4, workers: 2}
gpu: {device: emulated, step_time: 0ms}
run: {epochs: 2}
)");
  const std::string tiny = Write("tiny.yaml", R"(name: tiny
dataset: {samples: 128, sample_size: 8KiB}
storage: {kind: simulated, bandwidth: 4GB/s}
loader: {batch_size: 64, prefetch: 0, workers: 1}
gpu: {device: emulated, step_time: 0ms}
run: {epochs: 2}
)");
  const std::string bin = STALLSCOPE_BIN;
  const long base = PeakRssKb({bin, "run", tiny, "--quiet"});
  const long peak = PeakRssKb({bin, "run", big, "--quiet"});
  ASSERT_GT(base, 0);
  ASSERT_GT(peak, 0);
  const long budget_kb = (32 * 1024) + (12 * 1024 + 512) + 32 * 1024;
  EXPECT_LE(peak, base + budget_kb)
      << "baseline " << base / 1024 << " MiB, peak " << peak / 1024 << " MiB, dataset 312.5 MiB";
}

// Values that parse but that this host cannot hold (issue #21's table, the rows the start-up
// budget and the parser's caps cover): each a one-line refusal naming the key, exit 2, fast,
// nothing run. Sizes are chosen far beyond any host, so the refusal does not depend on this
// machine's memory.
TEST_F(Cli, ValuesBeyondThisHostAreRefusedBeforeTheRun) {
  const std::string s = Write("limits.yaml", R"(name: limits
dataset: {samples: 8000, sample_size: 16KiB}
storage: {kind: simulated}
gpu: {device: emulated, step_time: 1ms}
run: {epochs: 1}
)");
  const struct {
    std::string set, needle;
  } rows[] = {
      {"loader.workers=100000", "loader.workers: must be at most 1024, got 100000"},
      {"loader.io_threads=5000", "loader.io_threads: must be at most 256, got 5000"},
      {"loader.prefetch=100000000", "loader.prefetch: must be at most 4094, got 100000000"},
      {"loader.retries=1000000000", "loader.retries: must be at most 100, got 1000000000"},
      {"loader.io_depth=1000000", "loader.io_depth: must be at most 4096, got 1000000"},
      // 16 rows of 64 GiB samples in each of 5 slots, and their float rows: 25 TiB.
      {"dataset.sample_size=64GiB --set dataset.samples=64 --set loader.batch_size=16",
       "loader.batch_size × (loader.prefetch + 1) staging needs"},
      // The issue's rows: 10^8 samples of 1 TiB (refused before their index is made), and a
      // batch larger than the dataset (was killed by the kernel: 5 slots of 1.6 GB + floats).
      {"'dataset={samples: 100000000, sample_size: 1TiB}'",
       "loader.batch_size × (loader.prefetch + 1) staging needs at least 1.25 PiB"},
      {"loader.batch_size=100000", "run.warmup_steps: the run has 1 step(s)"},
      {"loader.preprocess.cost=1000h", "loader.preprocess.cost: must be at most a week (168h)"},
  };
  for (const auto& row : rows) {
    const auto t0 = std::chrono::steady_clock::now();
    const Result r = Stallscope("run " + s + " --quiet --set " + row.set);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ExpectBadInput(r, row.needle);
    EXPECT_LT(seconds, 30 * testing::kTimingSlack) << row.set;
  }
  // A memory tier larger than this host's available memory (read here from /proc/meminfo),
  // over a dataset larger still, is refused (cache.tiers.N.overcommit, which lets it run, is
  // shown by Budget.RefusesAMemoryTierBeyondWhatIsAvailableUnlessOvercommitted).
  std::ifstream meminfo("/proc/meminfo");
  std::string word;
  uint64_t available_kib = 0;
  while (meminfo >> word && word != "MemAvailable:") {
  }
  meminfo >> available_kib;
  ASSERT_GT(available_kib, 0u);
  const uint64_t tier_mib = available_kib / 1024 + 1024;
  ExpectBadInput(Stallscope("run " + s + " --quiet --set dataset.samples=" +
                            std::to_string(tier_mib * 64 + 64) +  // 16 KiB each: 64 per MiB
                            " --set 'cache.tiers=[{kind: memory, capacity: " +
                            std::to_string(tier_mib) + "MiB}]'"),
                 "cache.tiers.0.capacity: a memory tier of");
}

// A host that will start no more threads (a pids cgroup of this process's making, as a
// container's pids.max or ulimit -u would be): at every limit from 2 tasks up, the run ends
// with exit 1 and one message naming the thread it could not start — never an abort. Before
// 2026-12-02 the limits from 4 to 20 ended in "terminate called without an active
// exception" (exit 134): the loader's threads already started were destroyed unjoined.
TEST_F(Cli, AHostThatStartsNoMoreThreadsGetsAMessageNotAnAbort) {
  if (testing::kSanitized) {
    GTEST_SKIP() << "the sanitizers' leak check starts a task of its own at exit";
  }
  const std::string cgroup = "/sys/fs/cgroup/pids/stallscope-test-" + std::to_string(getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(cgroup, ec) || ec) {
    GTEST_SKIP() << "no pids cgroup (v1) to make here: " << (ec ? ec.message() : "exists");
  }
  const std::string s = Write("threads.yaml", R"(name: threads
dataset: {samples: 2000, sample_size: 16KiB}
storage: {kind: simulated, bandwidth: 400MB/s}
loader: {batch_size: 20, prefetch: 2, workers: 16, preprocess: normalize}
gpu: {device: emulated, step_time: 1ms}
run: {epochs: 1}
)");
  int refused = 0;
  for (int limit = 2; limit <= 40; limit += limit < 8 ? 1 : 6) {
    std::ofstream(cgroup + "/pids.max") << limit;
    const Result r = Command("sh -c 'echo $$ > " + cgroup + "/cgroup.procs && exec " +
                             STALLSCOPE_BIN + " run " + s + " --quiet'");
    SCOPED_TRACE(::testing::Message() << "pids.max " << limit << ": " << r.err);
    ASSERT_TRUE(r.code == 0 || r.code == 1) << "exit " << r.code;
    if (r.code == 1) {
      ++refused;
      EXPECT_NE(r.err.find("cannot start "), std::string::npos);
      EXPECT_NE(r.err.find("pids.max"), std::string::npos);
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message";
    }
  }
  std::filesystem::remove(cgroup, ec);
  EXPECT_GE(refused, 8) << "the limits must have bitten";
}

}  // namespace
}  // namespace stallscope
