#include "sim/host_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/cores.h"
#include "pipeline/preprocess.h"
#include "storage/content.h"
#include "storage/generate.h"
#include "storage/jpeg.h"

namespace stallscope {
namespace {

// Runs `work` until it has taken at least `min_seconds`; returns the seconds per call.
template <typename F>
double TimePerCall(F work, double min_seconds) {
  work();  // warm: page faults, caches
  uint64_t calls = 0;
  const double t0 = MonotonicSeconds();
  double t = t0;
  do {
    work();
    ++calls;
    t = MonotonicSeconds();
  } while (t - t0 < min_seconds);
  return (t - t0) / calls;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// How long (wall) 1 ms of loader.preprocess.cost takes: the median of `runs` (a preempted run
// must not set the rate). The cost is the thread's CPU time (CpuBurner), so this is 1 plus the
// burner's clock reads, more where the host steals the core.
double BurnFactor(int runs, int salt) {
  const CpuBurner& burner = CpuBurner::Get();
  volatile uint64_t sink = 0;
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const double t0 = MonotonicSeconds();
    sink = sink + burner.Burn(1e-3, salt + i);
    t.push_back(MonotonicSeconds() - t0);
  }
  return Median(t) / 1e-3;
}

// The same with every core burning at once: a busy host (other processes, steal) stretches
// CPU time into more wall time. (Virtual cores that share a physical one no longer slow the
// cost: it is CPU time, however fast the core runs.)
double BusyBurnFactor(uint32_t cores, double alone) {
  if (cores <= 1) return alone;
  std::vector<double> each(cores, 0);
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < cores; ++c) {
    threads.emplace_back([&each, c] { each[c] = BurnFactor(21, 100); });
  }
  for (auto& t : threads) t.join();
  return std::max(alone, Median(each));
}

// Where a worker writes its output: one row after another of a staging slot far larger than
// the caches (a batch), so each write misses the cache as the pipeline's do. Rows of `row`
// floats at successive offsets of a 64 MiB region, back to the start when full.
class StagedRows {
 public:
  explicit StagedRows(uint64_t row) : row_(row), region_(std::max<uint64_t>(row, 16ULL << 20)) {}
  float* Next() {
    if (at_ + row_ > region_.size()) at_ = 0;
    float* p = region_.data() + at_;
    at_ += row_;
    return p;
  }

 private:
  uint64_t row_, at_ = 0;
  std::vector<float> region_;
};

// Copies into never-touched memory (a RAM tier filling its arena): page faults included.
double FreshWriteRate(const std::vector<std::byte>& raw) {
  const uint64_t n = raw.size();
  const uint64_t region = 64ULL << 20;
  void* p = mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1e9;
  madvise(p, region, MADV_HUGEPAGE);  // as the RAM tier's arena (cache/memory_tier.cc)
  auto* dst = static_cast<std::byte*>(p);
  const double t0 = MonotonicSeconds();
  for (uint64_t off = 0; off + n <= region; off += n) std::memcpy(dst + off, raw.data(), n);
  const double rate = static_cast<double>(region / n * n) / (MonotonicSeconds() - t0);
  munmap(p, region);
  return rate;
}

// One copy far larger than the caches between two buffers already faulted in (a checkpoint's
// snapshot of the emulated device's state into its pinned buffer): the memory's copy speed.
double LargeCopyRate() {
  constexpr uint64_t kBytes = 64ULL << 20;
  std::vector<std::byte> from(kBytes, std::byte{1}), to(kBytes, std::byte{2});
  double best = 0;
  for (int k = 0; k < 3; ++k) {
    const double t0 = MonotonicSeconds();
    std::memcpy(to.data(), from.data(), kBytes);
    best = std::max(best, static_cast<double>(kBytes) / (MonotonicSeconds() - t0));
  }
  return best;
}

}  // namespace

HostMeasurement MeasureHost(uint64_t sample_bytes, uint32_t image_size, int trials) {
  HostMeasurement m;
  m.trials = std::max(trials, 1);
  NodeOptions& h = m.node;
  h.cores = UsableCores();
  h.nic = 1e12;
  const uint64_t n = std::clamp<uint64_t>(sample_bytes, 4096, 16 << 20);
  std::vector<std::byte> raw(n), copy(n);
  StagedRows floats(n);
  const uint64_t key = ContentKey(1, 1);
  FillContent(key, raw, 7);
  const int side = static_cast<int>(std::max<uint32_t>(image_size, 8) * 256 / 224);
  const std::vector<std::byte> jpeg = SampleJpeg(3, key, side, side, 90);
  JpegDecoder decoder;
  RgbImage scratch;
  StagedRows pixels(JpegSampleFloats(static_cast<int>(image_size)));
  StagedRows crops((JpegSampleFloats(static_cast<int>(image_size)) + 3) / 4);  // uint8 pixels
  volatile bool ok = true;
  std::map<std::string, std::vector<double>> runs;
  for (int t = 0; t < m.trials; ++t) {
    runs["normalize"].push_back(
        n / TimePerCall([&] { NormalizeBytes(raw.data(), n, floats.Next()); }, 0.01));
    runs["verify"].push_back(n /
                             TimePerCall([&] { ok = ok && MatchesContent(key, raw, 7); }, 0.01));
    runs["memcpy"].push_back(n /
                             TimePerCall([&] { std::memcpy(copy.data(), raw.data(), n); }, 0.005));
    // Landing a read's bytes: the simulated storage generates them on the receiving thread.
    runs["receive"].push_back(n / TimePerCall([&] { FillContent(key, copy, 7); }, 0.005));
    runs["jpeg_decode"].push_back(
        jpeg.size() / TimePerCall(
                          [&] {
                            ok = ok && DecodeJpegSample(decoder, scratch, jpeg.data(), jpeg.size(),
                                                        image_size, pixels.Next(), nullptr);
                          },
                          0.01));
    runs["jpeg_decode_device"].push_back(
        jpeg.size() / TimePerCall(
                          [&] {
                            ok = ok && DecodeJpegCrop(
                                           decoder, scratch, jpeg.data(), jpeg.size(), image_size,
                                           reinterpret_cast<uint8_t*>(crops.Next()), nullptr);
                          },
                          0.01));
    runs["fill"].push_back(FreshWriteRate(raw));
    runs["snapshot"].push_back(LargeCopyRate());
    const double alone = BurnFactor(15, 3 + t);
    runs["cost_factor"].push_back(alone);
    runs["cost_factor_busy"].push_back(BusyBurnFactor(h.cores, alone));
  }
  for (const NodeRate& r : kNodeRates) {
    const auto it = runs.find(r.key);
    if (it == runs.end()) continue;
    const double med = Median(it->second);
    h.*(r.field) = med;
    const auto [lo, hi] = std::minmax_element(it->second.begin(), it->second.end());
    m.spread[r.key] = med > 0 ? (*hi - *lo) / med : 0;
  }
  h.cost_factor_busy = std::max(h.cost_factor_busy, h.cost_factor);
  h.source = "measured on this host, " + UtcNow();
  return m;
}

NodeOptions MeanNode(const NodeOptions& a, const NodeOptions& b) {
  NodeOptions m = a;
  for (const NodeRate& r : kNodeRates) m.*(r.field) = (a.*(r.field) + b.*(r.field)) / 2;
  return m;
}

std::string UtcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace stallscope
