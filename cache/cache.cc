#include "cache/cache.h"

#include <fmt/format.h>

#include "cache/disk_tier.h"
#include "cache/memory_tier.h"

namespace stallscope {

Cache::Cache(const Options& o) {
  for (size_t i = 0; i < o.tiers.size(); ++i) {
    const TierOptions& t = o.tiers[i];
    const std::string key = fmt::format("cache.tiers.{}", i);
    if (t.capacity == 0) throw CacheError(key + ".capacity: must be a positive size");
    if (t.policy == PolicyKind::kBelady && !o.oracle) {
      throw CacheError(key + ".policy: belady needs the sampler's future order (an oracle)");
    }
    if (t.kind == TierKind::kMemory) {
      try {
        tiers_.push_back(std::make_unique<MemoryTier>(t.capacity, t.policy, o.num_samples,
                                                      o.max_sample_bytes, o.oracle));
      } catch (const CacheError& e) {
        throw CacheError(key + ".capacity: " + e.what());
      }
    } else if (t.kind == TierKind::kDisk) {
      DiskTierOptions d;
      d.tier = t;
      d.num_ids = o.num_samples;
      d.max_item_bytes = o.max_sample_bytes;
      d.oracle = o.oracle;
      d.fingerprint = o.dataset_fingerprint;
      d.read_depth = o.io_depth;
      d.quiet = o.quiet;
      d.key = key;
      tiers_.push_back(std::make_unique<DiskTier>(d));
    } else {
      throw CacheError(fmt::format("{}.kind: a {} tier cannot be built here (memory | disk)", key,
                                   NameOf(t.kind)));
    }
  }
}

Cache::~Cache() = default;

void CheckTier(const TierOptions& t, const std::string& key) {
  if (t.capacity == 0) throw CacheError(key + ".capacity: must be a positive size");
  if (t.kind == TierKind::kDisk) DiskTier::CheckPath(t.path, t.capacity, key);
}

Cache::Found Cache::Lookup(uint64_t id, std::byte* dst, uint64_t now) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (tiers_[i]->Lookup(id, dst, now) > 0) return {static_cast<int>(i), tiers_[i]->is_async()};
  }
  return {};
}

void Cache::ReadAsync(int tier, std::span<const ReadRequest> requests, ReadCallback* callback) {
  tiers_[tier]->ReadAsync(requests, callback);
}

void Cache::Admit(uint64_t id, std::span<const std::byte> data, uint64_t now, size_t upto) {
  for (size_t i = 0; i < upto && i < tiers_.size(); ++i) tiers_[i]->Admit(id, data, now);
}

void Cache::Flush() {
  for (auto& t : tiers_) t->Flush();
}

std::vector<TierStats> Cache::Stats() const {
  std::vector<TierStats> out;
  for (const auto& t : tiers_) out.push_back(t->Stats());
  return out;
}

std::string Cache::Describe() const {
  if (tiers_.empty()) return "no cache";
  std::string s;
  for (const auto& t : tiers_) s += (s.empty() ? "" : " -> ") + t->Describe();
  return s;
}

}  // namespace stallscope
