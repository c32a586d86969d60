// `stallscope calibrate`: this host measured once as a node (sim/host_model.h) — each rate the
// median of repeated trials, with its spread — and written as a node profile
// (config/node_profile.h) that a scenario names (cluster.node.profile) or `simulate
// --node-profile` passes.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "app/bench_dir.h"
#include "app/budget.h"
#include "app/commands.h"
#include "base/errors.h"
#include "base/thread_slice.h"
#include "base/units.h"
#include "config/node_profile.h"
#include "sim/host_model.h"

namespace stallscope {

namespace {

// The passes over every file, where there were several: "; passes at 9120, 11020, 11380 files/s"
// (the kept one is the median of the first three, or the last where one was measured again).
std::string PassesText(const std::vector<double>& passes) {
  if (passes.size() < 2) return "";
  std::string s = "; passes at";
  for (size_t i = 0; i < passes.size(); ++i) s += fmt::format("{} {:.0f}", i ? "," : "", passes[i]);
  return s + " files/s";
}

// Where the profile goes: -o's file, written under a temporary name opened before measuring
// (a bad path is bad input before a minute of work) and renamed over it at the end, so a
// failed calibration leaves an earlier profile as it was; stdout without -o.
class ProfileOutput {
 public:
  explicit ProfileOutput(const std::string& output) : output_(output) {
    if (output.empty()) return;
    temporary_ = output + ".tmp";
    file_.open(temporary_);
    if (!file_) throw BadInput(output + ": cannot write the profile");
  }
  ~ProfileOutput() {
    if (!temporary_.empty() && !done_) std::remove(temporary_.c_str());
  }
  ProfileOutput(const ProfileOutput&) = delete;
  ProfileOutput& operator=(const ProfileOutput&) = delete;
  bool to_file() const { return !output_.empty(); }

  void Write(const std::string& text) {
    if (output_.empty()) {
      std::cout << text << std::flush;
      return;
    }
    file_ << text;
    file_.close();
    if (!file_ || std::rename(temporary_.c_str(), output_.c_str()) != 0) {
      throw RunFailed(output_ + ": writing the profile failed");
    }
    done_ = true;
  }

 private:
  std::string output_, temporary_;
  std::ofstream file_;
  bool done_ = false;
};

// `calibrate --dir`: the directory's storage, fitted (FitDirectoryStorage) and written as a
// storage profile.
int CalibrateDirectory(const CalibrateCommandOptions& o, ProfileOutput& out) {
  DirectoryStorageOptions d;
  d.dataset.path = o.dir;
  d.storage.kind = StorageKind::kDirectory;
  d.storage.cold = o.cold;
  d.storage.direct_io = o.direct;
  d.io.io_depth = o.io_depth;
  d.io.io_threads = o.io_threads;
  if (!o.io_slice.empty()) {
    const std::optional<double> slice = ParseDuration(o.io_slice);
    if (!slice || !IsSliceRequest(*slice)) {
      throw BadInput("--io-slice " + o.io_slice + ": " + kSliceRange);
    }
    d.io.io_slice = *slice;
  }
  d.quiet = o.quiet;
  std::error_code ec;
  if (!std::filesystem::is_directory(o.dir, ec)) {
    throw BadInput("--dir " + o.dir + ": not a directory (a dataset folder to measure)");
  }
  if (!o.quiet) {
    std::fprintf(
        stderr,
        "measuring %s (%s%s): every file at io_depth %u (3 times where once takes under a "
        "second), some one at a time (passes until a second of reads), then every file's "
        "first 4 KiB at io_depth %u, then some one at a time beside a thread on every core "
        "busy in 1 ms bursts and on every core but one (a few seconds)\n",
        o.dir.c_str(), o.cold ? "cold" : "page-cached", o.direct ? ", O_DIRECT" : "", o.io_depth,
        o.io_depth);
  }
  const DirectoryFit fit = FitDirectoryStorage(d);
  out.Write(DirectoryProfileYaml(d, fit));
  if (out.to_file() && !o.quiet) {
    std::fprintf(
        stderr,
        "  bandwidth %s (%.0f files/s at io_depth %u%s); latency p50 %s p99 %s (%zu reads "
        "one at a time in %d passes: p50 %s, p99 %s); iops %.0f (every file's first 4 KiB)\n"
        "  beside a thread on every core busy in 1 ms bursts: a read took %s longer (%s beside "
        "one fewer) and cost the cores %s (its own %s)\nwrote %s (storage: {profile: %s})\n",
        FormatRate(fit.model.bandwidth_bytes_per_second).c_str(), fit.deep.files_per_second,
        o.io_depth, PassesText(fit.passes).c_str(),
        FormatDuration(fit.model.latency_p50_seconds).c_str(),
        FormatDuration(fit.model.latency_p99_seconds).c_str(), fit.probe.latencies.size(),
        fit.probe_passes, FormatDuration(fit.probe.latency_p50).c_str(),
        FormatDuration(fit.probe.latency_p99).c_str(), fit.model.iops,
        FormatDuration(fit.model.read_wait_busy_seconds).c_str(),
        FormatDuration(fit.model.read_wait_partial_seconds).c_str(),
        FormatDuration(fit.cpu_per_read_busy).c_str(),
        FormatDuration(fit.model.cpu_per_read_seconds).c_str(), o.output.c_str(), o.output.c_str());
  }
  return 0;
}

}  // namespace

std::string MeasureHostProfile(uint64_t sample_size, uint32_t image_size, int trials,
                               HostMeasurement& m) {
  m = MeasureHost(sample_size, image_size, trials);
  ProfileInfo info;
  info.date = UtcNow();
  info.host = HostName();
  info.trials = m.trials;
  info.sample_size = sample_size;
  info.image_size = image_size;
  info.spread = m.spread;
  info.notes["cores"] = "the cores this process may run on (its affinity mask)";
  info.notes["nic"] = "not measured: a run here reads local or in-process storage";
  info.notes["h2d"] = "not measured: the default (the H200's pinned copy, docs/gpu)";
  if (const auto mem = ReadHostMemory()) {
    m.node.memory = *mem;
    info.notes["memory"] = fmt::format("{} available now (MemAvailable, cgroup)",
                                       FormatBinaryBytes(static_cast<double>(*mem)));
  } else {
    info.notes["memory"] = "not measured: /proc/meminfo unreadable; the default";
  }
  return NodeProfileYaml(m.node, info);
}

int CalibrateCommand(const CalibrateCommandOptions& o) {
  const auto size = ParseSize(o.sample_size);
  if (!size || *size < 1 || *size > (1ULL << 30)) {
    throw BadInput(fmt::format(
        "--sample-size {}: expected a size between 1 B and 1 GiB, e.g. 112KiB", o.sample_size));
  }
  if (o.image_size < 8 || o.image_size > 4096) {
    throw BadInput(fmt::format("--image-size {}: expected 8 to 4096 pixels", o.image_size));
  }
  if (o.trials < 1 || o.trials > 1000) {
    throw BadInput(fmt::format("--trials {}: expected 1 to 1000", o.trials));
  }
  if (o.dir.empty() && (o.cold || o.direct || o.io_depth != IoOptions{}.io_depth ||
                        o.io_threads != IoOptions{}.io_threads || !o.io_slice.empty())) {
    throw BadInput(
        "--cold, --direct, --io-depth, --io-threads and --io-slice measure a directory: give "
        "it with --dir DIR");
  }
  if (o.io_depth < 1 || o.io_depth > 4096) {
    throw BadInput(fmt::format("--io-depth {}: expected 1 to 4096", o.io_depth));
  }
  if (o.io_threads < 1 || o.io_threads > kMaxIoThreads) {
    throw BadInput(fmt::format("--io-threads {}: expected 1 to {}", o.io_threads, kMaxIoThreads));
  }
  ProfileOutput out(o.output);
  if (!o.dir.empty()) return CalibrateDirectory(o, out);
  if (!o.quiet) {
    std::fprintf(stderr,
                 "measuring this host: %d trials of each rate on %s samples, JPEG decode "
                 "to %u px...\n",
                 o.trials, FormatBinaryBytes(*size).c_str(), o.image_size);
  }
  HostMeasurement m;
  out.Write(MeasureHostProfile(static_cast<uint64_t>(*size), o.image_size, o.trials, m));
  if (out.to_file() && !o.quiet) {
    for (const NodeRate& r : kNodeRates) {
      const auto it = m.spread.find(r.key);
      if (it == m.spread.end()) continue;
      const double v = m.node.*(r.field);
      std::fprintf(stderr, "  %-18s %14s  spread %5.1f%%\n", r.key,
                   IsFactor(r) ? fmt::format("{:.3f}x", v).c_str() : FormatRate(v).c_str(),
                   it->second * 100);
    }
    std::fprintf(stderr, "wrote %s (simulate S.yaml --node-profile %s)\n", o.output.c_str(),
                 o.output.c_str());
  }
  return 0;
}

}  // namespace stallscope
