// Issue #21's limits test: every numeric key of the scenario schema — as the parser itself
// lists them (`stallscope validate --keys`), not a list kept here — set to 0, 1, a huge value
// and its type's maximum, one `--set` at a time, on a scenario with every section. Each run
// must end by itself within 30 s with exit 0, 1 or 2 (never a signal), say why in one
// "stallscope: ..." line when it does not run, and stay within the start-up budget its banner
// states in resident memory.
#include <sys/resource.h>
#include <sys/wait.h>

#include <map>
#include <regex>

#include "base/units.h"
#include "tests/cli_util.h"

namespace stallscope::cli {
namespace {

// A run that reads every section: both cache tiers, faults, the write model, checkpoints,
// costs, a straggler. Small (64 samples of 2 KiB), so that a value that changes nothing ends
// in a fraction of a second; run.time_limit bounds those that make the run slow (a rate of
// 1 B/s, a step of 1 s). The disk tier starts empty every run.
std::string BaseScenario(const std::string& disk) {
  return R"(name: limits
seed: 7
dataset: {samples: 64, sample_size: {mean: 2KiB, stdev: 512}, classes: 10}
storage:
  kind: simulated
  bandwidth: 2GB/s
  latency: {p50: 100us, p99: 400us}
  max_inflight: 64
  iops: 100000
  faults: {error_rate: 0.01, timeout_rate: 0.0, timeout: 50ms, stall_every: 0s, stall_for: 0s,
           truncate_rate: 0, spike_rate: 0.01, spike: 1ms}
  write: {shared: false, bandwidth: 1GB/s, latency: {p50: 100us, p99: 200us}}
cache:
  tiers:
    - {kind: memory, capacity: 64KiB, bandwidth: 10GB/s, latency: 1us}
    - {kind: disk, path: )" +
         disk + R"(, capacity: 1MiB, bandwidth: 1GB/s, latency: 20us, clear: true}
loader:
  batch_size: 8
  prefetch: 2
  workers: 2
  io_depth: 8
  io_threads: 1
  preprocess: {kind: normalize, cost: 10us, size: 32}
  retries: 3
  retry_backoff: 1ms
  read_timeout: 1s
gpu: {device: emulated, step_time: 1ms, model: {input: 64, hidden: 32, layers: 2, classes: 10}}
run: {epochs: 1, warmup_steps: 1, max_steps: 0, time_limit: 3s}
cluster: {nodes: 1, gpus_per_node: 1, network_bandwidth: 1GB/s, straggler: {rank: 0, slowdown: 1.5}}
checkpoint: {every: 4, size: 1MiB, mode: async, keep: 2, block: 64KiB, io_depth: 4}
cost: {gpu_hour: 2, ram_gib_day: 0.1, disk_gib_day: 0.01, storage_gbps_day: 5, core_day: 1}
)";
}

// The values tried for each type: zero, one, huge (within the type, beyond any sane use) and
// the type's maximum.
const std::map<std::string, std::vector<std::string>> kValues = {
    {"uint32", {"0", "1", "1000000000", "4294967295"}},
    {"uint64", {"0", "1", "1000000000000", "18446744073709551615"}},
    {"int64", {"0", "1", "1000000000000", "9223372036854775807"}},
    {"number", {"0", "1", "1e9", "1.7976931348623157e308"}},
    {"size", {"0", "1", "1000TB", "18446744073709551615"}},
    {"duration", {"0", "1s", "100000000s", "1.7976931348623157e308s"}},
    {"rate", {"0", "1B/s", "1000TB/s", "1.7976931348623157e308B/s"}},
};

struct Key {
  std::string path, type;
};

std::vector<Key> NumericKeys(const std::string& scenario) {
  const Result r = Stallscope("validate " + scenario + " --keys");
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<Key> keys;
  std::istringstream in(r.out);
  std::string line;
  bool table = false;
  while (std::getline(in, line)) {
    if (line.rfind("KEY ", 0) == 0) {
      table = true;
      continue;
    }
    if (!table || line.empty()) continue;
    std::istringstream words(line);
    Key k;
    words >> k.path >> k.type;
    if (kValues.count(k.type)) keys.push_back(k);
  }
  return keys;
}

// One run in flight: its pid, what it was given, where its stderr goes, when it started.
struct Child {
  pid_t pid = -1;
  std::string what, err_file;
  std::chrono::steady_clock::time_point start;
};

Child Start(const std::string& scenario, const std::string& set, const std::string& err_file) {
  Child c;
  c.what = set;
  c.err_file = err_file;
  c.start = std::chrono::steady_clock::now();
  c.pid = fork();
  if (c.pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    const int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(devnull, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execl(STALLSCOPE_BIN, STALLSCOPE_BIN, "run", scenario.c_str(), "--set", set.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return c;
}

// The banner's "memory budget: staging X + RAM cache Y", in bytes (0 when not printed).
uint64_t BannerBudget(const std::string& err) {
  static const std::regex re(
      R"(memory budget: staging ([0-9.]+) (\w+) \+ RAM cache ([0-9.]+) (\w+))");
  std::smatch m;
  if (!std::regex_search(err, m, re)) return 0;
  const auto staging = ParseSize(m[1].str() + m[2].str());
  const auto ram = ParseSize(m[3].str() + m[4].str());
  return static_cast<uint64_t>(staging.value_or(0) + ram.value_or(0));
}

TEST_F(Cli, EveryNumericKeyAtZeroOneHugeAndItsMaximumEndsCleanlyWithinItsBudget) {
  const std::string scenario = Write("limits.yaml", BaseScenario((dir_.path() / "disk").string()));
  const std::vector<Key> keys = NumericKeys(scenario);
  // The parser lists about 75 numeric keys for this scenario; far fewer means the listing
  // (or this parse of it) broke, and the loop below would prove nothing.
  ASSERT_GE(keys.size(), 60u);

  // The process's own footprint (code, libraries, heap) on the unchanged scenario.
  long baseline_kb = 0;
  {
    Child c = Start(scenario, "seed=7", (dir_.path() / "base.err").string());
    int status = 0;
    rusage usage{};
    ASSERT_EQ(wait4(c.pid, &status, 0, &usage), c.pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    baseline_kb = usage.ru_maxrss;
  }

  std::vector<std::string> sets;
  for (const Key& k : keys) {
    for (const std::string& v : kValues.at(k.type)) sets.push_back(k.path + "=" + v);
  }
  // Two at a time (most runs wait on a timer or end at once); each within 30 s.
  constexpr size_t kParallel = 2;
  constexpr double kLimitSeconds = 30;
  std::vector<Child> running;
  size_t next = 0, ran = 0, refused = 0, failed = 0;
  while (next < sets.size() || !running.empty()) {
    while (running.size() < kParallel && next < sets.size()) {
      running.push_back(Start(scenario, sets[next],
                              (dir_.path() / ("run" + std::to_string(next) + ".err")).string()));
      ++next;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      rusage usage{};
      const pid_t done = wait4(it->pid, &status, WNOHANG, &usage);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - it->start).count();
      if (done == 0 && seconds < kLimitSeconds * testing::kTimingSlack) {
        ++it;
        continue;
      }
      if (done == 0) {
        kill(it->pid, SIGKILL);
        waitpid(it->pid, &status, 0);
        ADD_FAILURE() << "--set " << it->what << ": still running after " << seconds << " s";
        it = running.erase(it);
        continue;
      }
      std::ifstream in(it->err_file);
      const std::string err((std::istreambuf_iterator<char>(in)), {});
      const std::string last =
          err.empty() ? "" : err.substr(err.find_last_of('\n', err.size() - 2) + 1);
      if (!WIFEXITED(status)) {
        ADD_FAILURE() << "--set " << it->what << ": ended by signal " << WTERMSIG(status) << "\n"
                      << err;
      } else {
        const int code = WEXITSTATUS(status);
        EXPECT_TRUE(code == 0 || code == 1 || code == 2)
            << "--set " << it->what << ": exit " << code << "\n"
            << err;
        if (code != 0) {
          // Ends with one line naming what went wrong (after the run's header line, which
          // names the scenario).
          EXPECT_EQ(last.rfind("stallscope: ", 0), 0u) << "--set " << it->what << "\n" << err;
          size_t messages = 0;
          for (size_t at = err.find("stallscope: "); at != std::string::npos;
               at = err.find("stallscope: ", at + 1)) {
            messages += at == 0 || err[at - 1] == '\n';
          }
          EXPECT_EQ(messages, 1u) << "--set " << it->what << "\n" << err;
          // In stallscope's words, naming the key or the stage: never a library's exception
          // text (std::bad_alloc, vector::_M_default_append, ...).
          EXPECT_EQ(last.find("std::"), std::string::npos) << it->what << ": " << last;
          EXPECT_EQ(last.find("::_M_"), std::string::npos) << it->what << ": " << last;
        }
        (code == 0 ? ran : code == 2 ? refused : failed) += 1;
        // Resident memory: the baseline, the banner's budget, and 64 MiB for the allocator,
        // thread stacks, the per-step records and the checkpoint's state.
        const long budget_kb =
            baseline_kb + static_cast<long>(BannerBudget(err) / 1024) + 64 * 1024;
        // (Sanitized builds keep freed memory in quarantine and shadow: not compared.)
        if (!testing::kSanitized) {
          EXPECT_LE(usage.ru_maxrss, budget_kb)
              << "--set " << it->what << ": peak " << usage.ru_maxrss / 1024 << " MiB";
        }
      }
      it = running.erase(it);
    }
  }
  std::printf("%zu numeric keys, %zu inputs: %zu ran, %zu refused (exit 2), %zu failed (exit 1)\n",
              keys.size(), sets.size(), ran, refused, failed);
}

}  // namespace
}  // namespace stallscope::cli
