#include "cache/cache.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstring>

namespace stallscope {
namespace {

// Fill-once RAM tier: one bump-allocated arena of exactly `capacity` bytes (virtual memory
// reserved at start, pages committed as entries are written) and a per-sample index.
// An index entry is 0 (absent), kClaimed (being written by one admitter) or offset + 1.
class FillOnceMemoryTier final : public CacheTier {
 public:
  FillOnceMemoryTier(uint64_t capacity, uint64_t num_samples)
      : capacity_(capacity),
        index_(std::make_unique<std::atomic<uint64_t>[]>(num_samples)),
        sizes_(std::make_unique<uint64_t[]>(num_samples)),
        num_samples_(num_samples) {
    if (capacity_ > 0) {
      void* p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) {
        throw CacheError(fmt::format("cannot reserve {} bytes for the memory tier", capacity_));
      }
      arena_ = static_cast<std::byte*>(p);
    }
  }
  ~FillOnceMemoryTier() override {
    if (arena_) munmap(arena_, capacity_);
  }

  uint64_t Lookup(uint64_t sample, std::byte* dst) override {
    const uint64_t entry = index_[sample].load(std::memory_order_acquire);
    if (entry == 0 || entry == kClaimed) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    const uint64_t size = sizes_[sample];
    std::memcpy(dst, arena_ + (entry - 1), size);
    hits_.fetch_add(1, std::memory_order_relaxed);
    served_.fetch_add(size, std::memory_order_relaxed);
    return size;
  }

  void Admit(uint64_t sample, std::span<const std::byte> data) override {
    if (sample >= num_samples_ || full_.load(std::memory_order_relaxed)) return;
    uint64_t expected = 0;
    if (!index_[sample].compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel)) {
      return;  // already held or being written
    }
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used + data.size() > capacity_) {
        index_[sample].store(0, std::memory_order_release);
        // Fill-once never evicts: once a sample does not fit, stop trying (samples are
        // similar in size, and a tier that is full stays full).
        full_.store(true, std::memory_order_relaxed);
        return;
      }
    } while (!used_.compare_exchange_weak(used, used + data.size(), std::memory_order_relaxed));
    std::memcpy(arena_ + used, data.data(), data.size());
    sizes_[sample] = data.size();
    index_[sample].store(used + 1, std::memory_order_release);
  }

  TierStats Stats() const override {
    TierStats s;
    s.name = "memory";
    s.policy = "fill-once";
    s.hits = hits_.load(std::memory_order_relaxed);
    s.misses = misses_.load(std::memory_order_relaxed);
    s.bytes_served = served_.load(std::memory_order_relaxed);
    s.bytes_held = used_.load(std::memory_order_relaxed);
    s.capacity = capacity_;
    return s;
  }

 private:
  static constexpr uint64_t kClaimed = ~0ULL;

  // Constant after construction.
  const uint64_t capacity_;
  std::byte* arena_ = nullptr;
  std::unique_ptr<std::atomic<uint64_t>[]> index_;
  std::unique_ptr<uint64_t[]> sizes_;  // written before the index entry is published
  const uint64_t num_samples_;

  std::atomic<uint64_t> used_{0};
  std::atomic<bool> full_{false};
  std::atomic<uint64_t> hits_{0}, misses_{0}, served_{0};
};

}  // namespace

std::unique_ptr<CacheTier> MakeFillOnceMemoryTier(uint64_t capacity, uint64_t num_samples) {
  return std::make_unique<FillOnceMemoryTier>(capacity, num_samples);
}

Cache::Cache(const std::vector<TierOptions>& tiers, uint64_t num_samples) {
  for (size_t i = 0; i < tiers.size(); ++i) {
    const TierOptions& t = tiers[i];
    if (t.kind != "memory") {
      throw CacheError(fmt::format(
          "cache.tiers.{}.kind: '{}' tiers are not in this build yet (the tiered-cache issue "
          "adds them); use kind: memory",
          i, t.kind));
    }
    if (t.policy != "fill-once") {
      throw CacheError(fmt::format(
          "cache.tiers.{}.policy: '{}' is not in this build yet (the tiered-cache issue adds "
          "lru, fifo, s3-fifo and belady); use fill-once",
          i, t.policy));
    }
    tiers_.push_back(MakeFillOnceMemoryTier(t.capacity, num_samples));
  }
}

Cache::~Cache() = default;

int Cache::Lookup(uint64_t sample, std::byte* dst) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (tiers_[i]->Lookup(sample, dst) > 0) return static_cast<int>(i);
  }
  return -1;
}

void Cache::Admit(uint64_t sample, std::span<const std::byte> data) {
  for (auto& t : tiers_) t->Admit(sample, data);
}

std::vector<TierStats> Cache::Stats() const {
  std::vector<TierStats> out;
  for (const auto& t : tiers_) out.push_back(t->Stats());
  return out;
}

std::string Cache::Describe() const {
  if (tiers_.empty()) return "no cache";
  std::string s;
  for (const auto& t : tiers_) {
    const TierStats st = t->Stats();
    if (!s.empty()) s += " → ";
    s += fmt::format("{} {:.1f} MiB {}", st.name, static_cast<double>(st.capacity) / (1 << 20),
                     st.policy);
  }
  return s;
}

}  // namespace stallscope
