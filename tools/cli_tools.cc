// The tool commands' command-line wiring (tools/cli_tools.h).
#include "tools/cli_tools.h"

namespace stallscope::cli {

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

CLI::App* AddCalibrate(CLI::App& app, CalibrateCommandOptions& co) {
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "Measure this host once as a simulator node: the per-core rates of the pipeline's CPU "
      "work (normalize, verify, JPEG decode, landing received bytes, memcpy, copying into fresh "
      "pages, preprocess.cost), each the median of --trials with its spread, and the cores and "
      "memory; writes a node profile (YAML) for `simulate --node-profile FILE` or "
      "cluster.node.profile");
  calibrate->add_option("-o,--output", co.output, "Profile file to write (default: stdout)");
  calibrate->add_option("--sample-size", co.sample_size, "Sample size the rates are measured on")
      ->capture_default_str();
  calibrate->add_option("--image-size", co.image_size, "JPEG decode's output side in pixels")
      ->capture_default_str();
  calibrate->add_option("--trials", co.trials, "Trials of each rate (the median is kept)")
      ->capture_default_str();
  calibrate->add_flag("--quiet", co.quiet, "Print nothing but the profile");
  return calibrate;
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

}  // namespace stallscope::cli
