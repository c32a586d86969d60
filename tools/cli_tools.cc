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
  bench_dir
      ->add_option("--io-depth", bench.storage.io.io_depth,
                   "Files in flight (default: 16 per default I/O thread, at least 64)")
      ->capture_default_str();
  bench_dir
      ->add_option("--io-threads", bench.storage.io.io_threads,
                   "I/O threads, one io_uring each (default: this host's cores, at most 16)")
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
  bench_dir
      ->add_option("--normalize-on", bench.normalize_on,
                   "Training loop: where normalize and jpeg-decode normalize: host (the "
                   "workers write float32) or device (the workers hand over bytes, the "
                   "jpeg-decode crop's uint8 pixels; loader.preprocess.normalize_on)")
      ->capture_default_str();
  bench_dir
      ->add_option("--preprocess-cost", bench.preprocess_cost,
                   "Training loop: real CPU work per sample on top of --preprocess (e.g. 2ms; "
                   "loader.preprocess.cost, DLIO's preprocess_time but busy, not asleep)")
      ->capture_default_str();
  bench_dir->add_option("--workload", bench.workload,
                        "MLPerf Storage H100 workload: resnet50 (batch 400, 0.224 s), unet3d "
                        "(batch 7, 0.323 s) or cosmoflow (batch 1, 0.0035 s)");
  return bench_dir;
}

CLI::App* AddBenchCheckpoint(CLI::App& app, BenchCheckpointCommandOptions& bc) {
  CLI::App* cmd = app.add_subcommand(
      "bench-checkpoint",
      "Write a training checkpoint to DIR and restore it, as MLPerf Storage v2.0's checkpoint "
      "workloads do, and say how fast it went.\n\n"
      "The checkpoint (--model's size, or --size) is split over --ranks ranks; the ranks write "
      "their shares together, each to its own file, through io_uring with the durable pattern "
      "of a run's checkpoints (temporary name, fsync, rename, directory fsync). Then the files "
      "are evicted from the page cache (POSIX_FADV_DONTNEED; no root needed) and read back "
      "block by block through recycled buffers, the content checked against its checksum. MLPerf's "
      "rules: fsync enforced, caches "
      "dropped before the read-back, the job's time is the slowest rank's (GB/s = all ranks' "
      "bytes / that time), 5 runs. Prints each run, the mean and the median; the files are "
      "removed at the end. Under `mpirun -np N` each MPI rank writes its share and rank 0 "
      "reports.\n\n"
      "With --step-time and --max-stall: how often a job may checkpoint, synchronously, so "
      "that the GPUs wait for checkpoints at most that share of the run (and, asynchronously, "
      "so that each write ends before the next checkpoint).\n\n"
      "Examples:\n"
      "  stallscope bench-checkpoint /mnt/ckpt --model llama3-8b --ranks 8\n"
      "  stallscope bench-checkpoint /tmp/ck --size 4GiB --ranks 2 --step-time 100ms "
      "--max-stall 5% --json ck.json\n"
      "  mpirun -np 8 stallscope bench-checkpoint /mnt/ckpt --model llama3-8b");
  cmd->add_option("DIR", bc.dir, "Directory to write the checkpoint files in (made if missing)")
      ->required();
  cmd->add_option("--model", bc.model,
                  "MLPerf Storage v2.0 checkpoint: llama3-8b (105 GB, 8 ranks in MLPerf), "
                  "llama3-70b (912 GB, 64), llama3-405b (5.29 TB, 512), llama3-1t (18 TB, 1024)");
  cmd->add_option("--size", bc.size,
                  "The whole checkpoint's size instead of the model's (e.g. 4GiB, 10GB)");
  cmd->add_option("--ranks", bc.ranks,
                  "Ranks the checkpoint is split over, each writing size / N to its own file "
                  "(default 1; threads of this process; under mpirun: the job's ranks)");
  cmd->add_option("--runs", bc.runs, "Runs, each reported")->capture_default_str();
  cmd->add_option("--block", bc.block, "Bytes per write and read (default 1MiB)");
  cmd->add_option("--io-depth", bc.io_depth, "Writes (and reads) in flight per rank")
      ->capture_default_str();
  cmd->add_flag("--direct", bc.direct, "Write and read with O_DIRECT");
  cmd->add_flag_function(
      "--no-fsync", [&bc](int64_t) { bc.fsync = false; },
      "Do not fsync (not MLPerf's rules; the read-back still comes from the storage: "
      "the files are flushed, untimed, before eviction)");
  cmd->add_flag("--read-into-buffer", bc.read_into_buffer,
                "Read each checkpoint back into its snapshot buffer, as a run's `restore: true` "
                "does (default: through --io-depth recycled buffers of --block bytes, checked "
                "as they arrive, as a restore staged to a GPU and fio's read job do)");
  cmd->add_option("--step-time", bc.step_time,
                  "The training step's duration, for the checkpoint frequency (e.g. 100ms)");
  cmd->add_option("--max-stall", bc.max_stall,
                  "The share of the run the checkpoint stall may take (e.g. 5%): prints the "
                  "largest checkpoint frequency that keeps under it");
  cmd->add_option("--json", bc.json, "Write the result document to this file");
  cmd->add_flag("--quiet", bc.quiet, "No description above the table and no progress line");
  return cmd;
}

CLI::App* AddCalibrate(CLI::App& app, CalibrateCommandOptions& co) {
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "Measure this host once as a simulator node: the per-core rates of the pipeline's CPU "
      "work (normalize, verify, JPEG decode, landing received bytes, memcpy, copying into fresh "
      "pages, preprocess.cost), each the median of --trials with its spread, and the cores and "
      "memory; writes a node profile (YAML) for `simulate --node-profile FILE` or "
      "cluster.node.profile. With --dir DIR: a storage profile of that directory instead, for "
      "storage.profile");
  calibrate->add_option("-o,--output", co.output, "Profile file to write (default: stdout)");
  calibrate->add_option("--sample-size", co.sample_size, "Sample size the rates are measured on")
      ->capture_default_str();
  calibrate->add_option("--image-size", co.image_size, "JPEG decode's output side in pixels")
      ->capture_default_str();
  calibrate->add_option("--trials", co.trials, "Trials of each rate (the median is kept)")
      ->capture_default_str();
  calibrate->add_flag("--quiet", co.quiet, "Print nothing but the profile");
  calibrate->add_option("--dir", co.dir,
                        "Measure this dataset directory's storage instead (bandwidth from every "
                        "file at --io-depth, latency from files read one at a time, and what a "
                        "read costs with a busy thread on every core): a storage profile for a "
                        "directory scenario's storage.profile");
  calibrate->add_flag("--cold", co.cold,
                      "With --dir: evict the files from the page cache before each read (as "
                      "storage.cold: true)");
  calibrate->add_flag("--direct", co.direct, "With --dir: read with O_DIRECT (storage.direct_io)");
  calibrate->add_option("--io-depth", co.io_depth, "With --dir: reads in flight (loader.io_depth)")
      ->capture_default_str();
  calibrate
      ->add_option("--io-threads", co.io_threads, "With --dir: I/O threads (loader.io_threads)")
      ->capture_default_str();
  calibrate->add_option("--io-slice", co.io_slice,
                        "With --dir: the I/O threads' scheduler slice (loader.io_slice: 100us by "
                        "default, 0 for the kernel's); the profile serves scenarios with the same");
  return calibrate;
}

CLI::App* AddKernels(CLI::App& app, KernelsCommandOptions& ko) {
  CLI::App* kernels = app.add_subcommand(
      "kernels",
      "Run the GEMM kernel ladder (naive -> ... -> tensor cores) against cuBLAS on this GPU: "
      "each version validated against a float64 reference, then timed with CUDA events");
  kernels->add_option("--sizes", ko.sizes, "Matrix sizes n (n x n x n), multiples of 256")
      ->capture_default_str();
  kernels->add_option("--shapes", ko.shapes,
                      "Extra non-square shapes MxNxK (e.g. 256x16384x4096, an MLP layer's), "
                      "comma-separated, run by the bf16 tensor-core rungs and cuBLAS bf16");
  kernels->add_option("--json", ko.json, "Write every row to this JSON file");
  kernels->add_option("--profile", ko.profile,
                      "Also run Nsight Compute (ncu) on every rung with a fixed metric set (SM, "
                      "FMA and tensor pipe, DRAM %, occupancy, bank conflicts, registers, "
                      "spills) and write DIR/profile.md beside the timings (DIR/ladder.txt)");
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

CLI::App* AddAdvise(CLI::App& app, AdviseCommandOptions& ao) {
  CLI::App* cmd = app.add_subcommand(
      "advise",
      "What would fix it: the cheapest changes that reach a target GPU utilization, "
      "predicted by the simulator.\n\n"
      "Searches the loader (prefetch doubled up to six times, workers), the cache (a RAM tier "
      "of a quarter, half or all of the dataset, a larger one, fill-once, a distributed tier "
      "across nodes), the storage (bandwidth x1.5, x2, x4), checkpoints (sync to async, then "
      "half or a quarter as often) and the node (cores x2, x4; NIC x2), simulating far "
      "fewer points than the space holds: each knob up its ladder while it helps, then the best "
      "knobs combined, then every point that reaches the target shrunk to its smallest "
      "sufficient steps. Ranked by money per day where the scenario prices what a change adds "
      "(cost: ram_gib_day, storage_gbps_day, core_day; with gpu_hour, the idle money saved is "
      "shown too), else by size (each changed knob counts 1 + its step). Prints the --set "
      "lines to paste; --write saves the top change as a scenario file.\n\n"
      "Examples:\n"
      "  stallscope advise scenarios/cold_vs_cached.yaml --variant cold --au 0.9\n"
      "  stallscope advise S.yaml --idle 0.05 --json advice.json --write fixed.yaml\n"
      "  stallscope advise S.yaml --au 0.95 --verify    (runs the current and the top change)\n"
      "  stallscope advise S.yaml --au 0.9 --cluster-size   (how many GPUs this storage feeds)");
  cmd->add_option("SCENARIO", ao.scenario, "Scenario file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--variant", ao.variant, "The variant to fix (default: the file's first)");
  cmd->add_option("--set", ao.sets, "Override a key under every point (KEY=VALUE)");
  cmd->add_option("--au", ao.au, "Target accelerator utilization, in (0, 1), e.g. 0.9");
  cmd->add_option("--idle", ao.idle, "Target GPU idle fraction, in (0, 1), e.g. 0.05");
  cmd->add_option("--knob", ao.knobs,
                  "Search only these knobs: prefetch, workers, io_depth (a directory), "
                  "normalize_on (jpeg-decode), ram, policy, distributed, bandwidth, checkpoint, "
                  "cores, nic");
  cmd->add_option("--max-simulations", ao.max_simulations,
                  "At most this many simulations (default: 10% of the space, at least 20)");
  cmd->add_option("--top", ao.top, "Changes printed")->capture_default_str();
  cmd->add_flag("--cluster-size", ao.cluster_size,
                "How many GPUs: the largest cluster (nodes doubled, then bisected, as "
                "simulate --max-accelerators) that keeps the target AU, as configured and "
                "with the top change");
  cmd->add_flag("--verify", ao.verify,
                "Run the current scenario and the best-ranked change this host can run (not "
                "one that needs more cores than it has, a faster disk under a directory or a "
                "faster NIC: those are named and passed over) for real on this host (emulated "
                "device, one rank), and print predicted against measured idle");
  cmd->add_option("--verify-runs", ao.verify_runs,
                  "At least this many real runs of each under --verify, alternated (at most 20)")
      ->capture_default_str();
  cmd->add_option("--verify-seconds", ao.verify_seconds,
                  "Under --verify, run each until its runs measured this long (at most 20 runs), "
                  "and compare their idle pooled over all that time: one run of a few hundred "
                  "milliseconds at one read in flight scatters by 10 points and more")
      ->capture_default_str();
  cmd->add_option("--write", ao.write, "Write the scenario with the top change to this file");
  cmd->add_option("--json", ao.json, "Write every simulated candidate to this file");
  cmd->add_flag("--quiet", ao.quiet, "Nothing on stderr");
  return cmd;
}

}  // namespace stallscope::cli
