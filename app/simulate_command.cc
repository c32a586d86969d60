// `stallscope simulate`: every variant of a scenario on a simulated clock (sim/simulator.h),
// with the same outputs as `run`; `--max-accelerators` (the largest cluster that keeps AU at a
// target) and `--against-run` (each variant also run for real and compared: the simulator's
// validation).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/advise_command.h"
#include "app/commands.h"
#include "app/make_device.h"
#include "app/outputs.h"
#include "app/resolve.h"
#include "app/runner.h"
#include "base/units.h"
#include "report/report.h"
#include "sim/host_model.h"
#include "sim/max_accelerators.h"
#include "sim/simulator.h"

namespace stallscope {
namespace {

// The simulator's steps told to a metrics observer, as a real run tells them while it goes.
void ReplaySteps(const RunRecord& record, uint32_t warmup, StepObserver& observer) {
  double previous_end = 0;
  for (size_t k = 0; k < record.batches.size(); ++k) {
    const BatchRecord& b = record.batches[k];
    observer.OnStep(b, k == 0 ? 0.0 : previous_end, k >= warmup, b.queues);
    previous_end = b.step_end;
  }
}

void WriteJson(const std::string& path, const nlohmann::json& doc) {
  if (path.empty()) return;
  std::ofstream f(path);
  if (!f) throw BadInput(path + ": cannot write the --json file");
  f << doc.dump(2) << "\n";
}

// The node every simulated node is charged as, on the banner: its rates and where they came
// from.
void PrintNode(const NodeOptions& n) {
  std::fprintf(stderr,
               "node model (%s): %u cores; per core normalize %s, verify %s, jpeg decode %s (%s "
               "normalized on the device), receive %s; memcpy %s (into fresh pages %s, one large "
               "copy %s); NIC %s, H2D %s "
               "per GPU; preprocess.cost at %.3fx (%.3fx with every core busy)\n",
               n.source.c_str(), n.cores, FormatRate(n.normalize).c_str(),
               FormatRate(n.verify).c_str(), FormatRate(n.jpeg_decode).c_str(),
               FormatRate(n.jpeg_decode_device).c_str(), FormatRate(n.receive).c_str(),
               FormatRate(n.memcpy).c_str(), FormatRate(n.fill).c_str(),
               FormatRate(n.snapshot).c_str(), FormatRate(n.nic).c_str(), FormatRate(n.h2d).c_str(),
               n.cost_factor, n.cost_factor_busy);
}

// `simulate --max-accelerators`: per variant, the largest cluster that keeps AU >= target.
int SearchMaxAccelerators(const std::vector<Scenario>& scenarios, double target,
                          const std::string& json_path, bool quiet) {
  if (!(target > 0 && target <= 1)) {
    throw BadInput(fmt::format("--au {}: expected a fraction in (0, 1], e.g. 0.9", target));
  }
  Simulator simulator;
  if (!quiet) PrintNode(scenarios[0].cluster.node);
  nlohmann::json doc = {{"scenario", scenarios[0].name},
                        {"mode", "simulate"},
                        {"node", NodeToJson(scenarios[0].cluster.node)},
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
  WriteJson(json_path, doc);
  return 0;
}

// `simulate --against-run`: each variant run for real (emulated device) and simulated, side by
// side. The simulator's claim is that the idle fractions agree within 3 percentage points.
int AgainstRun(std::vector<Scenario> scenarios, const std::string& json_path, bool quiet) {
  constexpr double kTolerance = 0.03;
  for (const Scenario& s : scenarios) {
    if (s.cluster.nodes * s.cluster.gpus_per_node > 1 && !quiet) {
      std::fprintf(
          stderr, "%s: a real run measures one GPU on this host: compared at 1 x 1 (not %u x %u)\n",
          s.variant.c_str(), s.cluster.nodes, s.cluster.gpus_per_node);
    }
    CheckRunnable(OnThisHost(s, s.cluster.node));
  }
  Simulator simulator;
  nlohmann::json rows = nlohmann::json::array();
  std::string table = fmt::format("{:<24} {:>10} {:>10} {:>8}  {:<10} {:<10}\n", "variant",
                                  "real idle", "sim idle", "diff", "real", "simulated");
  int within = 0;
  for (const Scenario& s : scenarios) {
    if (!quiet) std::fprintf(stderr, "▶ %s: real run, then simulation\n", s.variant.c_str());
    // The node is this host, measured on both sides of the real run (this minute's speed: a
    // shared machine's drifts by several per cent within minutes).
    const auto measure = [&s] {
      return MeasureHost(s.dataset.sample_size, s.loader.preprocess.image_size, 3).node;
    };
    const NodeOptions before = measure();
    const Scenario here = OnThisHost(s, before);
    std::unique_ptr<Storage> storage = MakeStorage(here, quiet);
    std::unique_ptr<Device> device = MakeDevice(here);
    const VariantResult real = RunVariant(here, *storage, *device, RunHooks{.quiet = true});
    const VariantResult sim = simulator.RunVariant(OnThisHost(s, MeanNode(before, measure())));
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
  WriteJson(json_path, {{"scenario", scenarios[0].name},
                        {"mode", "simulate-against-run"},
                        {"tolerance", kTolerance},
                        {"variants", rows}});
  return 0;
}

int Simulate(const std::vector<Scenario>& scenarios, const RunCommandOptions& o,
             const std::vector<std::string>& sets) {
  const bool quiet = o.out.quiet;
  Simulator simulator;
  if (!quiet) PrintNode(scenarios[0].cluster.node);
  Outputs outputs(o.out);
  if (!quiet) {
    std::fprintf(stderr, "stallscope simulate: %s (%s), %zu variant(s)\n",
                 scenarios[0].name.c_str(), o.scenario.c_str(), scenarios.size());
  }
  std::vector<VariantResult> results;
  nlohmann::json storage_models = nlohmann::json::object();
  for (const Scenario& s : scenarios) {
    StepObserver* observer = outputs.BeginVariant(s);
    storage_models[s.variant] = DescribeStorageModel(s);
    SimulationStats stats;
    RunRecord record;
    results.push_back(simulator.RunVariant(s, &stats, &record));
    if (!quiet) {
      std::fprintf(stderr,
                   "▶ %s: %u GPU(s) (%u x %u), %llu steps, %.1f s simulated in %.2f s "
                   "(%.1f M events/s)\n",
                   s.variant.c_str(), stats.ranks, s.cluster.nodes, s.cluster.gpus_per_node,
                   static_cast<unsigned long long>(results.back().steps), stats.simulated_seconds,
                   stats.wall_seconds,
                   stats.wall_seconds > 0 ? stats.events / stats.wall_seconds / 1e6 : 0.0);
      std::fprintf(stderr, "  storage model: %s\n", DescribeStorageModel(s).c_str());
      // A kept disk tier starts as this host's directory holds it (one rank), or as an earlier
      // variant of this invocation left it.
      const std::vector<TierResult>& tiers = results.back().cache;
      for (size_t k = 0; k < tiers.size() && k < s.cache_tiers.size(); ++k) {
        if (tiers[k].entries_at_start == 0) continue;
        std::fprintf(stderr, "  cache.tiers.%zu (disk %s): starts with %llu entries\n", k,
                     s.cache_tiers[k].path.c_str(),
                     static_cast<unsigned long long>(tiers[k].entries_at_start));
      }
      const std::string checkpoints = DescribeCheckpoints(s, stats.ranks);
      if (!checkpoints.empty()) std::fprintf(stderr, "  %s\n", checkpoints.c_str());
    }
    if (observer) ReplaySteps(record, s.run.warmup_steps, *observer);
    outputs.Record(s, record);
    outputs.EndVariant(s);
  }
  const int rc = outputs.Finish(
      scenarios[0].name, "simulate", results,
      {{"node", NodeToJson(scenarios[0].cluster.node)}, {"storage_model", storage_models}});
  if (!quiet && rc == 0) {
    std::vector<std::string> names;
    std::vector<double> idle;
    for (size_t i = 0; i < results.size(); ++i) {
      names.push_back(scenarios[i].variant);
      idle.push_back(results[i].gpu_idle_fraction);
    }
    PrintAdviseHints(o.scenario, sets, names, idle);
  }
  return rc;
}

}  // namespace

int SimulateCommand(const SimulateCommandOptions& o) {
  std::vector<std::string> sets = o.run.sets;
  if (!o.node_profile.empty()) sets.push_back("cluster.node.profile=" + o.node_profile);
  const std::vector<Scenario> scenarios = ResolveVariants(o.run.scenario, o.run.variants, sets);
  for (const Scenario& s : scenarios) CheckSimulatable(s);
  if (o.against_run) return AgainstRun(scenarios, o.run.out.json, o.run.out.quiet);
  if (o.max_accelerators) {
    return SearchMaxAccelerators(scenarios, o.au, o.run.out.json, o.run.out.quiet);
  }
  return Simulate(scenarios, o.run, sets);
}

}  // namespace stallscope
