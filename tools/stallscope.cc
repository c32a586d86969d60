// stallscope: is my data pipeline starving the GPU, by how much, why, and what would fix it?
//
// main(): the command line (CLI11) parsed into the commands' options (app/commands.h), then the
// command run under RunGuarded, which turns every error into one message and its exit code:
// 0 success, 1 the run failed, 2 bad usage or input (nothing was run).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/errors.h"
#include "tools/cli_tools.h"

namespace {

using stallscope::RunCommandOptions;
using stallscope::SimulateCommandOptions;
using stallscope::SweepCommandOptions;

CLI::App* AddRun(CLI::App& app, RunCommandOptions& ro) {
  CLI::App* run = app.add_subcommand("run", "Run a YAML scenario's variants and compare them");
  run->add_option("SCENARIO", ro.scenario, "Scenario file (see scenarios/README.md)")->required();
  run->add_option("--variant", ro.variants, "Run only this variant (repeatable; default: all)");
  run->add_option("--set", ro.sets,
                  "Override a key: KEY=VALUE, VALUE read as YAML (repeatable), e.g. "
                  "--set loader.prefetch=8 --set 'cache.tiers=[]'");
  run->add_option("--json", ro.out.json, "Write the result document (DESIGN.md) to this file");
  run->add_option("--trace", ro.out.trace,
                  "Write a Chrome trace-event timeline (reads, preprocessing, copies, steps, "
                  "stalls) that ui.perfetto.dev opens");
  run->add_flag("--quiet", ro.out.quiet, "No banner and no progress line");
  run->add_option("--metrics-listen", ro.out.metrics_listen,
                  "Serve live Prometheus metrics at http://ADDR:PORT/metrics while the run goes "
                  "(a bare PORT means 127.0.0.1:PORT; default: no server)");
  run->add_option("--linger", ro.out.linger,
                  "Keep serving the final metrics this long after the run (e.g. 30s), so a "
                  "last scrape catches them")
      ->capture_default_str();
  run->add_option("--push-gateway", ro.out.push_gateway,
                  "Push each variant's final values to this Pushgateway (http://HOST:PORT), "
                  "job stallscope, grouped by scenario and variant");
  return run;
}

CLI::App* AddSimulate(CLI::App& app, SimulateCommandOptions& so) {
  CLI::App* simulate = app.add_subcommand(
      "simulate",
      "Run a scenario's variants as a discrete-event simulation on a simulated clock: the same "
      "sampler, cache policies and storage model as `run`, every node charged at cluster.node's "
      "rates (documented defaults, or a profile that `stallscope calibrate` measured; never "
      "this host unasked), and cluster: {nodes, gpus_per_node} for what-if questions at scale. "
      "The same scenario gives the same answer every time. Prints the same table as `run`; "
      "--json writes \"mode\": \"simulate\" and \"node\"");
  simulate->add_option("SCENARIO", so.run.scenario, "Scenario file (see scenarios/README.md)")
      ->required();
  simulate->add_option("--variant", so.run.variants, "Simulate only this variant (repeatable)");
  simulate->add_option("--set", so.run.sets,
                       "Override a key: KEY=VALUE (repeatable), e.g. --set cluster.nodes=125 "
                       "--set cluster.gpus_per_node=8");
  simulate->add_option("--json", so.run.out.json, "Write the result document to this file");
  simulate->add_option("--trace", so.run.out.trace, "Write the simulated steps as a Chrome trace");
  simulate->add_flag("--quiet", so.run.out.quiet, "No banner");
  simulate->add_option("--metrics-listen", so.run.out.metrics_listen,
                       "Serve the simulated variants' final metrics at http://ADDR:PORT/metrics");
  simulate->add_option("--linger", so.run.out.linger, "Keep serving them this long (e.g. 30s)")
      ->capture_default_str();
  simulate->add_option("--push-gateway", so.run.out.push_gateway,
                       "Push each variant's final values to this Pushgateway");
  simulate->add_flag("--max-accelerators", so.max_accelerators,
                     "Find the largest accelerator count (nodes x cluster.gpus_per_node) that "
                     "keeps AU >= --au, by search over cluster.nodes");
  simulate->add_option("--au", so.au, "AU target for --max-accelerators")->capture_default_str();
  simulate->add_option("--node-profile", so.node_profile,
                       "A node profile (`stallscope calibrate -o FILE`): every node of the "
                       "cluster has these rates (as --set cluster.node.profile=FILE)");
  simulate->add_flag("--against-run", so.against_run,
                     "Also run each variant for real (emulated device) and print both idle "
                     "fractions side by side: the simulator's validation");
  return simulate;
}

CLI::App* AddSweep(CLI::App& app, SweepCommandOptions& sw) {
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "Run (or --simulate) a scenario at every point of a grid of key values; writes a CSV "
      "that `stallscope report` draws");
  sweep->add_option("SCENARIO", sw.scenario, "Scenario file")->required();
  sweep
      ->add_option("--grid", sw.grids,
                   "KEY=V1,V2,... (repeatable; the product of all grids is swept), e.g. "
                   "--grid loader.prefetch=0,2,8 --grid cache.tiers.0.capacity=1GiB,4GiB")
      ->required();
  sweep->add_flag("--simulate", sw.simulate, "Simulate every point instead of running it");
  sweep->add_option("--node-profile", sw.node_profile,
                    "With --simulate: the nodes' rates from this profile (`calibrate -o FILE`)");
  sweep->add_option("--csv", sw.csv, "CSV file to write (default: SCENARIO-NAME-sweep.csv)");
  sweep->add_option("--json", sw.json, "Also write every point's full result document");
  sweep->add_option("--variant", sw.variants, "Sweep only this variant (repeatable)");
  sweep->add_option("--set", sw.sets, "Override a key for every point (repeatable)");
  sweep->add_flag("--quiet", sw.quiet, "No progress lines");
  return sweep;
}

CLI::App* AddValidate(CLI::App& app, std::string& validate_path, bool& keys) {
  CLI::App* validate = app.add_subcommand("validate", "Check a scenario file without running it");
  validate->add_option("SCENARIO", validate_path, "Scenario file")->required();
  validate->add_flag("--keys", keys,
                     "Also list every key the first variant reads: type, accepted values, value "
                     "(defaults included)");
  return validate;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stallscope;
  using namespace stallscope::cli;
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
      "  stallscope calibrate -o host.yaml && stallscope simulate S.yaml --node-profile host.yaml\n"
      "  stallscope sweep S.yaml --grid loader.prefetch=0,2,8 --simulate --csv s.csv\n"
      "  stallscope run S.yaml --json r.json --trace t.json --metrics-listen 9464 --linger 30s\n"
      "  stallscope report r.json -o report.html\n"
      "  stallscope advise S.yaml --variant cold --au 0.9\n"
      "  stallscope bench-checkpoint /mnt/ckpt --model llama3-8b --ranks 8\n"
      "  stallscope kernels --sizes 1024,4096   (GPU hosts)\n\n"
      "Exit codes: 0 success, 1 the run failed, 2 bad usage or input (nothing was run).",
      "stallscope"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  RunCommandOptions ro;
  SimulateCommandOptions so;
  SweepCommandOptions sw;
  std::string validate_path;
  GenCommandOptions gen_o;
  BenchDirCommandOptions bench;
  BenchCheckpointCommandOptions bench_ckpt_o;
  KernelsCommandOptions ko;
  ReportCommandOptions rep;
  CalibrateCommandOptions co;
  AdviseCommandOptions ao;
  CLI::App* run = AddRun(app, ro);
  CLI::App* simulate = AddSimulate(app, so);
  CLI::App* sweep = AddSweep(app, sw);
  bool validate_keys = false;
  CLI::App* validate = AddValidate(app, validate_path, validate_keys);
  CLI::App* gen = AddGen(app, gen_o);
  CLI::App* bench_dir = AddBenchDir(app, bench);
  CLI::App* bench_ckpt = AddBenchCheckpoint(app, bench_ckpt_o);
  CLI::App* calibrate = AddCalibrate(app, co);
  CLI::App* kernels = AddKernels(app, ko);
  CLI::App* report = AddReport(app, rep);
  CLI::App* advise = AddAdvise(app, ao);

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
  return RunGuarded([&] {
    if (*run) return RunCommand(ro);
    if (*simulate) return SimulateCommand(so);
    if (*sweep) return SweepCommand(sw);
    if (*validate) return ValidateCommand(validate_path, validate_keys);
    if (*report) return ReportCommand(rep);
    if (*bench_dir) return BenchDirCommand(bench);
    if (*bench_ckpt) return BenchCheckpointCommand(bench_ckpt_o);
    if (*kernels) return KernelsCommand(ko);
    if (*calibrate) return CalibrateCommand(co);
    if (*gen) return GenCommand(gen_o);
    if (*advise) return AdviseCommand(ao);
    return kExitBadInput;
  });
}
