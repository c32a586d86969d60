#include "sim/host_model.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "pipeline/preprocess.h"
#include "storage/content.h"

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

}  // namespace

HostModel HostModel::Measure(uint64_t sample_bytes) {
  HostModel h;
  h.cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t n = std::clamp<uint64_t>(sample_bytes, 4096, 16 << 20);
  std::vector<std::byte> raw(n), copy(n);
  std::vector<float> floats(n);
  const uint64_t key = ContentKey(1, 1);
  FillContent(key, raw, 7);
  volatile bool ok = true;
  const double normalize = TimePerCall([&] { NormalizeBytes(raw.data(), n, floats.data()); }, 0.03);
  const double verify = TimePerCall([&] { ok = ok && MatchesContent(key, raw, 7); }, 0.03);
  const double copy_s = TimePerCall([&] { std::memcpy(copy.data(), raw.data(), n); }, 0.02);
  const double fill = TimePerCall([&] { FillContent(key, copy, 7); }, 0.02);
  h.receive_bytes_per_second = n / fill;
  // The calibrated CPU work of loader.preprocess.cost, as it runs: how long 1 ms takes.
  const CpuBurner& burner = CpuBurner::Get();
  volatile uint64_t sink = 0;
  // The median of 41 runs: a preempted run (a shared machine) must not set the rate.
  std::vector<double> burns;
  for (int i = 0; i < 41; ++i) {
    const double t0 = MonotonicSeconds();
    sink = sink + burner.Burn(1e-3, 3 + i);
    burns.push_back(MonotonicSeconds() - t0);
  }
  std::nth_element(burns.begin(), burns.begin() + 20, burns.end());
  h.burn_seconds_per_second = burns[20] / 1e-3;
  // The same with every core burning at once: virtual cores that share a physical one (or a
  // busy host) run slower together than alone.
  if (h.cores > 1) {
    std::vector<double> each(h.cores, 0);
    std::vector<std::thread> threads;
    for (uint32_t c = 0; c < h.cores; ++c) {
      threads.emplace_back([&burner, &each, c] {
        std::vector<double> mine;
        volatile uint64_t local = 0;
        for (int i = 0; i < 21; ++i) {
          const double t0 = MonotonicSeconds();
          local = local + burner.Burn(1e-3, 100 + i);
          mine.push_back(MonotonicSeconds() - t0);
        }
        std::nth_element(mine.begin(), mine.begin() + 10, mine.end());
        each[c] = mine[10];
      });
    }
    for (auto& t : threads) t.join();
    std::sort(each.begin(), each.end());
    h.burn_all_cores_seconds_per_second =
        std::max(h.burn_seconds_per_second, each[each.size() / 2] / 1e-3);
  } else {
    h.burn_all_cores_seconds_per_second = h.burn_seconds_per_second;
  }
  // Copies into never-touched memory (a RAM tier filling its arena): page faults included.
  {
    const uint64_t region = 64ULL << 20;
    std::vector<double> rates;
    for (int i = 0; i < 3; ++i) {
      void* p = mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) break;
      madvise(p, region, MADV_HUGEPAGE);  // as the RAM tier's arena (cache/memory_tier.cc)
      auto* dst = static_cast<std::byte*>(p);
      const double t0 = MonotonicSeconds();
      for (uint64_t off = 0; off + n <= region; off += n) std::memcpy(dst + off, raw.data(), n);
      rates.push_back(static_cast<double>(region / n * n) / (MonotonicSeconds() - t0));
      munmap(p, region);
    }
    std::sort(rates.begin(), rates.end());
    h.fresh_write_bytes_per_second = rates.empty() ? 1e9 : rates[rates.size() / 2];
  }
  h.normalize_bytes_per_second = n / normalize;
  h.verify_bytes_per_second = n / verify;
  h.memcpy_bytes_per_second = n / copy_s;
  return h;
}

HostModel HostModel::Mean(const HostModel& a, const HostModel& b) {
  HostModel m = a;
  auto mean = [](double x, double y) { return (x + y) / 2; };
  m.normalize_bytes_per_second = mean(a.normalize_bytes_per_second, b.normalize_bytes_per_second);
  m.verify_bytes_per_second = mean(a.verify_bytes_per_second, b.verify_bytes_per_second);
  m.memcpy_bytes_per_second = mean(a.memcpy_bytes_per_second, b.memcpy_bytes_per_second);
  m.burn_seconds_per_second = mean(a.burn_seconds_per_second, b.burn_seconds_per_second);
  m.burn_all_cores_seconds_per_second =
      mean(a.burn_all_cores_seconds_per_second, b.burn_all_cores_seconds_per_second);
  m.fresh_write_bytes_per_second =
      mean(a.fresh_write_bytes_per_second, b.fresh_write_bytes_per_second);
  m.receive_bytes_per_second = mean(a.receive_bytes_per_second, b.receive_bytes_per_second);
  return m;
}

}  // namespace stallscope
