// SimTier: one cache tier of one simulated node — the real tier's eviction policy objects in
// the real tier's layout (a memory tier's shards and block rounding, a disk tier's 4 KiB
// blocks), without the bytes, so the simulator's hit ratios are exact, not estimated.
//
// Thread-safety: one thread (the simulation's).
#ifndef STALLSCOPE_SIM_SIM_TIER_H_
#define STALLSCOPE_SIM_SIM_TIER_H_

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/align.h"
#include "cache/cache.h"
#include "cache/memory_tier.h"
#include "cache/policy.h"
#include "sim/simulator.h"

namespace stallscope {

// One cache tier of one node: the real tier's policy objects in the real tier's layout,
// without the bytes.
class SimTier {
 public:
  SimTier(const TierOptions& o, uint64_t num_ids, uint64_t max_item_bytes,
          const AccessOracle* oracle, KeptDisk* persistent)
      : kind_(NameOf(o.kind)), policy_name_(NameOf(o.policy)), capacity_(o.capacity) {
    if (o.kind == TierKind::kMemory) {
      block_ = MemoryTier::BlockBytes(max_item_bytes);
      const int shards = MemoryTier::ShardCount(o.policy);
      shift_ = std::countr_zero(static_cast<unsigned>(shards));
      const uint64_t blocks = o.capacity / block_;
      for (int s = 0; s < shards; ++s) {
        const uint64_t lo = blocks * s / shards, hi = blocks * (s + 1) / shards;
        owned_.push_back(EvictionPolicy::Make(o.policy, (hi - lo) * block_,
                                              MemoryTier::ShardIds(num_ids, shards), oracle));
        shards_.push_back(owned_.back().get());
      }
    } else {  // disk: one policy; entries charged in 4 KiB blocks
      block_ = kBlockBytes;
      if (persistent) {
        shards_.push_back(persistent->policy.get());
        kept_entries_ = &persistent->entries;
        entries_at_start_ = persistent->entries;
        evictions_at_start_ =
            persistent->policy->evictions();  // a real tier's count starts at open
      } else {
        owned_.push_back(EvictionPolicy::Make(o.policy, o.capacity, num_ids, oracle));
        shards_.push_back(owned_.back().get());
      }
    }
  }

  SimTier(SimTier&&) noexcept = default;
  SimTier(const SimTier&) = delete;
  SimTier& operator=(const SimTier&) = delete;

  bool Contains(uint64_t id) const { return Shard(id)->Contains(id >> shift_); }
  // A lookup: counts it, and on a hit tells the policy.
  bool Lookup(uint64_t id, uint64_t now) {
    EvictionPolicy* p = Shard(id);
    if (!p->Contains(id >> shift_)) {
      ++misses_;
      return false;
    }
    p->OnHit(id >> shift_, now);
    ++hits_;
    return true;
  }
  // Offers a sample; returns the ids evicted to make room (in `evicted`).
  bool Admit(uint64_t id, uint64_t bytes, uint64_t now, std::vector<uint64_t>& evicted) {
    EvictionPolicy* p = Shard(id);
    const uint64_t local = id >> shift_;
    if (bytes == 0 || p->Contains(local)) return false;
    scratch_.clear();
    if (!p->Admit(local, RoundUp(bytes, block_), now, scratch_)) return false;
    const uint64_t low = id & ((1u << shift_) - 1);
    for (uint64_t v : scratch_) evicted.push_back(v << shift_ | low);
    if (kept_entries_) *kept_entries_ = *kept_entries_ + 1 - scratch_.size();
    return true;
  }

  TierStats Stats() const {
    TierStats s;
    s.name = kind_;
    s.policy = policy_name_;
    s.hits = hits_;
    s.misses = misses_;
    s.capacity = capacity_;
    for (const EvictionPolicy* p : shards_) {
      s.evictions += p->evictions();
      s.bytes_held += p->used_bytes();
    }
    s.evictions -= evictions_at_start_;
    s.entries_at_start = entries_at_start_;
    return s;
  }
  // Evictions since the tier was built.
  uint64_t evictions() const {
    uint64_t e = 0;
    for (const EvictionPolicy* p : shards_) e += p->evictions();
    return e - evictions_at_start_;
  }

 private:
  EvictionPolicy* Shard(uint64_t id) const { return shards_[id & ((1u << shift_) - 1)]; }

  std::string kind_;
  std::string policy_name_;
  uint64_t capacity_ = 0;
  uint64_t block_ = 1;
  int shift_ = 0;
  std::vector<std::unique_ptr<EvictionPolicy>> owned_;
  std::vector<EvictionPolicy*> shards_;
  std::vector<uint64_t> scratch_;
  uint64_t hits_ = 0, misses_ = 0;
  uint64_t evictions_at_start_ = 0;
  uint64_t entries_at_start_ = 0;     // a kept disk tier's entries when this run began
  uint64_t* kept_entries_ = nullptr;  // a kept disk tier's count, kept up to date
};

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_SIM_TIER_H_
