// `advise`: the current state, the ranked changes that reach the target (predicted by the
// simulator), the --set lines to paste; --json, --write, --verify.
#include "app/advise_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "app/bench_dir.h"
#include "app/commands.h"
#include "app/resolve.h"
#include "app/runner.h"
#include "base/cores.h"
#include "base/errors.h"
#include "base/median.h"
#include "base/units.h"
#include "gpu/emulated_device.h"
#include "sim/advise.h"
#include "sim/host_model.h"
#include "sim/max_accelerators.h"

namespace stallscope {
namespace {

std::string Pct(double x) { return fmt::format("{:.1f}%", x * 100); }

std::string SetLines(const AdvisePoint& p) {
  std::string s;
  for (const AdviseChange& c : p.changes) {
    for (const auto& [key, value] : c.sets) {
      s += fmt::format("{}--set '{}={}'", s.empty() ? "" : " ", key, value);
    }
  }
  return s;
}

std::string Cost(const AdvisePoint& p) {
  std::string s =
      p.priced ? fmt::format("${:.2f}/day", p.cost_per_day) : fmt::format("size {:.0f}", p.size);
  if (p.saves_per_day != 0) s += fmt::format(", saves ${:.2f}/day of idle", p.saves_per_day);
  return s;
}

nlohmann::json PointJson(const AdvisePoint& p) {
  nlohmann::json changes = nlohmann::json::array();
  for (const AdviseChange& c : p.changes) {
    nlohmann::json sets = nlohmann::json::object();
    for (const auto& [key, value] : c.sets) sets[key] = value;
    changes.push_back(
        {{"key", c.key}, {"value", c.value}, {"sets", sets}, {"text", c.text}, {"rung", c.rung}});
  }
  return {{"changes", changes},
          {"gpu_idle_fraction", p.idle},
          {"au", p.au},
          {"bottleneck", p.bottleneck},
          {"verdict", p.verdict},
          {"reaches", p.reaches},
          {"size", p.size},
          {"cost_per_day", p.priced ? nlohmann::json(p.cost_per_day) : nlohmann::json(nullptr)},
          {"saves_per_day", p.saves_per_day},
          {"disk_entries_at_start", p.disk_entries_at_start}};
}

// Real runs (emulated device) of one point under --verify: each run's idle, and the GPU's
// busy and measured seconds, which pool the runs into one idle over all their time.
struct VerifyRuns {
  std::vector<double> idle, busy, window;
  double Seconds() const { return std::accumulate(window.begin(), window.end(), 0.0); }
  double Pooled() const {
    const double w = Seconds();
    // Busy and window come from two clocks' sums: where the GPU never idled, 1 - busy / window
    // can round below 0 by a few nanoseconds.
    return w > 0 ? std::max(0.0, 1 - std::accumulate(busy.begin(), busy.end(), 0.0) / w) : 0;
  }
};

// A real run (emulated device) of the scenario with the point's changes.
void Measure(const ScenarioFile& file, const AdviseOptions& o, const AdvisePoint& p,
             VerifyRuns& into) {
  std::vector<Override> sets = o.sets;
  for (Override& x : PointSets(p)) sets.push_back(std::move(x));
  sets.push_back(ParseSetArgument("gpu.device=emulated"));
  const Scenario s = file.Resolve(o.variant, sets);
  auto storage = MakeStorage(s, true);
  EmulatedDevice device(s.gpu.step_time);
  const VariantResult v = RunVariant(s, *storage, device, RunHooks{.quiet = true});
  into.idle.push_back(v.gpu_idle_fraction);
  into.busy.push_back(v.busy_seconds);
  into.window.push_back(v.window_seconds);
}

// A directory scenario without storage.profile: the simulator would read it as storage without
// limits, and every answer would be "nothing to fix". The directory is measured here now, as
// `calibrate --dir` measures it, read as the scenario reads it, and the profile written to the
// temporary folder, named under every point (and in --write's scenario), and printed.
std::string MeasureDirectory(const Scenario& s, const std::string& variant) {
  const DirectoryStorageOptions d{
      .dataset = s.dataset, .storage = s.storage, .io = s.loader.io, .quiet = true};
  std::printf(
      "%s has no storage.profile: measuring it as `stallscope calibrate --dir` does "
      "(%s%s, io_depth %u, a few seconds)\n",
      s.dataset.path.c_str(), s.storage.cold ? "cold" : "page-cached",
      s.storage.direct_io ? ", O_DIRECT" : "", s.loader.io.io_depth);
  std::fflush(stdout);
  const DirectoryFit fit = FitDirectoryStorage(d);
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("stallscope-{}-{}-storage.yaml", s.name, variant))
                               .string();
  std::ofstream out(path);
  out << DirectoryProfileYaml(d, fit);
  if (!out) throw RunFailed(path + ": cannot write the storage profile");
  std::printf(
      "  bandwidth %s, latency p50 %s p99 %s, iops %.0f; wrote %s (--set "
      "storage.profile=%s reuses it)\n",
      FormatRate(fit.model.bandwidth_bytes_per_second).c_str(),
      FormatDuration(fit.model.latency_p50_seconds).c_str(),
      FormatDuration(fit.model.latency_p99_seconds).c_str(), fit.model.iops, path.c_str(),
      path.c_str());
  return path;
}

// --verify on a scenario that names no node profile: the real runs are on this host, so the
// predictions must be too. The host is measured here, as `stallscope calibrate` measures it
// (its default samples), written to the temporary folder and named under every point.
std::string MeasureThisHost(const Scenario& s, const std::string& variant) {
  std::printf(
      "--verify runs on this host and the scenario names no node profile (cluster.node.profile):"
      " measuring this host as `stallscope calibrate` does (%u cores, a few seconds)\n",
      UsableCores());
  std::fflush(stdout);
  const CalibrateCommandOptions defaults;
  HostMeasurement m;
  const std::string text =
      MeasureHostProfile(static_cast<uint64_t>(*ParseSize(defaults.sample_size)),
                         defaults.image_size, defaults.trials, m);
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("stallscope-{}-{}-node.yaml", s.name, variant))
                               .string();
  std::ofstream out(path);
  out << text;
  if (!out) throw RunFailed(path + ": cannot write the node profile");
  std::printf(
      "  wrote %s (--set cluster.node.profile=%s reuses it); the advice below is for "
      "this host\n",
      path.c_str(), path.c_str());
  return path;
}

// Under a directory with a storage profile, --verify measures the directory again between its
// runs, as `calibrate --dir` measures a profile's read costs: before each round of runs a pass
// of the profile's probe (400 files one at a time, tens of ms: latency, and bandwidth where the
// profile read one file in flight) and a round of the probe beside busy threads (about 0.8 s:
// what a read waits and costs on a busy host), and a last pass after the runs. A disk's pace
// moves between a profile and the runs (this VM, 2026-12-07: six profiles of one directory back
// to back predicted 20.5-33.3% idle for real_directory's direct-qd1, and probes just before and
// after the same runs 26 pp apart); the model fed the runs' own stretch tells a miss from the
// directory's drift apart from the model's.
class RunsStretch {
 public:
  explicit RunsStretch(const Scenario& base)
      : d_{.dataset = base.dataset, .storage = base.storage, .io = base.loader.io, .quiet = true},
        pace_(d_),
        load_(OneAtATime(d_), RankShard{0, static_cast<uint32_t>(pace_.ranks())}) {}
  void BeforeRound() {
    pace_.Pass();
    load_.Round();
  }
  void AfterRuns() { pace_.Pass(); }

  // `st` (the scenario's storage, its model from the profile) with what was measured between
  // the runs in place of the profile's: latency (p50, p99 at most kMaxTailRatio × p50), the CPU
  // time per read, and the busy host's wait and cost per read; the bandwidth too where the
  // profile's pass over every file kept one file in flight (io_depth 1, a qd1 variant's: the
  // same reads as the probe's, whatever the I/O threads). Evict and IOPS stay the profile's.
  void Apply(StorageOptions& st) const {
    const BenchDirResult p = pace_.Pooled();
    SimulatedStorageOptions& m = st.model;
    m.latency_p50_seconds = std::max(1e-6, p.latency_p50);
    m.latency_p99_seconds =
        std::clamp(p.latency_p99, m.latency_p50_seconds, kMaxTailRatio * m.latency_p50_seconds);
    if (st.profile_io_depth == 1 && p.bytes_per_second > 0) {
      m.bandwidth_bytes_per_second = p.bytes_per_second;
    }
    m.cpu_per_read_seconds = p.cpu_seconds_per_file;
    double cpu_per_read_busy = 0;
    load_.Apply(cpu_per_read_busy, m);
  }
  // The point's idle predicted with the storage model so measured.
  double Predict(const ScenarioFile& file, const AdviseOptions& o, const AdvisePoint& p) const {
    std::vector<Override> sets = o.sets;
    for (Override& x : PointSets(p)) sets.push_back(std::move(x));
    Scenario s = file.Resolve(o.variant, sets);
    Apply(s.storage);
    Simulator sim;
    return sim.RunVariant(s).gpu_idle_fraction;
  }
  const DirectoryPace& pace() const { return pace_; }
  int load_rounds() const { return load_.rounds(); }

 private:
  DirectoryStorageOptions d_;
  DirectoryPace pace_;
  ReadsUnderLoad load_;
};

// --verify under a directory: what RunsStretch measured between the runs beside the profile's,
// and both points predicted again with it (into `out`, the verify JSON).
void ReportStretch(const RunsStretch& stretch, const ScenarioFile& file, const AdviseOptions& o,
                   const Scenario& base, const AdviseResult& r, const AdvisePoint* top, size_t rank,
                   nlohmann::json& out) {
  const BenchDirResult p = stretch.pace().Pooled();
  const SimulatedStorageOptions& was = base.storage.model;
  StorageOptions at = base.storage;
  stretch.Apply(at);
  const SimulatedStorageOptions& m = at.model;
  const bool bandwidth = m.bandwidth_bytes_per_second != was.bandwidth_bytes_per_second;
  const auto rate = [&](double x) { return bandwidth ? ", " + FormatRate(x) : std::string(); };
  const auto us = [](double x) { return FormatDuration(x); };
  std::printf(
      "\n  the directory between the runs (%zu passes, %zu reads one at a time; %d rounds beside "
      "busy threads): p50 %s, p99 %s%s, a read %s longer and %s of the cores' time on a busy "
      "host; the profile's: p50 %s, p99 %s%s, %s and %s",
      stretch.pace().passes().size(), p.latencies.size(), stretch.load_rounds(),
      us(m.latency_p50_seconds).c_str(), us(m.latency_p99_seconds).c_str(),
      rate(m.bandwidth_bytes_per_second).c_str(), us(m.read_wait_busy_seconds).c_str(),
      us(m.host_per_read_seconds + m.cpu_per_read_seconds).c_str(),
      us(was.latency_p50_seconds).c_str(), us(was.latency_p99_seconds).c_str(),
      rate(was.bandwidth_bytes_per_second).c_str(), us(was.read_wait_busy_seconds).c_str(),
      us(was.host_per_read_seconds + was.cpu_per_read_seconds).c_str());
  const auto again = [&](const std::string& what, const AdvisePoint& point, nlohmann::json& side) {
    const double at_runs = stretch.Predict(file, o, point);
    const double pp = (at_runs - side["measured"].get<double>()) * 100;
    side["predicted_at_runs_pace"] = at_runs;
    return fmt::format(" {} {} ({:+.1f} pp)", what, Pct(at_runs), std::abs(pp) < 0.05 ? 0 : pp);
  };
  std::string at_runs = again("current", r.current, out["current"]);
  if (top) at_runs += "," + again(fmt::format("change {}", rank), *top, out["top"]);
  std::printf("\n  predicted with the directory as measured between the runs:%s", at_runs.c_str());
  const auto model = [](const SimulatedStorageOptions& x) {
    return nlohmann::json{{"latency_p50", x.latency_p50_seconds},
                          {"latency_p99", x.latency_p99_seconds},
                          {"bandwidth", x.bandwidth_bytes_per_second},
                          {"cpu_per_read", x.cpu_per_read_seconds},
                          {"host_per_read", x.host_per_read_seconds},
                          {"read_wait_busy", x.read_wait_busy_seconds},
                          {"read_wait_partial", x.read_wait_partial_seconds}};
  };
  out["directory_pace"] = {{"passes", stretch.pace().passes().size()},
                           {"reads", p.latencies.size()},
                           {"load_rounds", stretch.load_rounds()},
                           {"bandwidth_from_pace", bandwidth},
                           {"between_runs", model(m)},
                           {"profile", model(was)}};
}

// --verify: the current point and the best-ranked change a run on this host can make (more
// cores than it has, a faster disk under a directory, a faster NIC it cannot), run alternated
// at least `min_runs` times each and until each point's runs measured `min_seconds` (at most
// kMaxVerifyRuns each), their idle pooled over all that time and compared with the prediction:
// one short run of a disk-bound variant scatters by several points on a busy host.
constexpr uint32_t kMaxVerifyRuns = 20;

nlohmann::json Verify(const ScenarioFile& file, const AdviseOptions& o, const Scenario& base,
                      const AdviseResult& r, uint32_t min_runs, double min_seconds, bool quiet) {
  std::fflush(stdout);  // the advice above before the runs' progress on stderr
  const AdvisePoint* top = nullptr;
  size_t rank = 0;
  nlohmann::json passed = nlohmann::json::array();
  for (size_t k = 0; k < r.ranked.size() && !top; ++k) {
    const AdvisePoint& p = r.points[r.ranked[k]];
    const std::string why = WhyNotRunnableHere(base, p, UsableCores());
    if (why.empty()) {
      top = &p;
      rank = k + 1;
    } else {
      passed.push_back({{"rank", k + 1}, {"sets", PointSetText(p)}, {"why", why}});
    }
  }
  VerifyRuns now, best;
  const auto enough = [&](const VerifyRuns& v) {
    return v.idle.size() >= kMaxVerifyRuns ||
           (v.idle.size() >= min_runs && v.Seconds() >= min_seconds);
  };
  std::optional<RunsStretch> stretch;  // RunsStretch: the directory measured between the runs
  if (base.storage.kind == StorageKind::kDirectory && !base.storage.model_source.empty()) {
    stretch.emplace(base);
  }
  while (!enough(now) || (top && !enough(best))) {  // min_runs >= 1: never an empty side
    if (stretch) stretch->BeforeRound();
    if (!quiet) {
      std::fprintf(stderr, "verify: real run %zu (current), %.1f s of %.1f s measured\n",
                   now.idle.size() + 1, now.Seconds(), min_seconds);
    }
    Measure(file, o, r.current, now);
    if (!top) continue;
    if (!quiet) {
      std::fprintf(stderr, "verify: real run %zu (change %zu), %.1f s of %.1f s measured\n",
                   best.idle.size() + 1, rank, best.Seconds(), min_seconds);
    }
    Measure(file, o, *top, best);
  }
  if (stretch) stretch->AfterRuns();
  const auto line = [](const char* what, double predicted, const VerifyRuns& v) {
    const auto [lo, hi] = std::minmax_element(v.idle.begin(), v.idle.end());
    const double pooled = v.Pooled();
    std::printf("\n  %s: predicted %s, measured %s", what, Pct(predicted).c_str(),
                Pct(pooled).c_str());
    if (v.idle.size() > 1) {
      std::printf(" (%zu runs pooled, %.1f s; runs %s–%s, median %s)", v.idle.size(), v.Seconds(),
                  Pct(*lo).c_str(), Pct(*hi).c_str(), Pct(Median(v.idle)).c_str());
    }
    const double pp = (predicted - pooled) * 100;
    std::printf(", %+.1f pp", std::abs(pp) < 0.05 ? 0.0 : pp);  // not "-0.0"
    return nlohmann::json{{"predicted", predicted},   {"measured", pooled},
                          {"median", Median(v.idle)}, {"runs", v.idle},
                          {"busy_seconds", v.busy},   {"window_seconds", v.window}};
  };
  std::printf("\nverify (real runs on this host, emulated device, %zu of each%s):", now.idle.size(),
              top && now.idle.size() > 1 ? ", alternated" : "");
  for (const nlohmann::json& p : passed) {
    std::printf("\n  change %zu (%s): not run, %s", p["rank"].get<size_t>(),
                p["sets"].get<std::string>().c_str(), p["why"].get<std::string>().c_str());
  }
  nlohmann::json out = {{"runs_each", now.idle.size()},
                        {"min_seconds", min_seconds},
                        {"node", base.cluster.node.source},
                        {"current", line("current", r.current.idle, now)},
                        {"not_run", passed}};
  if (top) {
    const std::string what = fmt::format("change {} ({})", rank, PointSetText(*top));
    out["top"] = line(what.c_str(), top->idle, best);
    out["top"]["rank"] = rank;
    out["top"]["sets"] = PointSetText(*top);
  } else if (!r.ranked.empty()) {
    std::printf("\n  no change that reaches the target can run on this host");
  }
  if (stretch) ReportStretch(*stretch, file, o, base, r, top, rank, out);
  std::printf("\n");
  return out;
}

// --cluster-size: how many accelerators the storage keeps at the target AU (nodes doubled,
// then bisected, as `simulate --max-accelerators`), as configured and with the top change.
nlohmann::json ClusterSize(const ScenarioFile& file, const AdviseOptions& o, const Scenario& base,
                           const AdvisePoint* top) {
  const double au = 1 - o.target_idle;
  const auto find = [&](const Scenario& s, const char* label) {
    Simulator sim;
    const MaxAccelerators m = FindMaxAccelerators(sim, s, au);
    std::printf("  %s: %s\n", label,
                m.nodes == 0
                    ? "not even one node reaches it"
                    : fmt::format("{} accelerators ({} nodes × {}), AU {}{}", m.accelerators,
                                  m.nodes, s.cluster.gpus_per_node, Pct(m.au),
                                  m.limited_by_dataset ? " (the dataset runs out of batches "
                                                         "for more ranks)"
                                                       : "")
                          .c_str());
    return nlohmann::json{{"nodes", m.nodes},
                          {"accelerators", m.accelerators},
                          {"au", m.au},
                          {"limited_by_dataset", m.limited_by_dataset}};
  };
  std::printf("\nhow many accelerators keep AU >= %s (the scenario has %llu):\n", Pct(au).c_str(),
              static_cast<unsigned long long>(base.cluster.nodes) * base.cluster.gpus_per_node);
  nlohmann::json out = {{"au", au}, {"now", find(base, "as configured")}};
  if (top) {
    std::vector<Override> sets = o.sets;
    for (Override& x : PointSets(*top)) sets.push_back(std::move(x));
    out["top"] = find(file.Resolve(o.variant, sets), "with the top change");
  }
  return out;
}

}  // namespace

int AdviseCommand(const AdviseCommandOptions& c) {
  if (c.au.has_value() == c.idle.has_value()) {
    throw BadInput("advise: give the target as --au A or --idle I (one of them)");
  }
  const double target = c.idle ? *c.idle : 1 - *c.au;
  const double given = c.idle ? *c.idle : *c.au;
  if (!(given > 0 && given < 1)) {
    throw BadInput(
        fmt::format("advise: {} {} is outside (0, 1)", c.idle ? "--idle" : "--au", given));
  }
  if (c.verify_runs < 1 || c.verify_runs > kMaxVerifyRuns) {
    throw BadInput(
        fmt::format("advise: --verify-runs {} is outside 1 to {}", c.verify_runs, kMaxVerifyRuns));
  }
  const std::optional<double> verify_seconds = ParseDuration(c.verify_seconds);
  if (!verify_seconds || *verify_seconds < 0 || *verify_seconds > 3600) {
    throw BadInput("advise: --verify-seconds " + c.verify_seconds +
                   ": expected a duration from 0s to 1h, such as 5s");
  }
  const ScenarioFile file = ScenarioFile::Load(c.scenario);
  AdviseOptions o;
  o.variant = c.variant.empty() ? file.variant_names().front() : c.variant;
  o.sets = ParseSets(c.sets);
  o.target_idle = target;
  o.knobs = c.knobs;
  o.max_simulations = c.max_simulations;
  Scenario base = file.Resolve(o.variant, o.sets);  // a bad variant or key: exit 2 here
  CheckSimulatable(base);
  if (c.verify && base.cluster.nodes * base.cluster.gpus_per_node != 1) {
    throw BadInput("advise --verify: runs one rank on this host; the scenario's cluster has " +
                   std::to_string(base.cluster.nodes * base.cluster.gpus_per_node));
  }
  if (base.storage.kind == StorageKind::kDirectory && base.storage.model_source.empty()) {
    o.sets.push_back(ParseSetArgument("storage.profile=" + MeasureDirectory(base, o.variant)));
    base = file.Resolve(o.variant, o.sets);
  }
  if (c.verify && base.cluster.node.source == "scenario") {
    o.sets.push_back(ParseSetArgument("cluster.node.profile=" + MeasureThisHost(base, o.variant)));
    base = file.Resolve(o.variant, o.sets);
  } else if (c.verify && base.cluster.node.cores != UsableCores()) {
    std::printf(
        "note: the node profile (%s) has %u cores, this host %u, which --verify runs on: "
        "the predictions are for that node\n",
        base.cluster.node.source.c_str(), base.cluster.node.cores, UsableCores());
  }
  Simulator sim;
  const AdviseResult r = Advise(file, o, sim);
  const AdvisePoint& now = r.current;
  std::printf("%s (%s): GPU idle %s, AU %s — %s\n", base.name.c_str(), o.variant.c_str(),
              Pct(now.idle).c_str(), Pct(now.au).c_str(), now.verdict.c_str());
  if (now.disk_entries_at_start > 0) {
    std::printf("every point starts from the %llu entries the kept disk tier holds on this host\n",
                static_cast<unsigned long long>(now.disk_entries_at_start));
  }
  std::printf(
      "target: idle <= %s (AU >= %s); %llu simulations of a space of %llu points "
      "(knobs: %s)\n",
      Pct(target).c_str(), Pct(1 - target).c_str(), static_cast<unsigned long long>(r.simulations),
      static_cast<unsigned long long>(r.space),
      fmt::format("{}", fmt::join(r.knobs, ", ")).c_str());
  if (now.reaches) {
    std::printf("the scenario already reaches the target: nothing to change\n");
  } else if (r.ranked.empty()) {
    const AdvisePoint& best = r.points[r.closest];
    std::printf(
        "nothing in the space reaches the target; closest: idle %s with %s\n  %s\n  why: %s\n",
        Pct(best.idle).c_str(), best.changes.empty() ? "no change" : SetLines(best).c_str(),
        Cost(best).c_str(), best.verdict.c_str());
  } else {
    std::printf("\n");
    for (size_t k = 0; k < std::min<size_t>(c.top, r.ranked.size()); ++k) {
      const AdvisePoint& p = r.points[r.ranked[k]];
      std::string what;
      for (const AdviseChange& ch : p.changes) what += (what.empty() ? "" : " + ") + ch.text;
      std::printf("%zu. %s\n   idle %s, AU %s (predicted), %s; removes %s-bound (now %s)\n   %s\n",
                  k + 1, what.c_str(), Pct(p.idle).c_str(), Pct(p.au).c_str(), Cost(p).c_str(),
                  now.bottleneck.c_str(), p.bottleneck.c_str(), SetLines(p).c_str());
    }
  }
  const AdvisePoint* top = r.ranked.empty() ? nullptr : &r.points[r.ranked.front()];
  const nlohmann::json cluster_size =
      c.cluster_size ? ClusterSize(file, o, base, top) : nlohmann::json();
  const nlohmann::json verify =
      c.verify ? Verify(file, o, base, r, c.verify_runs, *verify_seconds, c.quiet)
               : nlohmann::json();
  if (!c.write.empty() && top) {
    std::vector<Override> sets = o.sets;
    for (Override& x : PointSets(*top)) sets.push_back(std::move(x));
    std::ofstream out(c.write);
    out << "# " << base.name << " (" << o.variant
        << ") with stallscope advise's top change: " << SetLines(*top) << "\n"
        << file.Emit(o.variant, sets);
    if (!out) throw BadInput(c.write + ": cannot write the --write file");
    if (!c.quiet) std::fprintf(stderr, "wrote %s\n", c.write.c_str());
  }
  if (!c.json.empty()) {
    nlohmann::json doc = {
        {"scenario", base.name}, {"variant", o.variant},         {"mode", "advise"},
        {"target_idle", target}, {"simulations", r.simulations}, {"space", r.space},
        {"knobs", r.knobs},      {"current", PointJson(now)}};
    nlohmann::json all = nlohmann::json::array(), ranked = nlohmann::json::array();
    for (const AdvisePoint& p : r.points) all.push_back(PointJson(p));
    for (size_t i : r.ranked) ranked.push_back(i);
    doc["candidates"] = all;
    doc["ranked"] = ranked;  // indexes into candidates
    if (!verify.is_null()) doc["verify"] = verify;
    if (!cluster_size.is_null()) doc["cluster_size"] = cluster_size;
    std::ofstream out(c.json);
    out << doc.dump(2) << "\n";
    if (!out) throw BadInput(c.json + ": cannot write the --json file");
  }
  return 0;
}

void PrintAdviseHints(const std::string& path, const std::vector<std::string>& set_args,
                      const std::vector<std::string>& variants, const std::vector<double>& idle) {
  std::fflush(stdout);
  const ScenarioFile file = ScenarioFile::Load(path);
  const std::vector<Override> sets = ParseSets(set_args);
  Simulator sim;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (idle[i] <= 0.05) continue;
    AdviseOptions o;
    o.variant = variants[i];
    o.sets = sets;
    o.target_idle = 0.05;
    o.max_simulations = 20;
    SimulationStats stats;
    try {
      sim.RunVariant(file.Resolve(o.variant, sets), &stats);
    } catch (const std::exception&) {
      continue;  // not simulatable (a directory that moved, say): no hint
    }
    if (stats.wall_seconds > 0.5) {
      std::printf(
          "%s: advise: `stallscope advise %s --variant %s --idle 0.05` searches the fixes\n",
          o.variant.c_str(), path.c_str(), o.variant.c_str());
      continue;
    }
    const AdviseResult r = Advise(file, o, sim);
    const bool reaches = !r.ranked.empty();
    const AdvisePoint& p = r.points[reaches ? r.ranked.front() : r.closest];
    if (p.changes.empty()) continue;
    const std::string what = PointSetText(p);
    std::printf("%s: advise: %s → idle %s, predicted%s\n", o.variant.c_str(), what.c_str(),
                Pct(p.idle).c_str(), reaches ? "" : " (the closest in 20 simulations)");
  }
}

}  // namespace stallscope
