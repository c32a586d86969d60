#include "app/bench_dir.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include "base/align.h"
#include "base/units.h"
#include "pipeline/analysis.h"
#include "pipeline/device.h"
#include "storage/directory_storage.h"

namespace stallscope {
namespace {

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

// Keeps io_depth reads in flight, each in its own buffer; records each read's latency.
class Reader final : public ReadCallback {
 public:
  Reader(Storage& storage, uint32_t depth) : storage_(storage), depth_(std::max(depth, 1u)) {
    stride_ = RoundUp(storage.max_sample_bytes(), kBlockBytes) + kBlockBytes;
    buffers_ = static_cast<std::byte*>(std::aligned_alloc(4096, stride_ * depth_));
    for (uint32_t i = 0; i < depth_; ++i) free_.push_back(i);
    submitted_at_.assign(storage.num_samples(), 0);
    latency_.reserve(storage.num_samples());
  }
  ~Reader() { std::free(buffers_); }

  void ReadAll(const RankShard& shard) {
    const uint64_t n = storage_.num_samples();
    for (uint64_t id = shard.rank; id < n; id += shard.ranks) {
      uint32_t buffer;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !free_.empty(); });
        buffer = free_.back();
        free_.pop_back();
      }
      submitted_at_[id] = MonotonicSeconds();
      const ReadRequest r{id, buffers_ + buffer * stride_, buffer};
      storage_.Submit({&r, 1}, this);
    }
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return free_.size() == depth_; });
  }

  void OnReadComplete(const ReadRequest& r, int64_t result) override {
    const double now = MonotonicSeconds();
    std::lock_guard lock(mu_);
    if (result >= 0) {
      latency_.push_back(now - submitted_at_[r.sample]);
      bytes_ += static_cast<uint64_t>(result);
    } else {
      ++skipped_;
    }
    free_.push_back(static_cast<uint32_t>(r.tag));
    cv_.notify_one();
  }

  std::vector<double>& latency() { return latency_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t skipped() const { return skipped_; }

 private:
  Storage& storage_;
  const uint32_t depth_;
  uint64_t stride_ = 0;
  std::byte* buffers_ = nullptr;
  std::vector<double> submitted_at_;  // written before the submit, read by its completion
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  std::vector<uint32_t> free_;
  std::vector<double> latency_;
  uint64_t bytes_ = 0, skipped_ = 0;
};

}  // namespace

BenchDirResult BenchDirectory(const DirectoryStorageOptions& o, const RankShard& shard,
                              const std::function<void()>& before_read) {
  DirectoryStorage storage(o);
  BenchDirResult r;
  r.path = o.dataset.path;
  r.files = storage.num_samples();
  r.io_uring = storage.uses_io_uring();
  r.direct = storage.direct_io();
  r.size_histogram.assign(65, 0);
  for (uint64_t i = 0; i < r.files; ++i) {
    const uint64_t b = storage.SampleBytes(i);
    r.size_histogram[b == 0 ? 0 : std::bit_width(b)]++;
  }
  while (r.size_histogram.size() > 1 && r.size_histogram.back() == 0) r.size_histogram.pop_back();
  storage.BeginEpoch(0);  // with cold: evict the page cache now, outside the timing
  Reader reader(storage, o.io.io_depth);
  if (before_read) before_read();
  const double cpu0 = CpuSeconds(), t0 = MonotonicSeconds();
  reader.ReadAll(shard);
  r.seconds = MonotonicSeconds() - t0;
  const double cpu = CpuSeconds() - cpu0;
  r.bytes = reader.bytes();
  r.skipped = reader.skipped();
  const uint64_t read = reader.latency().size();
  r.files_per_second = r.seconds > 0 ? read / r.seconds : 0;
  r.bytes_per_second = r.seconds > 0 ? r.bytes / r.seconds : 0;
  r.cpu_seconds_per_file = read ? cpu / read : 0;
  auto& lat = reader.latency();
  r.latency_p50 = Quantile(lat, 0.50);
  r.latency_p99 = Quantile(lat, 0.99);
  r.latency_p999 = Quantile(lat, 0.999);
  r.latencies = std::move(lat);
  return r;
}

DirectoryFit FitDirectoryStorage(const DirectoryStorageOptions& o, uint64_t probe_files) {
  DirectoryFit f;
  if (!o.storage.cold) BenchDirectory(o);  // fill the page cache
  f.deep = BenchDirectory(o);
  DirectoryStorageOptions one = o;
  one.io.io_depth = 1;
  one.io.io_threads = 1;
  const uint64_t probes = std::max<uint64_t>(probe_files, 1);
  const uint64_t ranks = std::max<uint64_t>(1, (f.deep.files + probes - 1) / probes);
  f.probe = BenchDirectory(one, RankShard{0, static_cast<uint32_t>(ranks)});
  if (f.deep.bytes_per_second <= 0 || f.probe.latencies.empty()) {
    throw StorageError(o.dataset.path + ": no file could be read to measure the storage");
  }
  SimulatedStorageOptions& m = f.model;
  m.bandwidth_bytes_per_second = f.deep.bytes_per_second;
  // The probe's own times are the latency: the model's bandwidth bucket (at least one largest
  // sample deep) refills while a read waits out its latency, so a read at a time takes about
  // max(latency, transfer), as a device does that answers in its own time unless its bandwidth
  // (or a throttle) holds it back. p99 is capped at kMaxTailRatio × p50: a throttled device
  // answers most reads at once and holds a few for tens of ms (its bandwidth, which the bucket
  // already charges), a tail that a lognormal would turn into a mean far above the measured.
  m.latency_p50_seconds = std::max(1e-6, f.probe.latency_p50);
  m.latency_p99_seconds =
      std::clamp(f.probe.latency_p99, m.latency_p50_seconds, kMaxTailRatio * m.latency_p50_seconds);
  return f;
}

BenchDirResult CombineClients(const std::vector<BenchDirResult>& clients) {
  BenchDirResult all = clients.front();
  all.bytes = all.skipped = 0;
  all.seconds = 0;
  all.latencies.clear();
  double cpu = 0;
  for (const BenchDirResult& c : clients) {
    all.bytes += c.bytes;
    all.skipped += c.skipped;
    all.seconds = std::max(all.seconds, c.seconds);
    all.latencies.insert(all.latencies.end(), c.latencies.begin(), c.latencies.end());
    cpu += c.cpu_seconds_per_file * static_cast<double>(c.latencies.size());
  }
  const auto read = static_cast<double>(all.latencies.size());
  all.files_per_second = all.seconds > 0 ? read / all.seconds : 0;
  all.bytes_per_second = all.seconds > 0 ? all.bytes / all.seconds : 0;
  all.cpu_seconds_per_file = read > 0 ? cpu / read : 0;
  all.latency_p50 = Quantile(all.latencies, 0.50);
  all.latency_p99 = Quantile(all.latencies, 0.99);
  all.latency_p999 = Quantile(all.latencies, 0.999);
  return all;
}

nlohmann::json BenchDirToJson(const BenchDirResult& r) {
  return {{"path", r.path},
          {"files", r.files},
          {"bytes", r.bytes},
          {"seconds", r.seconds},
          {"files_per_second", r.files_per_second},
          {"bytes_per_second", r.bytes_per_second},
          {"latency_seconds",
           {{"p50", r.latency_p50}, {"p99", r.latency_p99}, {"p999", r.latency_p999}}},
          {"cpu_seconds_per_file", r.cpu_seconds_per_file},
          {"skipped", r.skipped},
          {"io_uring", r.io_uring},
          {"direct_io", r.direct},
          {"size_histogram_log2", r.size_histogram}};
}

std::string FormatBenchDir(const BenchDirResult& r) {
  std::string s = fmt::format(
      "{}: {} files, {} ({}) in {:.2f} s via {}{}\n"
      "  {:.0f} files/s   {:.1f} MB/s   {:.1f} MiB/s\n"
      "  per-file latency p50 {}   p99 {}   p99.9 {}\n"
      "  CPU time per file {}{}\n  file sizes:\n",
      r.path, r.files, FormatBytes(static_cast<double>(r.bytes)),
      FormatBinaryBytes(static_cast<double>(r.bytes)), r.seconds, r.io_uring ? "io_uring" : "pread",
      r.direct ? ", O_DIRECT" : "", r.files_per_second, r.bytes_per_second / 1e6,
      r.bytes_per_second / 1048576.0, FormatDuration(r.latency_p50), FormatDuration(r.latency_p99),
      FormatDuration(r.latency_p999), FormatDuration(r.cpu_seconds_per_file),
      r.skipped ? fmt::format("\n  {} files could not be read", r.skipped) : "");
  uint64_t most = 1;
  for (uint64_t c : r.size_histogram) most = std::max(most, c);
  for (size_t k = 0; k < r.size_histogram.size(); ++k) {
    if (r.size_histogram[k] == 0) continue;
    const std::string range = k == 0 ? std::string("0 B")
                                     : FormatBinaryBytes(std::ldexp(1.0, static_cast<int>(k) - 1)) +
                                           " .. " +
                                           FormatBinaryBytes(std::ldexp(1.0, static_cast<int>(k)));
    s += fmt::format("    {:>22}  {:>8}  {}\n", range, r.size_histogram[k],
                     std::string(static_cast<size_t>(40.0 * r.size_histogram[k] / most), '#'));
  }
  return s;
}

}  // namespace stallscope
