// `stallscope bench-checkpoint`: how fast this host writes a training checkpoint and restores
// it, as MLPerf Storage v2.0's checkpoint workloads measure it (app/bench_checkpoint.h): the
// ranks write their shares together, the slowest rank's time counts, 5 runs; and, with a step
// time, how often a job could afford to checkpoint.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "app/bench_checkpoint.h"
#include "app/budget.h"
#include "app/commands.h"
#include "app/errors.h"
#include "app/mpi_job.h"
#include "app/outputs.h"
#include "base/median.h"
#include "base/units.h"

namespace stallscope {
namespace {

// Threads one process runs as ranks; more ranks than that are an `mpirun` job's. MLPerf
// Storage's largest workload (llama3-1t) has 1,024 ranks.
constexpr uint32_t kMaxThreadRanks = 4096;
// io_uring's queue is sized by the depth; Linux caps a ring at 32,768 entries.
constexpr uint32_t kMaxIoDepth = 4096;

// The benchmark as asked for, checked: what it writes, what its size messages name, and the
// frequency question.
struct BenchSetup {
  CheckpointBenchPlan plan;
  const CheckpointPreset* preset = nullptr;  // --model's
  std::string size_flag;                     // "--size 64MiB" or "--model llama3-8b"
  std::optional<double> step_seconds;        // with max_stall: how often to checkpoint
  std::optional<double> max_stall;
  bool mpi = false;  // the ranks are an mpirun job's, one per process
};

std::string Binary(double bytes) { return FormatBinaryBytes(bytes); }
std::string Decimal(double bytes) { return FormatBytes(bytes); }

const CheckpointPreset& PresetOf(const std::string& model) {
  for (const CheckpointPreset& p : kCheckpointPresets) {
    if (model == p.name) return p;
  }
  throw BadInput("--model " + model +
                 ": expected llama3-8b, llama3-70b, llama3-405b or llama3-1t (MLPerf Storage "
                 "v2.0's checkpoint workloads)");
}

// "5%" or "0.05": a share of the run in (0, 1).
double ParseShare(const std::string& text) {
  std::optional<double> v;
  if (!text.empty() && text.back() == '%') {
    if (auto p = ParseNumber(text.substr(0, text.size() - 1))) v = *p / 100;
  } else {
    v = ParseNumber(text);
  }
  if (!v || !(*v > 0 && *v < 1)) {
    throw BadInput("--max-stall " + text +
                   ": expected a share of the run above 0% and below "
                   "100%, e.g. 5% or 0.05");
  }
  return *v;
}

// Ranks, sizes and counts, checked (BadInput names the flag). `job_ranks`: an mpirun job's.
BenchSetup SetupOf(const BenchCheckpointCommandOptions& o, std::optional<uint32_t> job_ranks) {
  BenchSetup s;
  CheckpointOptions checkpoint;  // the sizes as a run's checkpoint takes them
  if (!o.model.empty()) {
    s.preset = &PresetOf(o.model);
    checkpoint.bytes = s.preset->bytes;
    s.size_flag = "--model " + o.model;
  }
  if (!o.size.empty()) {
    const std::optional<double> size = ParseSize(o.size);
    if (!size || !(*size >= 1) || *size > 1e18) {
      throw BadInput("--size " + o.size + ": expected a size, e.g. 64MiB or 10GB");
    }
    checkpoint.bytes = static_cast<uint64_t>(*size);
    s.size_flag = "--size " + o.size;
  }
  if (checkpoint.bytes == 0) {
    throw BadInput("give --model (llama3-8b, llama3-70b, llama3-405b or llama3-1t) or --size");
  }
  s.mpi = job_ranks.has_value();
  if (job_ranks && o.ranks && *o.ranks != *job_ranks) {
    throw BadInput(
        fmt::format("--ranks {}: this mpirun job has {} ranks, each writing its share; "
                    "leave --ranks out or launch {} ranks",
                    *o.ranks, *job_ranks, *o.ranks));
  }
  s.plan.ranks = job_ranks.value_or(o.ranks.value_or(1));
  if (s.plan.ranks == 0) throw BadInput("--ranks 0: expected at least 1 rank");
  if (!job_ranks && s.plan.ranks > kMaxThreadRanks) {
    throw BadInput(
        fmt::format("--ranks {}: at most {} ranks as threads of one process; launch "
                    "more under mpirun",
                    s.plan.ranks, kMaxThreadRanks));
  }
  if (checkpoint.bytes < s.plan.ranks) {
    throw BadInput(
        fmt::format("{}: less than one byte for each of {} ranks", s.size_flag, s.plan.ranks));
  }
  s.plan.rank_bytes = checkpoint.rank_bytes(s.plan.ranks);
  s.plan.path = o.dir;
  s.plan.runs = o.runs;
  if (o.runs == 0) throw BadInput("--runs 0: expected at least 1 run");
  const std::string block = o.block.empty() ? std::to_string(checkpoint.block) : o.block;
  const std::optional<double> block_bytes = ParseSize(block);
  if (!block_bytes || *block_bytes < 4096 || *block_bytes > (1 << 30) ||
      std::fmod(*block_bytes, 4096) != 0) {
    throw BadInput("--block " + block + ": expected a multiple of 4KiB from 4KiB to 1GiB");
  }
  s.plan.block = static_cast<uint64_t>(*block_bytes);
  if (o.io_depth == 0 || o.io_depth > kMaxIoDepth) {
    throw BadInput(
        fmt::format("--io-depth {}: expected 1 to {} I/Os in flight", o.io_depth, kMaxIoDepth));
  }
  s.plan.io_depth = o.io_depth;
  s.plan.fsync = o.fsync;
  s.plan.direct = o.direct;
  s.plan.read_into_buffer = o.read_into_buffer;
  if (o.step_time.empty() != o.max_stall.empty()) {
    throw BadInput(o.step_time.empty()
                       ? "--max-stall needs --step-time (the training step's duration, e.g. 100ms)"
                       : "--step-time needs --max-stall (the stall's share of the run, e.g. 5%)");
  }
  if (!o.step_time.empty()) {
    s.step_seconds = ParseDuration(o.step_time);
    if (!s.step_seconds || !(*s.step_seconds > 0)) {
      throw BadInput("--step-time " + o.step_time + ": expected a positive duration, e.g. 100ms");
    }
    s.max_stall = ParseShare(o.max_stall);
  }
  return s;
}

// Refuses what cannot fit before anything is written: a checkpoint already there (it would be
// replaced), the directory's free space, the host's memory for the snapshot buffers.
// `processes_on_host`: processes like this one on this host (an mpirun job's ranks there),
// which share its memory and, for a local directory, its disk.
void CheckRoom(const BenchSetup& s, const CheckpointBench& bench, uint32_t processes_on_host) {
  if (const std::string existing = bench.ExistingCheckpoint(); !existing.empty()) {
    throw BadInput(
        fmt::format("DIR: {} holds a checkpoint of a rank this benchmark writes ({}), "
                    "which it would replace; give an empty directory",
                    s.plan.path, existing));
  }
  const uint32_t ranks_here = s.mpi ? processes_on_host : s.plan.ranks;
  const double disk = static_cast<double>(bench.DiskBytes()) * processes_on_host;
  const double file = disk / ranks_here;  // header and padding included
  if (const auto free = bench.FreeBytes(); free && disk > static_cast<double>(*free)) {
    throw BadInput(fmt::format(
        "{}: the checkpoint needs {} ({}) of free space in {} ({} file{} of {}); it has {} free",
        s.size_flag, Decimal(disk), Binary(disk), s.plan.path, ranks_here,
        ranks_here == 1 ? "" : "s", Binary(file), Binary(static_cast<double>(*free))));
  }
  const double memory = static_cast<double>(bench.BufferBytes()) * processes_on_host;
  if (const auto available = ReadHostMemory();
      available && memory > static_cast<double>(*available)) {
    throw BadInput(fmt::format(
        "{}: the snapshot buffers need {} of host memory ({} rank{} on this host, {} each); "
        "{} available: give a smaller --size",
        s.size_flag, Binary(memory), ranks_here, ranks_here == 1 ? "" : "s",
        Binary(static_cast<double>(s.plan.rank_bytes)), Binary(static_cast<double>(*available))));
  }
}

void PrintHeader(const BenchSetup& s) {
  const CheckpointBenchPlan& p = s.plan;
  std::string what = s.size_flag;
  if (s.preset) {
    what = fmt::format(
        "{} (MLPerf Storage v2.0: {} written by {} ranks){}", s.preset->name,
        Decimal(s.preset->bytes), s.preset->ranks,
        s.size_flag.starts_with("--size") ? ", its size replaced by " + s.size_flag : "");
  }
  std::cout << fmt::format(
      "bench-checkpoint {}: {}\n"
      "  {} rank{} ({}) × {} ({}) = {} ({}), {} run{}\n"
      "  each rank: its own file, io_uring, {} blocks, {} in flight, {}{}, temporary name + "
      "rename; page cache evicted before each read-back{}; checksum verified\n",
      p.path, what, p.ranks, p.ranks == 1 ? "" : "s",
      s.mpi ? "mpirun ranks" : (p.ranks == 1 ? "this process" : "threads of this process"),
      Decimal(p.rank_bytes), Binary(p.rank_bytes), Decimal(p.total_bytes()),
      Binary(p.total_bytes()), p.runs, p.runs == 1 ? "" : "s", Binary(p.block), p.io_depth,
      p.fsync ? "fsync" : "no fsync", p.direct ? ", O_DIRECT" : "",
      p.read_into_buffer
          ? ", read into the snapshot buffer"
          : fmt::format(", read through {} buffers of {}", p.io_depth, Binary(p.block)));
}

void PrintColumns(const BenchSetup& s) {
  std::cout << fmt::format("{:>6}  {:>9}  {:>10}  {:>9}  {:>10}{}\n", "run", "write (s)",
                           "write GB/s", "read (s)", "read GB/s",
                           s.plan.ranks > 1 ? "   ranks' write (s): fastest / slowest" : "");
}

// One row: seconds and GB/s of the writes and reads (a run's, or the mean or median of runs).
struct Row {
  double write_seconds, write_rate, read_seconds, read_rate;
};
void PrintRow(const std::string& label, const Row& r, const std::string& spread = "") {
  std::cout << fmt::format("{:>6}  {:>9.3f}  {:>10.3f}  {:>9.3f}  {:>10.3f}{}\n", label,
                           r.write_seconds, r.write_rate / 1e9, r.read_seconds, r.read_rate / 1e9,
                           spread)
            << std::flush;
}

void PrintRun(const CheckpointBenchRun& run, uint32_t index, const BenchSetup& s) {
  std::string spread;
  if (run.ranks.size() > 1) {
    double fastest = run.ranks.front().write_seconds;
    for (const RankTimes& r : run.ranks) fastest = std::min(fastest, r.write_seconds);
    spread = fmt::format("   {:.3f} / {:.3f}", fastest, run.write_seconds());
  }
  const double bytes = static_cast<double>(s.plan.total_bytes());
  PrintRow(std::to_string(index),
           {run.write_seconds(), bytes / run.write_seconds(), run.read_seconds(),
            bytes / run.read_seconds()},
           spread);
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// "checkpoint at most every N steps …": the frequency advice, printed and as JSON.
nlohmann::json FrequencyReport(const BenchSetup& s, double write_seconds) {
  const double step = *s.step_seconds, share = *s.max_stall;
  const CheckpointFrequency f = MaxCheckpointFrequency(write_seconds, step, share);
  const double every = static_cast<double>(f.every_steps) * step;
  const double async_every = static_cast<double>(f.async_every_steps) * step;
  std::cout << fmt::format(
      "\ncheckpoint at most every {} steps (every {:.2f} s) to keep the sync checkpoint stall "
      "under {:g}%\n"
      "  sync: each checkpoint stalls the GPUs for the slowest rank's write, {:.3f} s (median "
      "run): {:.3f} / ({} × {} + {:.3f}) = {:.2f}% of the run\n"
      "  async: the GPUs wait only for the snapshot, but each write must finish within the "
      "interval: at most every {} step{} (every {:.2f} s); the writes then share the storage "
      "with the loader's reads\n",
      f.every_steps, every, share * 100, write_seconds, write_seconds, f.every_steps,
      FormatDuration(step), write_seconds, f.stall_fraction * 100, f.async_every_steps,
      f.async_every_steps == 1 ? "" : "s", async_every);
  return {{"step_seconds", step},
          {"max_stall", share},
          {"write_seconds", write_seconds},
          {"every_steps", f.every_steps},
          {"every_seconds", every},
          {"stall_fraction", f.stall_fraction},
          {"async_every_steps", f.async_every_steps},
          {"async_every_seconds", async_every}};
}

// The mean and median rows, the summary line and the frequency advice; returns the JSON.
nlohmann::json Summarize(const BenchSetup& s, const std::vector<CheckpointBenchRun>& runs,
                         double resident) {
  const CheckpointBenchPlan& p = s.plan;
  const double bytes = static_cast<double>(p.total_bytes());
  std::vector<double> writes, reads, write_rates, read_rates;
  nlohmann::json each = nlohmann::json::array();
  for (const CheckpointBenchRun& run : runs) {
    writes.push_back(run.write_seconds());
    reads.push_back(run.read_seconds());
    write_rates.push_back(bytes / run.write_seconds());
    read_rates.push_back(bytes / run.read_seconds());
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankTimes& r : run.ranks) {
      ranks.push_back(
          {{"rank", r.rank}, {"write_seconds", r.write_seconds}, {"read_seconds", r.read_seconds}});
    }
    each.push_back({{"write_seconds", writes.back()},
                    {"read_seconds", reads.back()},
                    {"write_bytes_per_second", write_rates.back()},
                    {"read_bytes_per_second", read_rates.back()},
                    {"ranks", ranks}});
  }
  PrintRow("mean", {Mean(writes), Mean(write_rates), Mean(reads), Mean(read_rates)});
  PrintRow("median", {Median(writes), Median(write_rates), Median(reads), Median(read_rates)});
  const double write_rate = Median(write_rates), read_rate = Median(read_rates);
  std::cout << fmt::format(
      "write {:.3f} GB/s ({:.3f} GiB/s), read {:.3f} GB/s ({:.3f} GiB/s): median of {} run{}, "
      "each the job's bytes over its slowest rank's time (MLPerf Storage)\n",
      write_rate / 1e9, write_rate / (1 << 30), read_rate / 1e9, read_rate / (1 << 30), runs.size(),
      runs.size() == 1 ? "" : "s");
  if (resident > 0.1) {
    std::cout << fmt::format(
        "note: {:.0f}% of a checkpoint stayed in the page cache after eviction ({} on tmpfs?): "
        "the read-back rates are memory's, not the storage's\n",
        resident * 100, p.path);
  }
  nlohmann::json doc = {{"path", p.path},
                        {"model", s.preset ? nlohmann::json(s.preset->name) : nullptr},
                        {"ranks", p.ranks},
                        {"bytes_per_rank", p.rank_bytes},
                        {"bytes", p.total_bytes()},
                        {"block", p.block},
                        {"io_depth", p.io_depth},
                        {"fsync", p.fsync},
                        {"direct", p.direct},
                        {"read_into", p.read_into_buffer ? "buffer" : "stream"},
                        {"runs", each},
                        {"write_bytes_per_second", write_rate},
                        {"read_bytes_per_second", read_rate},
                        {"mean_write_bytes_per_second", Mean(write_rates)},
                        {"mean_read_bytes_per_second", Mean(read_rates)},
                        {"slowest_rank_write_seconds", Median(writes)},
                        {"slowest_rank_read_seconds", Median(reads)},
                        {"page_cache_resident_after_evict", resident}};
  if (s.step_seconds) doc["max_frequency"] = FrequencyReport(s, Median(writes));
  return doc;
}

// "run 2/5 …" on a terminal's stderr while a run goes; erased when it ends.
class RunProgress {
 public:
  explicit RunProgress(bool quiet) : enabled_(!quiet && isatty(STDERR_FILENO)) {}
  void Show(uint32_t run, uint32_t runs) const {
    if (enabled_) std::fprintf(stderr, "\rrun %u/%u: writing, evicting, reading back…", run, runs);
  }
  void Clear() const {
    if (enabled_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  const bool enabled_;
};

// `mpirun -np N stallscope bench-checkpoint`: each rank writes its own share, all starting
// each phase together (MpiJob::AnyRank, which also stops every rank when one failed); rank 0
// gathers the times and reports. Set-up errors are agreed before anything is written.
int BenchCheckpointRanks(const BenchCheckpointCommandOptions& o, MpiJob& job) {
  const bool root = job.rank() == 0;
  std::optional<BenchSetup> setup;
  std::ofstream json_out;
  std::unique_ptr<CheckpointBench> bench;
  std::string error;
  try {
    setup = SetupOf(o, static_cast<uint32_t>(job.size()));
    if (root) json_out = OpenJson(o.json);
    bench = std::make_unique<CheckpointBench>(setup->plan, job.rank(), 1);
    CheckRoom(*setup, *bench, static_cast<uint32_t>(job.local_size()));
  } catch (const BadInput& e) {
    error = ErrorMessage(e);
  }
  if (job.AnyRankRefused(error)) return kExitBadInput;
  auto fail = [&](const std::exception& e) {
    std::fprintf(stderr, "stallscope: rank %d: %s\n", job.rank(), ErrorMessage(e).c_str());
    return kExitRunFailed;
  };
  std::string allocation;  // why this rank's buffer could not be made
  try {
    bench->Allocate();
  } catch (const std::exception& e) {
    allocation = ErrorMessage(e);
  }
  if (job.AnyRank(!allocation.empty())) {
    if (!allocation.empty())
      std::fprintf(stderr, "stallscope: rank %d: %s\n", job.rank(), allocation.c_str());
    return kExitRunFailed;
  }
  if (root && !o.quiet) PrintHeader(*setup);
  if (root) PrintColumns(*setup);
  std::vector<CheckpointBenchRun> runs;
  const RunProgress progress(o.quiet || !root);
  for (uint32_t k = 1; k <= setup->plan.runs; ++k) {
    progress.Show(k, setup->plan.runs);
    std::vector<RankTimes> mine;
    try {
      mine = bench->Run(k, [&](bool failed) { return job.AnyRank(failed); });
    } catch (const PeerFailed&) {
      progress.Clear();
      return kExitRunFailed;  // that rank said why
    } catch (const std::exception& e) {
      progress.Clear();
      return fail(e);
    }
    progress.Clear();
    const std::vector<std::string> all = job.GatherAtRoot(
        nlohmann::json{mine[0].rank, mine[0].write_seconds, mine[0].read_seconds}.dump());
    if (!root) continue;
    CheckpointBenchRun& run = runs.emplace_back();
    for (const std::string& text : all) {
      const nlohmann::json j = nlohmann::json::parse(text);
      run.ranks.push_back({j[0].get<uint32_t>(), j[1].get<double>(), j[2].get<double>()});
    }
    PrintRun(run, k, *setup);
  }
  bench->RemoveCheckpoints();
  job.AnyRank(false);  // every rank's files gone before the directory goes
  bench->RemoveDirectoryIfMade();
  const std::vector<std::string> resident =
      job.GatherAtRoot(nlohmann::json(bench->resident_after_evict()).dump());
  if (root) {
    double most = 0;
    for (const std::string& r : resident)
      most = std::max(most, nlohmann::json::parse(r).get<double>());
    const nlohmann::json doc = Summarize(*setup, runs, most);
    if (json_out.is_open()) json_out << doc.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

int BenchCheckpointCommand(const BenchCheckpointCommandOptions& o) {
  if (MpiJob* job = MpiJob::FromLauncher(); job && job->size() > 1) {
    return BenchCheckpointRanks(o, *job);
  }
  const BenchSetup setup = SetupOf(o, std::nullopt);
  std::ofstream json_out = OpenJson(o.json);
  CheckpointBench bench(setup.plan, 0, setup.plan.ranks);
  CheckRoom(setup, bench, 1);
  bench.Allocate();
  if (!o.quiet) PrintHeader(setup);
  PrintColumns(setup);
  std::vector<CheckpointBenchRun> runs;
  const RunProgress progress(o.quiet);
  for (uint32_t k = 1; k <= setup.plan.runs; ++k) {
    progress.Show(k, setup.plan.runs);
    CheckpointBenchRun& run = runs.emplace_back();
    try {
      run.ranks = bench.Run(k, [](bool failed) { return failed; });
    } catch (...) {
      progress.Clear();
      throw;
    }
    progress.Clear();
    PrintRun(run, k, setup);
  }
  bench.RemoveCheckpoints();
  bench.RemoveDirectoryIfMade();
  const nlohmann::json doc = Summarize(setup, runs, bench.resident_after_evict());
  if (json_out.is_open()) json_out << doc.dump(2) << "\n";
  return 0;
}

}  // namespace stallscope
