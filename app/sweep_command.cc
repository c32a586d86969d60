#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/commands.h"
#include "app/make_device.h"
#include "app/resolve.h"
#include "app/runner.h"
#include "config/grid.h"
#include "report/report.h"
#include "report/sweep_csv.h"
#include "sim/simulator.h"

namespace stallscope {

// `sweep`: every variant at every grid point, run for real or simulated; a table on stdout, the
// rows in a CSV (and the full results in --json) that `report` draws.
int SweepCommand(const SweepCommandOptions& o) {
  const bool simulate = o.simulate, quiet = o.quiet;
  const std::string& json_path = o.json;
  std::string csv_path = o.csv;
  const std::vector<std::string>& grids = o.grids;
  std::vector<std::string> variants = o.variants;
  const ScenarioFile file = ScenarioFile::Load(o.scenario);
  std::vector<std::string> sets = o.sets;
  if (!o.node_profile.empty()) sets.push_back("cluster.node.profile=" + o.node_profile);
  const std::vector<Override> overrides = ParseSets(sets);
  if (grids.empty()) throw BadInput("sweep: give at least one --grid KEY=V1,V2,...");
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
  if (!csv) throw BadInput(csv_path + ": cannot write the --csv file");
  std::unique_ptr<Simulator> simulator;
  if (simulate) {
    simulator = std::make_unique<Simulator>();
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
    if (!f) throw BadInput(json_path + ": cannot write the --json file");
    f << ResultDocument(jobs[0].scenario.name, mode, named).dump(2) << "\n";
  }
  return 0;
}

}  // namespace stallscope
