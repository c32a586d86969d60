#include "app/bench_dir.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "base/align.h"
#include "base/cores.h"
#include "base/units.h"
#include "config/node_profile.h"
#include "pipeline/analysis.h"
#include "pipeline/device.h"
#include "sim/host_model.h"
#include "storage/directory_storage.h"

namespace stallscope {
namespace {

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

// Keeps io_depth reads in flight, each in its own buffer; records each read's latency. The
// first reads go out in one submission; after that each completion submits the next file into
// the buffer it just filled, on the I/O thread that completed it (UringFileReader keeps such a
// read on that thread, with no lock or wake-up), so the calling thread only waits for the end.
class Reader final : public ReadCallback {
 public:
  Reader(Storage& storage, uint32_t depth, const RankShard& shard)
      : storage_(storage), shard_(shard), depth_(std::max(depth, 1u)) {
    const uint64_t n = storage.num_samples();
    count_ = n > shard.rank ? (n - shard.rank + shard.ranks - 1) / shard.ranks : 0;
    stride_ = RoundUp(storage.max_sample_bytes(), kBlockBytes) + kBlockBytes;
    const uint64_t buffers = std::min<uint64_t>(depth_, std::max<uint64_t>(count_, 1));
    buffers_ = static_cast<std::byte*>(std::aligned_alloc(4096, stride_ * buffers));
    submitted_at_.assign(count_, 0);
    latency_.assign(count_, -1);
  }
  ~Reader() { std::free(buffers_); }

  void ReadAll() {
    const uint64_t first = std::min<uint64_t>(depth_, count_);
    next_.store(first);
    std::vector<ReadRequest> start;
    for (uint64_t k = 0; k < first; ++k) {
      start.push_back({IdOf(k), buffers_ + k * stride_, k});
      submitted_at_[k] = MonotonicSeconds();
    }
    if (!start.empty()) storage_.Submit(start, this);
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ == count_; });
  }

  void OnReadComplete(const ReadRequest& r, int64_t result) override {
    const double now = MonotonicSeconds();
    const uint64_t k = (r.sample - shard_.rank) / shard_.ranks;
    if (result >= 0) {
      latency_[k] = now - submitted_at_[k];
      bytes_.fetch_add(static_cast<uint64_t>(result), std::memory_order_relaxed);
    }
    const uint64_t next = next_.fetch_add(1, std::memory_order_relaxed);
    if (next < count_) {
      submitted_at_[next] = MonotonicSeconds();
      const ReadRequest again{IdOf(next), r.dst, r.tag};
      storage_.Submit({&again, 1}, this);
    }
    std::lock_guard lock(mu_);
    if (++done_ == count_) cv_.notify_one();
  }

  // The latencies of the files read (failed ones left out); bytes read; files that failed.
  std::vector<double> latency() const {
    std::vector<double> ok;
    ok.reserve(latency_.size());
    for (double l : latency_) {
      if (l >= 0) ok.push_back(l);
    }
    return ok;
  }
  uint64_t bytes() const { return bytes_.load(); }
  uint64_t skipped() const {
    return count_ - static_cast<uint64_t>(std::count_if(latency_.begin(), latency_.end(),
                                                        [](double l) { return l >= 0; }));
  }

 private:
  uint64_t IdOf(uint64_t k) const { return shard_.rank + k * shard_.ranks; }

  Storage& storage_;
  const RankShard shard_;
  const uint32_t depth_;
  uint64_t count_ = 0;  // files of this shard
  uint64_t stride_ = 0;
  std::byte* buffers_ = nullptr;
  // Per file of the shard, each written by the thread that submits it, then by the one that
  // completes it (the submission orders the two).
  std::vector<double> submitted_at_;
  std::vector<double> latency_;  // seconds; -1: failed
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> bytes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t done_ = 0;  // guarded by mu_
};

// A busy thread on each of `n` cores, each counting rounds of fixed integer work (about a
// microsecond each, in registers): what reads cost the host's cores shows as rounds lost.
// Each works in bursts of kBurstSeconds with a short sleep between, as a loader's workers
// (a chunk of a batch each) and its copy thread (a batch) work and then block. A thread that
// never sleeps is the wrong neighbour: the scheduler lets a waking reader preempt it at once.
// Beside such spinners a read waited 0-9 us on an H100 host's 2 cores where the loader's
// reads lost about 50 us each; on this repository's 2-core VM 30-47 us against 62-86 beside
// 1 ms bursts, and advise --verify on real_directory's qd1 variants missed by 7-19 pp with
// the spinners' measure against 1-8 pp with the bursts' (2026-12-06, docs/status.md #18).
class Spinners {
 public:
  explicit Spinners(unsigned n) : n_(n), counts_(std::make_unique<Count[]>(n)) {
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this, i] { Spin(counts_[i]); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // every thread running
  }
  ~Spinners() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }
  uint64_t Rounds() const {
    uint64_t sum = 0;
    for (unsigned i = 0; i < n_; ++i) sum += counts_[i].rounds.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(64) Count {
    std::atomic<uint64_t> rounds{0};
  };
  static constexpr double kBurstSeconds = 1e-3, kSleepSeconds = 20e-6;
  void Spin(Count& c) const {
    uint64_t x = 0x9e3779b97f4a7c15ULL ^ reinterpret_cast<uintptr_t>(&c);
    double burst_began = MonotonicSeconds();
    while (!stop_.load(std::memory_order_relaxed)) {
      if (MonotonicSeconds() - burst_began > kBurstSeconds) {
        std::this_thread::sleep_for(std::chrono::duration<double>(kSleepSeconds));
        burst_began = MonotonicSeconds();
      }
      for (int k = 0; k < 512; ++k) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
      }
      c.rounds.fetch_add(1 + (x == 0), std::memory_order_relaxed);  // x is never 0
    }
  }

  const unsigned n_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<Count[]> counts_;
  std::vector<std::thread> threads_;
};

// One timed pass of `storage` (built from `o`). With cold, `drop` says which files leave the
// page cache first: every file (as a run's epoch drops them, and the time it takes is kept), or
// only those of `shard` (the passes of a fit that read a share again and again: the untimed
// drop of every file and a fresh listing cost 30 ms a pass on this repository's VM, a third of
// `calibrate --dir`'s time, 2026-12-07).
enum class Drop { kEveryFile, kShard };

BenchDirResult BenchPass(DirectoryStorage& storage, const DirectoryStorageOptions& o,
                         const RankShard& shard, const std::function<void()>& before_read,
                         Drop drop) {
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
  const double evict0 = MonotonicSeconds();
  if (o.storage.cold) {  // evicted now, outside the read's timing
    if (drop == Drop::kEveryFile) {
      storage.DropFromPageCache(0, 1);
    } else {
      storage.DropFromPageCache(shard.rank, shard.ranks);
    }
  }
  r.evict_seconds = o.storage.cold ? MonotonicSeconds() - evict0 : 0;
  Reader reader(storage, o.io.io_depth, shard);
  if (before_read) before_read();
  const double cpu0 = CpuSeconds(), t0 = MonotonicSeconds();
  reader.ReadAll();
  r.seconds = MonotonicSeconds() - t0;
  const double cpu = CpuSeconds() - cpu0;
  r.bytes = reader.bytes();
  r.skipped = reader.skipped();
  std::vector<double> lat = reader.latency();
  const uint64_t read = lat.size();
  r.files_per_second = r.seconds > 0 ? read / r.seconds : 0;
  r.bytes_per_second = r.seconds > 0 ? r.bytes / r.seconds : 0;
  r.cpu_seconds_per_file = read ? cpu / read : 0;
  r.latency_p50 = Quantile(lat, 0.50);
  r.latency_p99 = Quantile(lat, 0.99);
  r.latency_p999 = Quantile(lat, 0.999);
  r.latencies = std::move(lat);
  return r;
}

}  // namespace

BenchDirResult BenchDirectory(const DirectoryStorageOptions& o, const RankShard& shard,
                              const std::function<void()>& before_read) {
  DirectoryStorage storage(o);
  return BenchPass(storage, o, shard, before_read, Drop::kEveryFile);
}

DirectoryFit FitDirectoryStorage(const DirectoryStorageOptions& o, uint64_t probe_files,
                                 int load_rounds) {
  DirectoryFit f;
  if (!o.storage.cold) BenchDirectory(o);  // fill the page cache
  // The pass over every file: where it took under a second, 3 passes and the median one by
  // files/s kept. One pass of a small directory lasts a fraction of a second, and a cloud
  // disk's pace moves by a fifth from one such stretch to the next (an H100 host, 2026-12-06:
  // 9,198 and 13,206 files/s a minute apart at depth 1, the loader itself 11,000).
  {
    std::vector<BenchDirResult> passes{BenchDirectory(o)};
    if (passes[0].seconds + passes[0].evict_seconds < 1) {
      passes.push_back(BenchDirectory(o));
      passes.push_back(BenchDirectory(o));
    }
    std::sort(passes.begin(), passes.end(), [](const BenchDirResult& a, const BenchDirResult& b) {
      return a.files_per_second < b.files_per_second;
    });
    for (const BenchDirResult& b : passes) f.passes.push_back(b.files_per_second);
    f.deep = std::move(passes[passes.size() / 2]);
  }
  // The probe's passes, pooled: one pass of 400 reads lasts tens of ms, and on a VM a read at a
  // time runs in spells of a fast and a slow pace that long (this VM, 2026-12-06: p50 62.6 us in
  // one profile, 73-83 us a quarter of an hour earlier, while the loader's idle at depth 1 held
  // at 40-45%). A second of reads averages the spells as a run's epochs do. The first pass
  // drops every file, as a run's epoch does: the model's evict_seconds.
  uint64_t ranks = 1;
  {
    DirectoryPace pace(o, probe_files);
    pace.Pass(true);
    while (pace.Seconds() < kProbeSeconds && pace.passes().size() < kProbePasses &&
           !pace.passes().back().latencies.empty()) {
      pace.Pass();
    }
    f.probe = pace.Pooled();
    f.probe_passes = static_cast<int>(pace.passes().size());
    ranks = pace.ranks();
  }
  const DirectoryStorageOptions one = OneAtATime(o);
  if (f.deep.bytes_per_second <= 0 || f.probe.latencies.empty()) {
    throw StorageError(o.dataset.path + ": no file could be read to measure the storage");
  }
  // The pass over every file reads at the scenario's depth, never slower than the probe's reads
  // one at a time would: a pass that took over twice as long as the probe's mean read time per
  // file met something else on the disk or the host (on this VM, 2026-12-06: 1,678 files/s
  // against 10,500-11,000 in three passes right after, the probe's reads 83 us each). It is
  // measured again, up to twice, and the last pass kept.
  double probe_seconds = 0;
  for (double x : f.probe.latencies) probe_seconds += x;
  const double expected = static_cast<double>(f.probe.latencies.size()) / probe_seconds;
  for (int again = 0; again < 2; ++again) {  // `expected`: files/s one at a time
    if (f.deep.files_per_second >= 0.5 * expected) break;
    if (!o.quiet) {
      std::fprintf(stderr,
                   "  the pass over every file read %.0f files/s, where one at a time reads %.0f: "
                   "disturbed, measured again\n",
                   f.deep.files_per_second, expected);
    }
    f.deep = BenchDirectory(o);
    f.passes.push_back(f.deep.files_per_second);
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
  // The probe's eviction found every file cached (the deep read had just read them all), as a
  // run's next epoch does.
  m.evict_seconds = f.probe.evict_seconds;
  // The probe's CPU time per file (the whole process's, one read at a time): what a read costs
  // the host's cores apart from waiting for the device.
  m.cpu_per_read_seconds = f.probe.cpu_seconds_per_file;
  // IOPS: every file again at the same depth, only its first block each, so that what a read
  // costs apart from its bytes shows (opens, requests, a throttle's riops): fio's 4 KiB IOPS.
  // The model charges a file max(1 / iops, bytes / bandwidth). Under a cgroup's 2,000 reads/s
  // the whole files came back at up to 2,190/s on the H200 host (a burst the throttle allows;
  // the run then read 2,025/s) and the first blocks at 2,045-2,080/s: the first blocks' rate is
  // the one kept, even where the whole files' was higher.
  DirectoryStorageOptions small = o;
  small.read_at_most = kBlockBytes;
  f.small = BenchDirectory(small);
  m.iops = f.small.files_per_second;
  MeasureReadsUnderLoad(one, RankShard{0, static_cast<uint32_t>(ranks)}, f, load_rounds);
  return f;
}

std::string DirectoryProfileYaml(const DirectoryStorageOptions& d, const DirectoryFit& fit) {
  StorageProfileInfo info;
  info.date = UtcNow();
  info.host = HostName();
  info.path = std::filesystem::absolute(d.dataset.path).lexically_normal().string();
  info.cold = d.storage.cold;
  info.direct_io = fit.deep.direct;  // false where the filesystem refused O_DIRECT
  info.io_depth = d.io.io_depth;
  info.io_threads = d.io.io_threads;
  info.io_slice = d.io.io_slice;
  info.files = fit.deep.files;
  info.probe_reads = fit.probe.latencies.size();
  info.probe_files = info.probe_reads / std::max(fit.probe_passes, 1);
  info.bytes = fit.deep.bytes;
  return StorageProfileYaml(fit.model, info);
}

ReadsUnderLoad::ReadsUnderLoad(const DirectoryStorageOptions& one, const RankShard& shard)
    : one_(one), shard_(shard), storage_(one_), cores_(UsableCores()) {}

// Reads the probe's files again until it has read for kMinSeconds: on a busy host a read at a
// time runs in spells of a fast and a slow pace (the scheduler's placement of the I/O thread),
// each tens of milliseconds long, and one pass of the probe sees one.
ReadsUnderLoad::Reads ReadsUnderLoad::ReadFor(const std::function<void()>& start,
                                              const std::function<void()>& end) {
  constexpr double kMinSeconds = 0.2;
  Reads r;
  while (r.seconds < kMinSeconds) {
    const BenchDirResult b = BenchPass(storage_, one_, shard_, start, Drop::kShard);
    if (end) end();
    if (b.latencies.empty()) break;
    r.seconds += b.seconds;
    r.reads += static_cast<double>(b.latencies.size());
  }
  return r;
}

void ReadsUnderLoad::Round() {
  // The probe alone, then a busy thread on every core alone (1 ms bursts), then the probe
  // beside them, then beside one fewer: a drift of the host's speed between rounds falls on both
  // sides of each round's difference.
  const Reads alone = ReadFor({}, {});
  double idle_rate = 0, busy_rounds = 0, busy_seconds = 0;
  Reads busy;
  {
    const Spinners spin(cores_);
    uint64_t r0 = spin.Rounds();
    double t0 = MonotonicSeconds();
    std::this_thread::sleep_for(std::chrono::duration<double>(0.1));
    idle_rate = static_cast<double>(spin.Rounds() - r0) / (MonotonicSeconds() - t0);
    busy = ReadFor(
        [&] {
          r0 = spin.Rounds();
          t0 = MonotonicSeconds();
        },
        [&] {
          busy_rounds += static_cast<double>(spin.Rounds() - r0);
          busy_seconds += MonotonicSeconds() - t0;
        });
  }
  // Busy threads on every core but one: a core is free for the read, yet the scheduler does
  // not always wake it there.
  Reads partial;
  if (cores_ > 1) {
    const Spinners some(cores_ - 1);
    partial = ReadFor({}, {});
  }
  if (busy.reads == 0 || alone.reads == 0 || idle_rate <= 0 || busy_seconds <= 0) return;
  ++rounds_;
  partial_reads_ += partial.reads;
  partial_time_ += partial.seconds;
  // The cores' time the spinners lost while the probe read.
  lost_ += cores_ * std::max(0.0, busy_seconds - busy_rounds / idle_rate);
  busy_reads_ += busy.reads;
  busy_time_ += busy.seconds;
  alone_reads_ += alone.reads;
  alone_time_ += alone.seconds;
}

void ReadsUnderLoad::Apply(double& cpu_per_read_busy, SimulatedStorageOptions& m) const {
  if (rounds_ == 0) return;
  cpu_per_read_busy = lost_ / busy_reads_;
  m.read_wait_busy_seconds = std::max(0.0, busy_time_ / busy_reads_ - alone_time_ / alone_reads_);
  if (partial_reads_ > 0) {
    m.read_wait_partial_seconds =
        std::max(0.0, partial_time_ / partial_reads_ - alone_time_ / alone_reads_);
  }
  m.host_per_read_seconds = std::max(0.0, cpu_per_read_busy - m.cpu_per_read_seconds);
}

void MeasureReadsUnderLoad(const DirectoryStorageOptions& one, const RankShard& shard,
                           DirectoryFit& f, int rounds) {
  ReadsUnderLoad load(one, shard);
  const double start = MonotonicSeconds();
  for (int k = 0; k < rounds; ++k) {
    // A slow directory (a read at a time taking milliseconds) stops after two rounds and 10 s.
    if (k >= 2 && MonotonicSeconds() - start > 10) break;
    load.Round();
  }
  load.Apply(f.cpu_per_read_busy, f.model);
  // Where no round counted, host_per_read is still cpu_per_read_busy (0) less the probe's own.
  f.model.host_per_read_seconds = std::max(0.0, f.cpu_per_read_busy - f.model.cpu_per_read_seconds);
}

DirectoryStorageOptions OneAtATime(DirectoryStorageOptions o) {
  o.io.io_depth = 1;
  o.io.io_threads = 1;
  return o;
}

DirectoryPace::DirectoryPace(const DirectoryStorageOptions& o, uint64_t probe_files)
    : one_(OneAtATime(o)), storage_(one_) {
  const uint64_t probes = std::max<uint64_t>(probe_files, 1);
  ranks_ = std::max<uint64_t>(1, (storage_.num_samples() + probes - 1) / probes);
}

const BenchDirResult& DirectoryPace::Pass(bool every_file) {
  const RankShard shard{static_cast<uint32_t>(passes_.size() % ranks_),
                        static_cast<uint32_t>(ranks_)};
  passes_.push_back(
      BenchPass(storage_, one_, shard, {}, every_file ? Drop::kEveryFile : Drop::kShard));
  return passes_.back();
}

BenchDirResult DirectoryPace::Pooled() const {
  return CombineClients(passes_, Passes::kOneAfterAnother);
}

double DirectoryPace::Seconds() const {
  double s = 0;
  for (const BenchDirResult& p : passes_) s += p.seconds;
  return s;
}

BenchDirResult CombineClients(const std::vector<BenchDirResult>& clients, Passes passes) {
  BenchDirResult all = clients.front();
  all.bytes = all.skipped = 0;
  all.seconds = 0;
  all.latencies.clear();
  double cpu = 0;
  for (const BenchDirResult& c : clients) {
    all.bytes += c.bytes;
    all.skipped += c.skipped;
    all.seconds =
        passes == Passes::kTogether ? std::max(all.seconds, c.seconds) : all.seconds + c.seconds;
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
