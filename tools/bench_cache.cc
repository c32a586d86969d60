// bench_cache: the cache's speed limits, side by side in one run.
//
//   1. RAM-tier lookups on one thread (all hits), for 64 B entries (the lookup machinery:
//      shard lock, policy, block chain) and 4 KiB entries (plus the copy).
//   2. Policy replay: a sampler-generated trace (every id once per epoch, fresh shuffle per
//      epoch) through each policy alone, at half the dataset: requests/s and miss ratio after
//      the first epoch (libCacheSim reports ~20 M requests/s for its replays).
//   3. Disk tier reads (io_uring, O_DIRECT where allowed, checksum verified) of entries
//      written by the tier itself, against fio --ioengine=io_uring on the same files with the
//      same block size and depth, when fio is installed.
//
// Results go to stdout; the README records them with the date and the command line.
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "cache/disk_tier.h"
#include "cache/epoch_oracle.h"
#include "cache/memory_tier.h"
#include "cache/policy.h"
#include "pipeline/sampler.h"
#include "storage/content.h"

namespace stallscope {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void BenchLookups(uint64_t entry_bytes, const std::string& policy) {
  const uint64_t n = 100000;
  MemoryTier tier(n * entry_bytes * 2, *ValueOf(kPolicyNames, policy), n, entry_bytes, nullptr);
  std::vector<std::byte> data(entry_bytes, std::byte{1}), dst(entry_bytes);
  for (uint64_t id = 0; id < n; ++id) tier.Admit(id, data, id);
  const Sampler sampler(n, 1);
  std::vector<uint64_t> order;
  sampler.Order(0, order);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    uint64_t hits = 0;
    for (uint64_t id : order) hits += tier.Lookup(id, dst.data(), 0) > 0;
    const double rate = static_cast<double>(hits) / Since(t0);
    best = std::max(best, rate);
  }
  std::printf("1. RAM-tier lookups, %-9s %5llu B entries, 1 thread %12.0f lookups/s (%.1f GB/s)\n",
              policy.c_str(), static_cast<unsigned long long>(entry_bytes), best,
              best * entry_bytes / 1e9);
}

void BenchReplay(uint64_t n, uint64_t epochs) {
  const Sampler sampler(n, 7);
  std::vector<uint64_t> trace;
  trace.reserve(n * epochs);
  std::vector<uint64_t> order;
  for (uint64_t e = 0; e < epochs; ++e) {
    sampler.Order(e, order);
    trace.insert(trace.end(), order.begin(), order.end());
  }
  const EpochOrderOracle oracle(n, epochs,
                                [&](uint64_t e, std::vector<uint64_t>& o) { sampler.Order(e, o); });
  std::printf("2. policy replay: %llu ids x %llu epochs, capacity 50%%\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(epochs));
  for (const auto& [kind, name] : kPolicyNames) {
    auto p = EvictionPolicy::Make(kind, n / 2, n, &oracle);
    std::vector<uint64_t> evicted;
    evicted.reserve(16);
    uint64_t misses_after_first = 0;
    const auto t0 = Clock::now();
    for (uint64_t i = 0; i < trace.size(); ++i) {
      const uint64_t id = trace[i];
      if (p->Contains(id)) {
        p->OnHit(id, i);
      } else {
        evicted.clear();
        p->Admit(id, 1, i, evicted);
        misses_after_first += i >= n;
      }
    }
    const double secs = Since(t0);
    std::printf("   %-10s %12.0f requests/s   miss ratio after epoch 0: %.3f\n", name,
                trace.size() / secs, static_cast<double>(misses_after_first) / (trace.size() - n));
  }
}

class Waiter : public ReadCallback {
 public:
  void OnReadComplete(const ReadRequest&, int64_t result) override {
    std::lock_guard lock(mu_);
    ++done_;
    bad_ += result < 0;
    if (done_ >= want_) cv_.notify_all();
  }
  void Wait(uint64_t n) {
    std::unique_lock lock(mu_);
    want_ = n;
    cv_.wait(lock, [&] { return done_ >= want_; });
  }
  uint64_t bad() const { return bad_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t done_ = 0, want_ = ~0ULL, bad_ = 0;
};

void BenchDisk(const std::string& dir, uint64_t entries, uint64_t entry_bytes, uint32_t depth) {
  DiskTierOptions o{.tier = {.kind = TierKind::kDisk,
                             .path = dir,
                             .capacity = entries * entry_bytes * 2,
                             .clear = true},
                    .num_ids = entries,
                    .max_item_bytes = entry_bytes,
                    .fingerprint = "bench_cache",
                    .read_depth = depth,
                    .quiet = true};
  {
    DiskTier writer(o);
    std::vector<std::byte> data(entry_bytes);
    for (uint64_t id = 0; id < entries; ++id) {
      FillContent(ContentKey(3, id), data);
      writer.Admit(id, data, id);
      if (id % 16 == 15) writer.Flush();
    }
  }
  o.tier.clear = false;
  DiskTier tier(o);
  const uint64_t stride = (entry_bytes + 4095) / 4096 * 4096;
  auto* buf = static_cast<std::byte*>(std::aligned_alloc(4096, stride * entries));
  std::vector<ReadRequest> reqs;
  for (uint64_t id = 0; id < entries; ++id) reqs.push_back({id, buf + id * stride, id});
  const bool have_fio = std::system("command -v fio >/dev/null 2>&1") == 0;
  const std::string fio = fmt::format(
      "fio --name=cachedir --opendir={} --rw=read --bs={} --ioengine=io_uring --iodepth={} "
      "--direct={} --file_service_type=roundrobin --group_reporting --output-format=terse "
      "--terse-version=3 2>/dev/null | grep '^3;' | cut -d';' -f7",
      dir, stride, depth, tier.direct_io() ? 1 : 0);
  // Alternate the two, three times each, so neither profits from the other's warm-up (the
  // disk under a VM may sit on a host cache); report medians.
  std::vector<double> ours, theirs;
  uint64_t bad = 0;
  for (int rep = 0; rep < 3; ++rep) {
    for (uint64_t id = 0; id < entries; ++id) tier.Lookup(id, nullptr, id);
    Waiter w;
    const auto t0 = Clock::now();
    tier.ReadAsync(reqs, &w);
    w.Wait(entries);
    ours.push_back(entries * entry_bytes / Since(t0) / 1e6);
    bad += w.bad();
    if (!have_fio) continue;
    FILE* p = popen(fio.c_str(), "r");
    double kib = 0;  // terse field 7: read bandwidth in KiB/s
    if (p) {
      if (std::fscanf(p, "%lf", &kib) != 1) kib = 0;
      pclose(p);
    }
    theirs.push_back(kib * 1024 / 1e6);
  }
  std::free(buf);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  std::printf(
      "3. disk tier reads: %llu x %llu KiB, depth %u, %s, checksummed: %8.1f MB/s%s\n",
      static_cast<unsigned long long>(entries), static_cast<unsigned long long>(entry_bytes >> 10),
      depth, tier.direct_io() ? "O_DIRECT" : "buffered", median(ours), bad ? " (READ ERRORS)" : "");
  if (!have_fio) {
    std::printf("   fio: not installed (apt-get install fio), no comparison\n");
    return;
  }
  std::printf("   fio --ioengine=io_uring, same files, bs %llu, depth %u:        %8.1f MB/s\n",
              static_cast<unsigned long long>(stride), depth, median(theirs));
  std::printf("   disk tier / fio (medians of 3, alternated): %.2f\n",
              median(ours) / median(theirs));
}

}  // namespace
}  // namespace stallscope

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string dir = argc > 1 ? argv[1] : "/tmp/stallscope-bench-cache";
  const std::string only = argc > 2 ? argv[2] : "";
  if (only.empty() || only == "lookups") {
    for (const char* policy : {"fill-once", "lru"}) {
      stallscope::BenchLookups(64, policy);
      stallscope::BenchLookups(4096, policy);
    }
  }
  if (only.empty() || only == "replay") {
    stallscope::BenchReplay(100000, 4);
    stallscope::BenchReplay(1000000, 4);
  }
  if (only.empty() || only == "disk") stallscope::BenchDisk(dir, 512, 1 << 20, 64);
  return 0;
}
