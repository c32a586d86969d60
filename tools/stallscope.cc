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

namespace {

using stallscope::BenchDirCommandOptions;
using stallscope::GenCommandOptions;
using stallscope::KernelsCommandOptions;
using stallscope::ReportCommandOptions;
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
      "sampler, cache policies and storage model as `run`, CPU costs measured on this host, "
      "and cluster: {nodes, gpus_per_node} for what-if questions at scale. Prints the same "
      "table as `run`; --json writes \"mode\": \"simulate\"");
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
  sweep->add_option("--csv", sw.csv, "CSV file to write (default: SCENARIO-NAME-sweep.csv)");
  sweep->add_option("--json", sw.json, "Also write every point's full result document");
  sweep->add_option("--variant", sw.variants, "Sweep only this variant (repeatable)");
  sweep->add_option("--set", sw.sets, "Override a key for every point (repeatable)");
  sweep->add_flag("--quiet", sw.quiet, "No progress lines");
  return sweep;
}

CLI::App* AddValidate(CLI::App& app, std::string& validate_path) {
  CLI::App* validate = app.add_subcommand("validate", "Check a scenario file without running it");
  validate->add_option("SCENARIO", validate_path, "Scenario file")->required();
  return validate;
}

CLI::App* AddGen(CLI::App& app, GenCommandOptions& gen_o) {
  CLI::App* gen = app.add_subcommand(
      "gen",
      "Write a dataset directory: class_NNN/sample_NNNNNNN.bin (verifiable) or .jpg, + manifest");
  gen->add_option("DIR", gen_o.dir, "Directory to create")->required();
  gen->add_option("--samples", gen_o.samples, "Number of files")->required();
  gen->add_option("--size", gen_o.size,
                  "raw: file size, SIZE or SIZE:STDEV (default 112KiB; e.g. 112KiB:20KiB); "
                  "jpeg: image size WxH in pixels (default 256x256)");
  gen->add_option("--format", gen_o.format,
                  "raw (verifiable bytes) or jpeg (class-coloured images, class_NNN/*.jpg)")
      ->capture_default_str();
  gen->add_option("--classes", gen_o.classes, "Class folders")->capture_default_str();
  gen->add_option("--seed", gen_o.seed, "Content seed")->capture_default_str();
  gen->add_flag("--quiet", gen_o.quiet, "Print nothing on success");
  return gen;
}

CLI::App* AddBenchDir(CLI::App& app, BenchDirCommandOptions& bench) {
  CLI::App* bench_dir = app.add_subcommand(
      "bench-dir", "Read every file of a dataset directory once and say how fast it went");
  bench_dir
      ->add_option("DIR", bench.storage.dataset.path,
                   "Dataset directory (every regular file below it)")
      ->required();
  bench_dir->add_flag("--cold", bench.storage.storage.cold,
                      "Evict the files from the page cache first");
  bench_dir->add_flag("--direct", bench.storage.storage.direct_io, "Read with O_DIRECT");
  bench_dir->add_option("--io-depth", bench.storage.io.io_depth, "Files in flight")
      ->capture_default_str();
  bench_dir
      ->add_option("--io-threads", bench.storage.io.io_threads, "I/O threads, one io_uring each")
      ->capture_default_str();
  bench_dir->add_option("--json", bench.json, "Write the result document to this file");
  bench_dir->add_flag("--quiet", bench.storage.quiet, "No notices");
  bench_dir->add_option("--batch", bench.batch,
                        "Also run the training loop with this batch size (emulated accelerator)");
  bench_dir->add_option("--step-time", bench.step_time, "Step time of the training loop");
  bench_dir->add_option("--workers", bench.workers, "Preprocessing workers")->capture_default_str();
  bench_dir
      ->add_option("--preprocess", bench.preprocess,
                   "Training loop's preprocessing: auto (jpeg-decode for JPEG files, else "
                   "none), none, normalize or jpeg-decode (224x224, ImageNet-normalized)")
      ->capture_default_str();
  bench_dir->add_option("--workload", bench.workload,
                        "MLPerf Storage H100 workload: resnet50 (batch 400, 0.224 s), unet3d "
                        "(batch 7, 0.323 s) or cosmoflow (batch 1, 0.0035 s)");
  return bench_dir;
}

CLI::App* AddKernels(CLI::App& app, KernelsCommandOptions& ko) {
  CLI::App* kernels = app.add_subcommand(
      "kernels",
      "Run the GEMM kernel ladder (naive -> ... -> tensor cores) against cuBLAS on this GPU: "
      "each version validated against a float64 reference, then timed with CUDA events");
  kernels->add_option("--sizes", ko.sizes, "Matrix sizes n (n x n x n), multiples of 256")
      ->capture_default_str();
  kernels->add_option("--json", ko.json, "Write every row to this JSON file");
  kernels->add_flag("--quiet", ko.quiet, "No progress lines");
  return kernels;
}

CLI::App* AddReport(CLI::App& app, ReportCommandOptions& rep) {
  CLI::App* report = app.add_subcommand(
      "report", "Render result documents (run --json) as one self-contained HTML page");
  report
      ->add_option("RESULT", rep.inputs,
                   "Result JSON files (run/simulate --json), compared side by side, and sweep "
                   "CSVs (sweep --csv), drawn as GPU idle against the first grid key")
      ->required();
  report->add_option("-o,--output", rep.output, "HTML file to write")->capture_default_str();
  report->add_flag("--quiet", rep.quiet, "Print nothing on success");
  return report;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stallscope;
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

  RunCommandOptions ro;
  SimulateCommandOptions so;
  SweepCommandOptions sw;
  std::string validate_path;
  GenCommandOptions gen_o;
  BenchDirCommandOptions bench;
  KernelsCommandOptions ko;
  ReportCommandOptions rep;
  CLI::App* run = AddRun(app, ro);
  CLI::App* simulate = AddSimulate(app, so);
  CLI::App* sweep = AddSweep(app, sw);
  CLI::App* validate = AddValidate(app, validate_path);
  CLI::App* gen = AddGen(app, gen_o);
  CLI::App* bench_dir = AddBenchDir(app, bench);
  CLI::App* kernels = AddKernels(app, ko);
  CLI::App* report = AddReport(app, rep);

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
    if (*validate) return ValidateCommand(validate_path);
    if (*report) return ReportCommand(rep);
    if (*bench_dir) return BenchDirCommand(bench);
    if (*kernels) return KernelsCommand(ko);
    if (*gen) return GenCommand(gen_o);
    return kExitBadInput;
  });
}
