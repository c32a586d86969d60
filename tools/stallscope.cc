// stallscope: is my data pipeline starving the GPU, by how much, why, and what would fix it?
//
// The command-line front end: parses arguments with CLI11, runs the subcommands, and turns
// every set-up or input error into one message on stderr and exit code 2 (a run that fails
// part-way exits 1).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "cache/cache.h"
#include "gpu/make_device.h"
#ifdef STALLSCOPE_HAVE_CUDA
#include "gpu/kernel_ladder.h"
#endif
#include "pipeline/bench_dir.h"
#include "pipeline/html_report.h"
#include "pipeline/metrics.h"
#include "pipeline/metrics_server.h"
#include "pipeline/report.h"
#include "pipeline/runner.h"
#include "pipeline/scenario.h"
#include "pipeline/simulator.h"
#include "pipeline/sweep.h"
#include "pipeline/trace.h"
#include "pipeline/units.h"
#include "storage/generate.h"
#include "storage/jpeg.h"
#include "storage/storage.h"

namespace stallscope {
namespace {

constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;

// A one-line live display on a terminal: variant, epoch, samples/s, idle so far.
class ProgressLine {
 public:
  ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { Stop(); }

  void Start(const std::string& variant, const Pipeline& pipeline, uint32_t epochs) {
    if (!enabled_) return;
    Stop();
    stop_ = false;
    thread_ = std::thread([this, variant, &pipeline, epochs] {
      const LiveCounters& live = pipeline.live();
      const auto t0 = std::chrono::steady_clock::now();
      std::unique_lock lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stop_; })) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double span = live.last_step_end - live.first_step_start;
        const double idle = span > 0 ? std::max(0.0, 1 - live.busy_seconds / span) : 0;
        std::fprintf(
            stderr, "\r\033[K[%s] epoch %u/%u  step %llu/%llu  %.0f samples/s  idle %.1f%%",
            variant.c_str(), live.epoch.load() + 1, epochs,
            static_cast<unsigned long long>(live.steps.load()),
            static_cast<unsigned long long>(pipeline.total_steps()),
            elapsed > 0 ? static_cast<double>(live.samples.load()) / elapsed : 0.0, idle * 100);
        std::fflush(stderr);
      }
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    });
  }

  void Stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  const bool enabled_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

std::vector<Override> ParseSets(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const std::string& s : sets) out.push_back(ParseSetArgument(s));
  return out;
}

// Ctrl-C and SIGTERM during `run`: the first stops the variant in progress (its completed
// steps are analysed and written, marked partial) and skips the rest; the handler resets
// itself, so a second signal kills at once. A watcher thread turns the flag the handler
// sets into Pipeline::RequestStop(), which a signal handler may not call.
// A lock-free atomic: safe in a signal handler and between the handler's thread and the
// watcher (a volatile sig_atomic_t is only the former).
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void OnStopSignal(int sig) {
  const int saved_errno = errno;
  g_stop_signal.store(sig);
  errno = saved_errno;
}

int StopSignal() { return g_stop_signal.load(); }

class StopOnSignal {
 public:
  StopOnSignal() {
    struct sigaction sa = {};
    sa.sa_handler = OnStopSignal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    watcher_ = std::thread([this] {
      while (!done_.load()) {
        if (g_stop_signal) {
          std::lock_guard lock(mu_);
          if (pipeline_) pipeline_->RequestStop();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~StopOnSignal() {
    done_ = true;
    watcher_.join();
    if (!g_stop_signal) {
      sigaction(SIGINT, &old_int_, nullptr);
      sigaction(SIGTERM, &old_term_, nullptr);
    }
  }
  // The pipeline a signal stops (nullptr between variants). The pipeline outlives its
  // attachment: on_finish detaches before RunVariant destroys it.
  void Attach(Pipeline* p) {
    std::lock_guard lock(mu_);
    pipeline_ = p;
  }

 private:
  std::mutex mu_;
  Pipeline* pipeline_ = nullptr;
  std::atomic<bool> done_{false};
  std::thread watcher_;
  struct sigaction old_int_ = {}, old_term_ = {};
};

// Pushes a variant's final values; a Pushgateway that refuses them is a warning, not a failure.
void PushQuietly(const std::string& gateway, const VariantMetrics& metrics,
                 const std::string& variant) {
  try {
    const int status = PushToGateway(gateway, metrics);
    if (status >= 300) {
      std::fprintf(stderr, "warning: the Pushgateway answered HTTP %d for %s\n", status,
                   variant.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
}

struct ObservabilityOptions {
  std::string metrics_listen;  // empty: no server
  std::string linger = "0s";
  std::string push_gateway;  // empty: no push
};

// `simulate`: the same variants on a simulated clock (pipeline/simulator.h).
struct SimulateOptions {
  bool enabled = false;
  bool against_run = false;       // also run each variant for real and compare idle fractions
  bool max_accelerators = false;  // search the largest cluster that keeps AU >= au
  double au = 0.9;
};

// The simulator's steps told to a metrics observer, as a real run tells them while it goes.
void ReplaySteps(const RunRecord& record, uint32_t warmup, StepObserver& observer) {
  double previous_end = 0;
  for (size_t k = 0; k < record.batches.size(); ++k) {
    const BatchRecord& b = record.batches[k];
    observer.OnStep(b, k == 0 ? 0.0 : previous_end, k >= warmup, b.queues);
    previous_end = b.step_end;
  }
}

// `simulate --max-accelerators`: per variant, the largest cluster that keeps AU >= target.
int MaxAcceleratorsCommand(const std::vector<Scenario>& scenarios, double target,
                           const std::string& json_path, bool quiet) {
  if (!(target > 0 && target <= 1)) {
    throw SetupError(fmt::format("--au {}: expected a fraction in (0, 1], e.g. 0.9", target));
  }
  Simulator simulator(HostModel::Measure(scenarios[0].dataset.sample_size));
  nlohmann::json doc = {{"scenario", scenarios[0].name},
                        {"mode", "simulate"},
                        {"au_target", target},
                        {"variants", nlohmann::json::array()}};
  std::string out;
  for (const Scenario& s : scenarios) {
    if (!quiet) {
      std::fprintf(stderr, "▶ %s: searching cluster sizes (%u GPU(s) per node) for AU >= %.0f%%\n",
                   s.variant.c_str(), s.cluster.gpus_per_node, target * 100);
    }
    const MaxAccelerators m = FindMaxAccelerators(simulator, s, target);
    out += fmt::format("{}: ", s.variant);
    if (m.nodes == 0) {
      out += fmt::format("no cluster size keeps AU >= {:.0f}% (one node: AU {:.1f}%)\n",
                         target * 100, m.tried.empty() ? 0.0 : m.tried.front().au * 100);
    } else {
      out +=
          fmt::format("at most {} accelerators ({} nodes x {}) keep AU >= {:.0f}% (AU {:.1f}%){}\n",
                      m.accelerators, m.nodes, s.cluster.gpus_per_node, target * 100, m.au * 100,
                      m.limited_by_dataset ? "; the dataset is too small to try more" : "");
    }
    nlohmann::json tried = nlohmann::json::array();
    for (const auto& t : m.tried) {
      out += fmt::format("    {:>8} GPUs ({:>6} nodes): AU {:5.1f}%{}\n", t.accelerators, t.nodes,
                         t.au * 100, t.au >= target ? "" : "  below target");
      tried.push_back({{"nodes", t.nodes}, {"accelerators", t.accelerators}, {"au", t.au}});
    }
    doc["variants"].push_back({{"name", s.variant},
                               {"max_accelerators", m.accelerators},
                               {"nodes", m.nodes},
                               {"gpus_per_node", s.cluster.gpus_per_node},
                               {"au", m.au},
                               {"limited_by_dataset", m.limited_by_dataset},
                               {"tried", tried}});
  }
  std::cout << out << std::flush;
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) throw SetupError(json_path + ": cannot write the --json file");
    f << doc.dump(2) << "\n";
  }
  return 0;
}

// `simulate --against-run`: each variant run for real (emulated device) and simulated, side by
// side. The simulator's claim is that the idle fractions agree within 3 percentage points.
int AgainstRunCommand(std::vector<Scenario> scenarios, const std::string& json_path, bool quiet) {
  constexpr double kTolerance = 0.03;
  for (Scenario& s : scenarios) {
    if (s.cluster.nodes * s.cluster.gpus_per_node > 1 && !quiet) {
      std::fprintf(
          stderr, "%s: a real run measures one GPU on this host: compared at 1 x 1 (not %u x %u)\n",
          s.variant.c_str(), s.cluster.nodes, s.cluster.gpus_per_node);
    }
    s = OnThisHost(std::move(s));
  }
  for (const Scenario& s : scenarios) CheckRunnable(s);
  Simulator simulator(HostModel::Measure(scenarios[0].dataset.sample_size));
  nlohmann::json rows = nlohmann::json::array();
  std::string table = fmt::format("{:<24} {:>10} {:>10} {:>8}  {:<10} {:<10}\n", "variant",
                                  "real idle", "sim idle", "diff", "real", "simulated");
  int within = 0;
  for (const Scenario& s : scenarios) {
    if (!quiet) std::fprintf(stderr, "▶ %s: real run, then simulation\n", s.variant.c_str());
    const HostModel before = HostModel::Measure(s.dataset.sample_size);
    std::unique_ptr<Storage> storage = MakeStorage(s, quiet);
    std::unique_ptr<Device> device = MakeDevice(s);
    const VariantResult real = RunVariant(s, *storage, *device, RunHooks{.quiet = true});
    // This minute's speed: measured on both sides of the real run.
    simulator.set_host(HostModel::Mean(before, HostModel::Measure(s.dataset.sample_size)));
    const VariantResult sim = simulator.RunVariant(s);
    const double diff = sim.gpu_idle_fraction - real.gpu_idle_fraction;
    const bool ok = std::abs(diff) <= kTolerance;
    within += ok;
    table += fmt::format("{:<24} {:>9.1f}% {:>9.1f}% {:>+6.1f}pp  {:<10} {:<10}{}\n", s.variant,
                         real.gpu_idle_fraction * 100, sim.gpu_idle_fraction * 100, diff * 100,
                         real.bottleneck_stage, sim.bottleneck_stage, ok ? "" : "  OUTSIDE 3 pp");
    rows.push_back({{"name", s.variant},
                    {"real", VariantToJson(real)},
                    {"simulated", VariantToJson(sim)},
                    {"idle_difference", diff},
                    {"within_tolerance", ok}});
  }
  table += fmt::format("{} of {} variant(s) within {:.0f} percentage points\n", within,
                       scenarios.size(), kTolerance * 100);
  std::cout << "\n" << table << std::flush;
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) throw SetupError(json_path + ": cannot write the --json file");
    f << nlohmann::json{{"scenario", scenarios[0].name},
                        {"mode", "simulate-against-run"},
                        {"tolerance", kTolerance},
                        {"variants", rows}}
             .dump(2)
      << "\n";
  }
  return 0;
}

int Run(const std::string& path, std::vector<std::string> variants,
        const std::vector<std::string>& sets, const std::string& json_path,
        const std::string& trace_path, const ObservabilityOptions& obs, bool quiet,
        const SimulateOptions& sim = {}) {
  const ScenarioFile file = ScenarioFile::Load(path);
  const std::vector<Override> overrides = ParseSets(sets);
  if (variants.empty()) variants = file.variant_names();
  // Resolve everything first: a bad variant fails before anything runs.
  std::vector<Scenario> scenarios;
  for (const std::string& v : variants) {
    scenarios.push_back(file.Resolve(v, overrides));
    if (sim.enabled) {
      CheckSimulatable(scenarios.back());
    } else {
      CheckRunnable(scenarios.back());
    }
  }
  if (sim.enabled && sim.against_run) return AgainstRunCommand(scenarios, json_path, quiet);
  if (sim.enabled && sim.max_accelerators) {
    return MaxAcceleratorsCommand(scenarios, sim.au, json_path, quiet);
  }
  std::unique_ptr<Simulator> simulator;
  if (sim.enabled) {
    simulator = std::make_unique<Simulator>(HostModel::Measure(scenarios[0].dataset.sample_size));
    if (!quiet) {
      const HostModel& h = simulator->host();
      std::fprintf(stderr,
                   "host model (measured here): %u cores, normalize %.0f MB/s, verify %.0f MB/s, "
                   "memcpy %.0f MB/s (into fresh pages %.0f MB/s), receive %.0f MB/s per core; "
                   "preprocess.cost runs at %.3fx (%.3fx with every core busy)\n",
                   h.cores, h.normalize_bytes_per_second / 1e6, h.verify_bytes_per_second / 1e6,
                   h.memcpy_bytes_per_second / 1e6, h.fresh_write_bytes_per_second / 1e6,
                   h.receive_bytes_per_second / 1e6, h.burn_seconds_per_second,
                   h.burn_all_cores_seconds_per_second);
    }
  }
  std::ofstream json_out, trace_out;
  if (!json_path.empty()) {
    json_out.open(json_path);
    if (!json_out) throw SetupError(json_path + ": cannot write the --json file");
  }
  if (!trace_path.empty()) {
    trace_out.open(trace_path);
    if (!trace_out) throw SetupError(trace_path + ": cannot write the --trace file");
  }
  nlohmann::json trace_events = nlohmann::json::array();
  const std::optional<double> linger = ParseDuration(obs.linger);
  if (!linger || *linger < 0) {
    throw SetupError("--linger " + obs.linger + ": expected a duration such as 30s or 500ms");
  }
  if (!obs.push_gateway.empty() && obs.push_gateway.rfind("http://", 0) != 0) {
    throw SetupError("--push-gateway " + obs.push_gateway + ": expected http://HOST:PORT");
  }
  MetricsHub hub;
  std::unique_ptr<MetricsServer> server;
  if (!obs.metrics_listen.empty()) {
    try {
      server =
          std::make_unique<MetricsServer>(obs.metrics_listen, [&hub] { return hub.Serialize(); });
    } catch (const std::invalid_argument& e) {
      throw SetupError(e.what());
    }
    if (!quiet) std::fprintf(stderr, "metrics: http://%s/metrics\n", server->address().c_str());
  }
  const bool want_metrics = server || !obs.push_gateway.empty();
  // Open every real dataset before anything runs: a bad directory is bad input (exit 2).
  std::vector<std::unique_ptr<Storage>> storages(scenarios.size());
  for (size_t i = 0; i < scenarios.size() && !sim.enabled; ++i) {
    if (scenarios[i].storage.kind == "directory") storages[i] = MakeStorage(scenarios[i], quiet);
  }
  const bool tty = !quiet && isatty(STDERR_FILENO);
  ProgressLine progress(tty);
  if (!quiet) {
    std::fprintf(stderr, "stallscope %s: %s (%s), %zu variant(s)\n",
                 sim.enabled ? "simulate" : "run", scenarios[0].name.c_str(), path.c_str(),
                 scenarios.size());
  }
  std::vector<VariantResult> results;
  StopOnSignal stopper;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (StopSignal()) break;  // interrupted: the variants not started are not run
    const Scenario& s = scenarios[i];
    if (simulator) {
      std::vector<std::string> tiers;
      for (const TierOptions& t : s.cache_tiers) tiers.push_back(t.kind);
      SimulationStats stats;
      RunRecord record;
      VariantResult v = simulator->RunVariant(s, &stats, &record);
      if (!quiet) {
        std::fprintf(stderr,
                     "▶ %s: %u GPU(s) (%u x %u), %llu steps, %.1f s simulated in %.2f s "
                     "(%.1f M events/s)\n",
                     s.variant.c_str(), stats.ranks, s.cluster.nodes, s.cluster.gpus_per_node,
                     static_cast<unsigned long long>(v.steps), stats.simulated_seconds,
                     stats.wall_seconds,
                     stats.wall_seconds > 0 ? stats.events / stats.wall_seconds / 1e6 : 0.0);
      }
      if (want_metrics) {
        auto metrics = std::make_shared<VariantMetrics>(s.name, s.variant, tiers);
        hub.Add(metrics);
        ReplaySteps(record, s.run.warmup_steps, *metrics);
        if (!obs.push_gateway.empty()) PushQuietly(obs.push_gateway, *metrics, s.variant);
      }
      if (trace_out.is_open()) {
        AppendTraceEvents(trace_events, record, s.variant, static_cast<int>(i) + 1, tiers);
      }
      results.push_back(std::move(v));
      continue;
    }
    std::unique_ptr<Storage> storage = storages[i] ? std::move(storages[i]) : MakeStorage(s, quiet);
    std::unique_ptr<Device> device = MakeDevice(s);
    RunHooks hooks;
    hooks.quiet = quiet;
    hooks.on_start = [&](const Scenario& sc, const Storage& st, const Cache& cache, Pipeline& p) {
      stopper.Attach(&p);
      if (!quiet) {
        uint64_t cache_bytes = 0;
        for (const TierOptions& t : sc.cache_tiers) {
          if (t.kind == "memory") cache_bytes += t.capacity;
        }
        std::fprintf(stderr,
                     "▶ %s: %s | cache: %s | %u workers, prefetch %u, batch %u | device: %s, "
                     "step %s | memory budget: staging %s + RAM cache %s | %llu steps\n",
                     sc.variant.c_str(), st.Describe().c_str(), cache.Describe().c_str(),
                     sc.loader.workers, sc.loader.prefetch, sc.loader.batch_size,
                     device->name().c_str(), FormatDuration(sc.gpu.step_time).c_str(),
                     FormatBinaryBytes(static_cast<double>(p.staging_bytes())).c_str(),
                     FormatBinaryBytes(static_cast<double>(cache_bytes)).c_str(),
                     static_cast<unsigned long long>(p.total_steps()));
      }
      progress.Start(sc.variant, p, sc.run.epochs);
    };
    hooks.on_finish = [&] {
      stopper.Attach(nullptr);
      progress.Stop();
    };
    std::shared_ptr<VariantMetrics> metrics;
    if (want_metrics) {
      std::vector<std::string> tiers;
      for (const TierOptions& t : s.cache_tiers) tiers.push_back(t.kind);
      metrics = std::make_shared<VariantMetrics>(s.name, s.variant, tiers);
      hub.Add(metrics);
      hooks.observer = metrics.get();
    }
    if (trace_out.is_open()) {
      hooks.trace = true;
      hooks.on_record = [&, pid = static_cast<int>(i) + 1](const RunRecord& record,
                                                           const std::vector<std::string>& tiers) {
        AppendTraceEvents(trace_events, record, s.variant, pid, tiers);
      };
    }
    results.push_back(RunVariant(s, *storage, *device, hooks));
    if (metrics && !obs.push_gateway.empty()) PushQuietly(obs.push_gateway, *metrics, s.variant);
  }
  std::cout << "\n" << FormatTable(results) << std::flush;
  if (json_out.is_open()) {
    json_out << ResultDocument(scenarios[0].name, sim.enabled ? "simulate" : "run", results).dump(2)
             << "\n";
    if (!quiet) std::fprintf(stderr, "wrote %s\n", json_path.c_str());
  }
  if (trace_out.is_open()) {
    trace_out << TraceDocument(std::move(trace_events)).dump() << "\n";
    if (!quiet) std::fprintf(stderr, "wrote %s (open it in ui.perfetto.dev)\n", trace_path.c_str());
  }
  if (server && *linger > 0 && !StopSignal()) {
    if (!quiet) {
      std::fprintf(stderr, "serving the final metrics at http://%s/metrics for %s\n",
                   server->address().c_str(), FormatDuration(*linger).c_str());
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(*linger));
  }
  if (const int sig = StopSignal()) {
    std::fprintf(stderr, "stallscope: interrupted by %s: the results above are partial%s\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM",
                 json_out.is_open() || trace_out.is_open() ? " (and so marked in the files)" : "");
    return 128 + sig;
  }
  return 0;
}

// `sweep`: every variant at every grid point, run for real or simulated; a table on stdout, the
// rows in a CSV (and the full results in --json) that `report` draws.
int Sweep(const std::string& path, std::vector<std::string> variants,
          const std::vector<std::string>& sets, const std::vector<std::string>& grids,
          bool simulate, std::string csv_path, const std::string& json_path, bool quiet) {
  const ScenarioFile file = ScenarioFile::Load(path);
  const std::vector<Override> overrides = ParseSets(sets);
  if (grids.empty()) throw SetupError("sweep: give at least one --grid KEY=V1,V2,...");
  std::vector<GridAxis> axes;
  for (const std::string& g : grids) axes.push_back(ParseGridArgument(g));
  if (variants.empty()) variants = file.variant_names();
  // Resolve every point first: a bad key or value fails before anything runs.
  struct Job {
    Scenario scenario;
    std::vector<std::pair<std::string, std::string>> point;
  };
  std::vector<Job> jobs;
  for (const auto& point : GridPoints(axes)) {
    std::vector<Override> all = overrides;
    for (const auto& [key, value] : point) {
      all.push_back(ParseSetArgument(key + "=" + value));
      all.back().origin = fmt::format("--grid {}={}", key, value);
    }
    for (const std::string& v : variants) {
      Scenario s = file.Resolve(v, all);
      if (simulate) {
        CheckSimulatable(s);
      } else {
        CheckRunnable(s);
      }
      jobs.push_back({std::move(s), point});
    }
  }
  if (csv_path.empty()) csv_path = jobs[0].scenario.name + "-sweep.csv";
  std::ofstream csv(csv_path);
  if (!csv) throw SetupError(csv_path + ": cannot write the --csv file");
  std::unique_ptr<Simulator> simulator;
  if (simulate) {
    simulator =
        std::make_unique<Simulator>(HostModel::Measure(jobs[0].scenario.dataset.sample_size));
  }
  std::vector<SweepRow> rows;
  std::vector<VariantResult> named;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Scenario& s = jobs[i].scenario;
    std::string label = s.variant;
    for (const auto& [key, value] : jobs[i].point) label += " " + key + "=" + value;
    if (!quiet) {
      std::fprintf(stderr, "▶ [%zu/%zu] %s%s\n", i + 1, jobs.size(), label.c_str(),
                   simulate ? " (simulated)" : "");
    }
    VariantResult v;
    if (simulator) {
      v = simulator->RunVariant(s);
    } else {
      std::unique_ptr<Storage> storage = MakeStorage(s, quiet);
      std::unique_ptr<Device> device = MakeDevice(s);
      v = RunVariant(s, *storage, *device, RunHooks{.quiet = true});
    }
    rows.push_back({s.variant, jobs[i].point, v});
    v.name = label;
    named.push_back(std::move(v));
  }
  const std::string mode = simulate ? "simulate" : "run";
  csv << SweepCsv(axes, rows, mode);
  std::string table = fmt::format("{:<48} {:>9} {:>9} {:>11}  {}\n", "variant and point",
                                  "GPU idle", "AU", "samples/s", "bottleneck");
  for (const VariantResult& v : named) {
    table +=
        fmt::format("{:<48} {:>8.1f}% {:>8.1f}% {:>11.0f}  {}\n", v.name, v.gpu_idle_fraction * 100,
                    v.au * 100, v.samples_per_second, v.bottleneck_stage);
  }
  std::cout << "\n" << table << std::flush;
  if (!quiet) std::fprintf(stderr, "wrote %s\n", csv_path.c_str());
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) throw SetupError(json_path + ": cannot write the --json file");
    f << ResultDocument(jobs[0].scenario.name, mode, named).dump(2) << "\n";
  }
  return 0;
}

int Report(const std::vector<std::string>& inputs, const std::string& output, bool quiet) {
  std::vector<nlohmann::json> docs;
  for (const std::string& in : inputs) {
    std::ifstream f(in);
    if (!f) throw SetupError(in + ": cannot open");
    if (in.ends_with(".csv")) {  // a sweep (stallscope sweep --csv)
      const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
      try {
        docs.push_back(SweepFromCsv(text, in));
      } catch (const std::invalid_argument& e) {
        throw SetupError(e.what());
      }
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw SetupError(in + ": not valid JSON");
    docs.push_back(std::move(j));
  }
  std::string html;
  try {
    html = RenderHtmlReport(docs, inputs);
  } catch (const std::invalid_argument& e) {
    throw SetupError(e.what());
  }
  std::ofstream out(output);
  if (!out) throw SetupError(output + ": cannot write the report");
  out << html;
  if (!out) throw SetupError(output + ": cannot write the report");
  if (!quiet) std::fprintf(stderr, "wrote %s (%zu bytes)\n", output.c_str(), html.size());
  return 0;
}

// MLPerf Storage's H100 workloads: batch size and step time (DLIO's published configs).
struct Workload {
  const char* name;
  uint32_t batch;
  double step_seconds;
};
constexpr Workload kWorkloads[] = {
    {"resnet50", 400, 0.224}, {"unet3d", 7, 0.323}, {"cosmoflow", 1, 0.00350}};

struct BenchTraining {
  uint32_t batch = 0;  // 0: no training loop
  std::string step_time = "0";
  uint32_t workers = 2;
  std::string workload;
  std::string preprocess = "auto";  // auto: jpeg-decode when the files are JPEGs, else none
};

// True when the first regular file found below `dir` starts like a JPEG.
bool DirectoryHoldsJpegs(const std::string& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().filename().string().starts_with(".stallscope")) {
      continue;
    }
    std::ifstream f(it->path(), std::ios::binary);
    char head[3] = {};
    f.read(head, 3);
    return f.gcount() == 3 && LooksLikeJpeg(reinterpret_cast<const std::byte*>(head), 3);
  }
  return false;
}

int BenchDir(const BenchDirOptions& o, BenchTraining t, const std::string& json_path) {
  if (!t.workload.empty()) {
    const Workload* w = nullptr;
    for (const Workload& k : kWorkloads) {
      if (t.workload == k.name) w = &k;
    }
    if (!w)
      throw SetupError("--workload " + t.workload + ": expected resnet50, unet3d or cosmoflow");
    t.batch = w->batch;
    t.step_time = fmt::format("{}s", w->step_seconds);
  }
  const std::optional<double> step = ParseDuration(t.step_time);
  if (!step || *step < 0) throw SetupError("--step-time " + t.step_time + ": expected a duration");
  if (t.batch > 0 && *step <= 0) {
    throw SetupError("--step-time: the training loop needs a positive step time (or --workload)");
  }
  std::ofstream json_out;
  if (!json_path.empty()) {
    json_out.open(json_path);
    if (!json_out) throw SetupError(json_path + ": cannot write the --json file");
  }
  const BenchDirResult r = BenchDirectory(o);
  std::cout << FormatBenchDir(r) << std::flush;
  nlohmann::json doc = BenchDirToJson(r);
  if (t.batch > 0) {
    // The training loop on the emulated device: the same files, the real pipeline.
    Scenario s;
    s.name = "bench-dir";
    s.variant = t.workload.empty() ? "training" : t.workload;
    s.file = o.path;
    s.dataset.path = o.path;
    s.storage.kind = "directory";
    s.storage.cold = o.cold;
    s.storage.direct_io = o.direct;
    s.loader.batch_size = t.batch;
    s.loader.workers = t.workers;
    s.loader.io_depth = o.io_depth;
    s.loader.io_threads = o.io_threads;
    if (t.preprocess == "auto") {
      s.loader.preprocess = DirectoryHoldsJpegs(o.path) ? "jpeg-decode" : "none";
    } else if (t.preprocess == "none" || t.preprocess == "normalize" ||
               t.preprocess == "jpeg-decode") {
      s.loader.preprocess = t.preprocess;
    } else {
      throw SetupError("--preprocess " + t.preprocess +
                       ": expected auto, none, normalize or jpeg-decode");
    }
    s.gpu.device = "emulated";
    s.gpu.step_time = *step;
    s.run.epochs = 1;
    s.run.verify = false;
    auto storage = MakeStorage(s, o.quiet);
    auto device = MakeDevice(s);
    const VariantResult v = RunVariant(s, *storage, *device, RunHooks{.quiet = o.quiet});
    // How many accelerators this storage and host could keep at AU >= 90%: the slowest
    // shared stage (storage, CPU preprocessing; each accelerator has its own H2D link)
    // against 90% of one accelerator's demand, from the capacities measured in this run.
    double shared = v.capacity_fetch.value_or(1e300);
    if (v.capacity_preprocess) shared = std::min(shared, *v.capacity_preprocess);
    const double demand = t.batch / *step;
    const uint64_t max_accelerators =
        v.au < 0.9 ? 0 : static_cast<uint64_t>(shared / (0.9 * demand));
    nlohmann::json training = VariantToJson(v);
    training["max_accelerators_at_au_0_9"] = max_accelerators;
    training["batch_size"] = t.batch;
    training["step_seconds"] = *step;
    training["preprocess"] = s.loader.preprocess;
    doc["training"] = training;
    std::cout << fmt::format(
        "\ntraining loop ({}batch {}, step {}, {} workers, preprocess {}, emulated accelerator):\n"
        "  GPU idle {:.1f}%   AU {:.1f}%   {:.0f} samples/s\n  {}\n"
        "  accelerators this storage and host could keep at AU >= 90%: {}\n",
        t.workload.empty() ? "" : t.workload + ", ", t.batch, FormatDuration(*step), t.workers,
        s.loader.preprocess, v.gpu_idle_fraction * 100, v.au * 100, v.samples_per_second,
        v.bottleneck_text, max_accelerators);
  }
  if (json_out.is_open()) json_out << doc.dump(2) << "\n";
  return r.skipped ? kExitRunFailed : 0;
}

int Validate(const std::string& path) {
  const ScenarioFile file = ScenarioFile::Load(path);
  std::vector<Scenario> scenarios;
  for (const std::string& v : file.variant_names()) scenarios.push_back(file.Resolve(v));
  std::cout << path << ": OK\n";
  for (const Scenario& s : scenarios) {
    const std::string& v = s.variant;
    std::string cache = s.cache_tiers.empty() ? "no cache" : "";
    for (const TierOptions& t : s.cache_tiers) {
      cache += fmt::format("{}{} {} {}", cache.empty() ? "" : " + ", t.kind,
                           FormatBinaryBytes(static_cast<double>(t.capacity)), t.policy);
    }
    std::cout << fmt::format(
        "  {}: storage {}{}, {}, batch {}, prefetch {}, {} workers ({}), step {}, {} epoch(s)\n", v,
        s.storage.kind,
        s.storage.kind == "directory" ? " " + s.dataset.path
                                      : fmt::format(" {} samples", s.dataset.samples),
        cache, s.loader.batch_size, s.loader.prefetch, s.loader.workers, s.loader.preprocess,
        FormatDuration(s.gpu.step_time), s.run.epochs);
  }
  return 0;
}

int Gen(const std::string& dir, uint64_t samples, const std::string& size_text,
        const std::string& format, uint32_t classes, uint64_t seed, bool quiet) {
  if (format != "raw" && format != "jpeg") {
    throw SetupError("--format " + format + ": expected raw or jpeg");
  }
  if (samples == 0) throw SetupError("--samples: must be at least 1");
  GenerateOptions o;
  o.dir = dir;
  o.samples = samples;
  o.classes = classes;
  o.seed = seed;
  o.format = format;
  if (format == "jpeg") {
    // --size is the image's pixels, WxH (default 256x256).
    const std::string text = size_text.empty() ? "256x256" : size_text;
    int w = 0, h = 0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%dx%d%c", &w, &h, &extra) != 2 || w < 8 || h < 8 || w > 8192 ||
        h > 8192) {
      throw SetupError("--size " + text +
                       ": with --format jpeg, expected the image size WxH in pixels (8 to "
                       "8192), e.g. 256x256");
    }
    o.width = w;
    o.height = h;
  } else {
    const std::string text = size_text.empty() ? "112KiB" : size_text;
    std::string mean_text = text, stdev_text = "0";
    if (const auto colon = text.find(':'); colon != std::string::npos) {
      mean_text = text.substr(0, colon);
      stdev_text = text.substr(colon + 1);
    }
    const auto mean = ParseSize(mean_text);
    const auto stdev = ParseSize(stdev_text);
    if (!mean || *mean < 1 || !stdev || *stdev < 0) {
      throw SetupError("--size " + text +
                       ": expected SIZE or SIZE:STDEV, e.g. 112KiB or 112KiB:20KiB");
    }
    o.size_mean = static_cast<uint64_t>(*mean);
    o.size_stdev = static_cast<uint64_t>(*stdev);
  }
  const bool tty = !quiet && isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  const GenerateResult r = GenerateDataset(o, [&](uint64_t done) {
    if (tty)
      std::fprintf(stderr, "\r\033[Kgen: %llu / %llu files", (unsigned long long)done,
                   (unsigned long long)samples);
  });
  if (tty) std::fprintf(stderr, "\r\033[K");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) {
    std::cout << fmt::format("wrote {} files, {} ({}), {} classes, seed {} to {} in {:.1f} s\n",
                             r.files, FormatBytes(static_cast<double>(r.bytes)),
                             FormatBinaryBytes(static_cast<double>(r.bytes)), classes, seed, dir,
                             secs);
  }
  return 0;
}

// `stallscope kernels`: the GEMM ladder against cuBLAS on this GPU.
int Kernels(const std::string& sizes_text, const std::string& json_path, bool quiet) {
  std::vector<int> sizes;
  size_t pos = 0;
  while (pos <= sizes_text.size()) {
    const size_t comma = std::min(sizes_text.find(',', pos), sizes_text.size());
    const std::string item = sizes_text.substr(pos, comma - pos);
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 256 || n > 16384 || n % 256 != 0) {
      std::fprintf(stderr,
                   "stallscope kernels: --sizes: '%s' is not a size; give multiples of 256 from "
                   "256 to 16384, e.g. --sizes 1024,4096,8192\n",
                   item.c_str());
      return kExitBadInput;
    }
    sizes.push_back(static_cast<int>(n));
    pos = comma + 1;
  }
#ifndef STALLSCOPE_HAVE_CUDA
  (void)json_path;
  (void)quiet;
  std::fprintf(stderr, "stallscope kernels: this stallscope was built without CUDA (no nvcc)\n");
  return kExitBadInput;
#else
  if (!CudaGpuPresent()) {
    std::fprintf(stderr,
                 "stallscope kernels: no CUDA GPU is visible to this process; the ladder runs "
                 "only on a GPU host\n");
    return kExitBadInput;
  }
  gpu::LadderOptions o;
  o.sizes = sizes;
  if (!quiet)
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const gpu::LadderResult r = gpu::RunKernelLadder(o);
  std::string out = fmt::format(
      "GEMM ladder on {} (C = A·B, n×n×n) | device-to-device copy {:.0f} GB/s | cuBLAS peak "
      "fp32 {:.1f}, bf16 {:.1f} TFLOP/s\n\n",
      r.device, r.copy_bandwidth / 1e9, r.peak_fp32 / 1e12, r.peak_bf16 / 1e12);
  out += fmt::format("{:>6}  {:<20} {:<5} {:>10} {:>9} {:>9} {:>9}  {:<7} {}\n", "n", "kernel",
                     "prec", "ms", "TFLOP/s", "% cuBLAS", "rel.err", "valid", "bound");
  nlohmann::json rows = nlohmann::json::array();
  bool all_valid = true;
  for (const gpu::LadderRow& row : r.rows) {
    if (!row.ran) {
      out += fmt::format("{:>6}  {:<20} {:<5} {:>10}\n", row.size, row.kernel, row.precision,
                         "skipped (slow rung at this size)");
      continue;
    }
    all_valid = all_valid && row.valid;
    out +=
        fmt::format("{:>6}  {:<20} {:<5} {:>10.3f} {:>9.1f} {:>8.1f}% {:>9.1e}  {:<7} {}\n",
                    row.size, row.kernel, row.precision, row.ms, row.tflops, row.percent_of_cublas,
                    row.relative_error, row.valid ? "yes" : "NO", row.bound);
    rows.push_back({{"size", row.size},
                    {"kernel", row.kernel},
                    {"precision", row.precision},
                    {"ms", row.ms},
                    {"tflops", row.tflops},
                    {"percent_of_cublas", row.percent_of_cublas},
                    {"relative_error", row.relative_error},
                    {"error_bound", row.error_bound},
                    {"valid", row.valid},
                    {"bound", row.bound}});
  }
  std::fputs(out.c_str(), stdout);
  if (!json_path.empty()) {
    const nlohmann::json doc = {{"device", r.device},
                                {"copy_bytes_per_second", r.copy_bandwidth},
                                {"peak_flops", {{"fp32", r.peak_fp32}, {"bf16", r.peak_bf16}}},
                                {"rows", rows}};
    std::ofstream f(json_path);
    f << doc.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "stallscope kernels: cannot write %s\n", json_path.c_str());
      return kExitRunFailed;
    }
  }
  if (!all_valid) {
    std::fprintf(stderr, "stallscope kernels: a kernel failed validation (valid = NO above)\n");
    return kExitRunFailed;
  }
  return 0;
#endif
}

int Main(int argc, char** argv) {
  CLI::App app{
      "stallscope: is the data pipeline starving the GPU, by how much, why, and what would fix "
      "it?\n\nRuns a real loader (storage -> cache -> prefetch -> CPU preprocessing -> staging "
      "buffers -> device), measures the GPU's idle fraction and charges every idle second to the "
      "stage that caused it.\n\nExamples:\n"
      "  stallscope run scenarios/cold_vs_cached.yaml\n"
      "  stallscope run scenarios/prefetch_sweep.yaml --variant prefetch-0 --set run.epochs=1\n"
      "  stallscope gen /tmp/ds --samples 5000 --size 112KiB:20KiB\n"
      "  stallscope gen /tmp/img --samples 20000 --format jpeg --size 256x256\n"
      "  stallscope validate my.yaml\n"
      "  stallscope simulate scenarios/cluster_what_if.yaml --set cluster.nodes=125\n"
      "  stallscope simulate S.yaml --max-accelerators --au 0.9\n"
      "  stallscope sweep S.yaml --grid loader.prefetch=0,2,8 --simulate --csv s.csv\n"
      "  stallscope run S.yaml --json r.json --trace t.json --metrics-listen 9464 --linger 30s\n"
      "  stallscope report r.json -o report.html\n"
      "  stallscope kernels --sizes 1024,4096   (GPU hosts)\n\n"
      "Exit codes: 0 success, 1 the run failed, 2 bad usage or input (nothing was run).",
      "stallscope"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  std::string scenario_path, json_path;
  std::vector<std::string> variants, sets;
  bool quiet = false;
  auto* run = app.add_subcommand("run", "Run a YAML scenario's variants and compare them");
  run->add_option("SCENARIO", scenario_path, "Scenario file (see scenarios/README.md)")->required();
  run->add_option("--variant", variants, "Run only this variant (repeatable; default: all)");
  run->add_option("--set", sets,
                  "Override a key: KEY=VALUE, VALUE read as YAML (repeatable), e.g. "
                  "--set loader.prefetch=8 --set 'cache.tiers=[]'");
  run->add_option("--json", json_path, "Write the result document (DESIGN.md) to this file");
  std::string trace_path;
  run->add_option("--trace", trace_path,
                  "Write a Chrome trace-event timeline (reads, preprocessing, copies, steps, "
                  "stalls) that ui.perfetto.dev opens");
  run->add_flag("--quiet", quiet, "No banner and no progress line");
  ObservabilityOptions obs;
  run->add_option("--metrics-listen", obs.metrics_listen,
                  "Serve live Prometheus metrics at http://ADDR:PORT/metrics while the run goes "
                  "(a bare PORT means 127.0.0.1:PORT; default: no server)");
  run->add_option("--linger", obs.linger,
                  "Keep serving the final metrics this long after the run (e.g. 30s), so a "
                  "last scrape catches them")
      ->capture_default_str();
  run->add_option("--push-gateway", obs.push_gateway,
                  "Push each variant's final values to this Pushgateway (http://HOST:PORT), "
                  "job stallscope, grouped by scenario and variant");

  std::string sim_path, sim_json, sim_trace;
  std::vector<std::string> sim_variants, sim_sets;
  ObservabilityOptions sim_obs;
  SimulateOptions sim;
  sim.enabled = true;
  auto* simulate = app.add_subcommand(
      "simulate",
      "Run a scenario's variants as a discrete-event simulation on a simulated clock: the same "
      "sampler, cache policies and storage model as `run`, CPU costs measured on this host, "
      "and cluster: {nodes, gpus_per_node} for what-if questions at scale. Prints the same "
      "table as `run`; --json writes \"mode\": \"simulate\"");
  simulate->add_option("SCENARIO", sim_path, "Scenario file (see scenarios/README.md)")->required();
  simulate->add_option("--variant", sim_variants, "Simulate only this variant (repeatable)");
  simulate->add_option("--set", sim_sets,
                       "Override a key: KEY=VALUE (repeatable), e.g. --set cluster.nodes=125 "
                       "--set cluster.gpus_per_node=8");
  simulate->add_option("--json", sim_json, "Write the result document to this file");
  simulate->add_option("--trace", sim_trace, "Write the simulated steps as a Chrome trace");
  simulate->add_flag("--quiet", quiet, "No banner");
  simulate->add_option("--metrics-listen", sim_obs.metrics_listen,
                       "Serve the simulated variants' final metrics at http://ADDR:PORT/metrics");
  simulate->add_option("--linger", sim_obs.linger, "Keep serving them this long (e.g. 30s)")
      ->capture_default_str();
  simulate->add_option("--push-gateway", sim_obs.push_gateway,
                       "Push each variant's final values to this Pushgateway");
  simulate->add_flag("--max-accelerators", sim.max_accelerators,
                     "Find the largest accelerator count (nodes x cluster.gpus_per_node) that "
                     "keeps AU >= --au, by search over cluster.nodes");
  simulate->add_option("--au", sim.au, "AU target for --max-accelerators")->capture_default_str();
  simulate->add_flag("--against-run", sim.against_run,
                     "Also run each variant for real (emulated device) and print both idle "
                     "fractions side by side: the simulator's validation");

  std::string sweep_path, sweep_csv, sweep_json;
  std::vector<std::string> sweep_variants, sweep_sets, sweep_grids;
  bool sweep_simulate = false;
  auto* sweep = app.add_subcommand(
      "sweep",
      "Run (or --simulate) a scenario at every point of a grid of key values; writes a CSV "
      "that `stallscope report` draws");
  sweep->add_option("SCENARIO", sweep_path, "Scenario file")->required();
  sweep
      ->add_option("--grid", sweep_grids,
                   "KEY=V1,V2,... (repeatable; the product of all grids is swept), e.g. "
                   "--grid loader.prefetch=0,2,8 --grid cache.tiers.0.capacity=1GiB,4GiB")
      ->required();
  sweep->add_flag("--simulate", sweep_simulate, "Simulate every point instead of running it");
  sweep->add_option("--csv", sweep_csv, "CSV file to write (default: SCENARIO-NAME-sweep.csv)");
  sweep->add_option("--json", sweep_json, "Also write every point's full result document");
  sweep->add_option("--variant", sweep_variants, "Sweep only this variant (repeatable)");
  sweep->add_option("--set", sweep_sets, "Override a key for every point (repeatable)");
  sweep->add_flag("--quiet", quiet, "No progress lines");

  std::string validate_path;
  auto* validate = app.add_subcommand("validate", "Check a scenario file without running it");
  validate->add_option("SCENARIO", validate_path, "Scenario file")->required();

  std::string gen_dir, gen_size, gen_format = "raw";
  uint64_t gen_samples = 0, gen_seed = 42;
  uint32_t gen_classes = 10;
  auto* gen = app.add_subcommand(
      "gen",
      "Write a dataset directory: class_NNN/sample_NNNNNNN.bin (verifiable) or .jpg, + manifest");
  gen->add_option("DIR", gen_dir, "Directory to create")->required();
  gen->add_option("--samples", gen_samples, "Number of files")->required();
  gen->add_option("--size", gen_size,
                  "raw: file size, SIZE or SIZE:STDEV (default 112KiB; e.g. 112KiB:20KiB); "
                  "jpeg: image size WxH in pixels (default 256x256)");
  gen->add_option("--format", gen_format,
                  "raw (verifiable bytes) or jpeg (class-coloured images, class_NNN/*.jpg)")
      ->capture_default_str();
  gen->add_option("--classes", gen_classes, "Class folders")->capture_default_str();
  gen->add_option("--seed", gen_seed, "Content seed")->capture_default_str();
  gen->add_flag("--quiet", quiet, "Print nothing on success");

  BenchDirOptions bench;
  std::string bench_json;
  auto* bench_dir = app.add_subcommand(
      "bench-dir", "Read every file of a dataset directory once and say how fast it went");
  bench_dir->add_option("DIR", bench.path, "Dataset directory (every regular file below it)")
      ->required();
  bench_dir->add_flag("--cold", bench.cold, "Evict the files from the page cache first");
  bench_dir->add_flag("--direct", bench.direct, "Read with O_DIRECT");
  bench_dir->add_option("--io-depth", bench.io_depth, "Files in flight")->capture_default_str();
  bench_dir->add_option("--io-threads", bench.io_threads, "I/O threads, one io_uring each")
      ->capture_default_str();
  bench_dir->add_option("--json", bench_json, "Write the result document to this file");
  bench_dir->add_flag("--quiet", bench.quiet, "No notices");
  BenchTraining training;
  bench_dir->add_option("--batch", training.batch,
                        "Also run the training loop with this batch size (emulated accelerator)");
  bench_dir->add_option("--step-time", training.step_time, "Step time of the training loop");
  bench_dir->add_option("--workers", training.workers, "Preprocessing workers")
      ->capture_default_str();
  bench_dir
      ->add_option("--preprocess", training.preprocess,
                   "Training loop's preprocessing: auto (jpeg-decode for JPEG files, else "
                   "none), none, normalize or jpeg-decode (224x224, ImageNet-normalized)")
      ->capture_default_str();
  bench_dir->add_option("--workload", training.workload,
                        "MLPerf Storage H100 workload: resnet50 (batch 400, 0.224 s), unet3d "
                        "(batch 7, 0.323 s) or cosmoflow (batch 1, 0.0035 s)");

  std::string kernel_sizes = "1024,4096,8192", kernels_json;
  auto* kernels = app.add_subcommand(
      "kernels",
      "Run the GEMM kernel ladder (naive -> ... -> tensor cores) against cuBLAS on this GPU: "
      "each version validated against a float64 reference, then timed with CUDA events");
  kernels->add_option("--sizes", kernel_sizes, "Matrix sizes n (n x n x n), multiples of 256")
      ->capture_default_str();
  kernels->add_option("--json", kernels_json, "Write every row to this JSON file");
  kernels->add_flag("--quiet", quiet, "No progress lines");

  std::vector<std::string> report_inputs;
  std::string report_output = "report.html";
  auto* report = app.add_subcommand(
      "report", "Render result documents (run --json) as one self-contained HTML page");
  report
      ->add_option("RESULT", report_inputs,
                   "Result JSON files (run/simulate --json), compared side by side, and sweep "
                   "CSVs (sweep --csv), drawn as GPU idle against the first grid key")
      ->required();
  report->add_option("-o,--output", report_output, "HTML file to write")->capture_default_str();
  report->add_flag("--quiet", quiet, "Print nothing on success");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "stallscope: %s\nRun 'stallscope --help' for usage.\n", e.what());
    return kExitBadInput;
  }

  try {
    if (*run) return Run(scenario_path, variants, sets, json_path, trace_path, obs, quiet);
    if (*simulate) {
      return Run(sim_path, sim_variants, sim_sets, sim_json, sim_trace, sim_obs, quiet, sim);
    }
    if (*sweep) {
      return Sweep(sweep_path, sweep_variants, sweep_sets, sweep_grids, sweep_simulate, sweep_csv,
                   sweep_json, quiet);
    }
    if (*validate) return Validate(validate_path);
    if (*report) return Report(report_inputs, report_output, quiet);
    if (*bench_dir) return BenchDir(bench, training, bench_json);
    if (*kernels) return Kernels(kernel_sizes, kernels_json, quiet);
    if (*gen) return Gen(gen_dir, gen_samples, gen_size, gen_format, gen_classes, gen_seed, quiet);
  } catch (const RunError& e) {
    std::fprintf(stderr, "stallscope: run failed: %s\n", e.what());
    return kExitRunFailed;
  } catch (const ScenarioError& e) {
    std::fprintf(stderr, "stallscope: %s\n", e.what());
    return kExitBadInput;
  } catch (const SetupError& e) {
    std::fprintf(stderr, "stallscope: %s\n", e.what());
    return kExitBadInput;
  } catch (const StorageError& e) {
    std::fprintf(stderr, "stallscope: dataset: %s\n", e.what());
    return kExitBadInput;
  } catch (const CacheError& e) {
    std::fprintf(stderr, "stallscope: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stallscope: run failed: %s\n", e.what());
    return kExitRunFailed;
  }
  return kExitBadInput;
}

}  // namespace
}  // namespace stallscope

int main(int argc, char** argv) { return stallscope::Main(argc, argv); }
