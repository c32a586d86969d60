// MemoryTier: a RAM cache tier with any eviction policy and a hard byte bound.
//
// The tier reserves one arena of `capacity` bytes up front (virtual memory; pages are
// committed as they are written) cut into fixed blocks; a sample occupies a chain of blocks,
// so eviction never fragments the arena and admission allocates nothing. Block size is the
// largest power of two at most 1/32 of the largest sample (256 B .. 64 KiB), so rounding
// wastes under 3% of the capacity. Ids are spread over 16 shards (one for belady, whose
// decisions are global), each with its own lock, policy (over its own ids only, so per-id
// policy state is not repeated per shard), block free list and counters, so
// concurrent lookups of different shards never contend. With fill-once nothing is ever
// evicted, so a hit needs no lock at all: an entry is published (release) only after its
// bytes are in place, and its blocks are never reused.
//
// Thread-safety: all methods may be called concurrently.
#ifndef STALLSCOPE_CACHE_MEMORY_TIER_H_
#define STALLSCOPE_CACHE_MEMORY_TIER_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "cache/cache.h"

namespace stallscope {

class MemoryTier final : public CacheTier {
 public:
  // Throws CacheError when the policy is unknown or the arena cannot be reserved.
  MemoryTier(uint64_t capacity, PolicyKind policy, uint64_t num_ids, uint64_t max_item_bytes,
             const AccessOracle* oracle);
  ~MemoryTier() override;

  uint64_t Lookup(uint64_t id, std::byte* dst, uint64_t now) override;
  void Admit(uint64_t id, std::span<const std::byte> data, uint64_t now) override;
  TierStats Stats() const override;
  std::string Describe() const override;
  uint64_t block_bytes() const { return block_; }
  // The arena's address space: the capacity's whole blocks, at most what every id's largest
  // item takes.
  uint64_t reserved_bytes() const { return arena_bytes_; }

  // The tier's geometry, shared with the simulator's model of it (pipeline/simulator.cc):
  // the block size for a largest sample of `max_item_bytes`; the number of shards (a power of
  // two; one for belady, whose decisions are global); the ids each shard's policy knows.
  // Shard s owns ids with id % shards == s and knows id as id / shards; it owns an even split
  // of the whole blocks.
  static uint64_t BlockBytes(uint64_t max_item_bytes);
  static int ShardCount(PolicyKind policy);
  static uint64_t ShardIds(uint64_t num_ids, int shards);

 private:
  struct Shard {
    std::mutex mu;
    // Guarded by mu.
    std::unique_ptr<EvictionPolicy> policy;
    std::vector<uint32_t> free_blocks;
    std::vector<uint64_t> evicted;  // scratch, reserved
    // Relaxed atomics: bumped under mu, or without it on the fill-once hit path.
    std::atomic<uint64_t> hits{0}, misses{0};
  };
  static constexpr uint32_t kNoBlock = ~0u;

  Shard& ShardOf(uint64_t id) { return *shards_[id & (shards_.size() - 1)]; }
  void FreeChain(Shard& shard, uint64_t id);
  void CopyOut(uint32_t first_block, uint64_t size, std::byte* dst) const;

  // Constant after construction.
  const uint64_t capacity_;
  const PolicyKind policy_;
  const bool lock_free_hits_;  // fill-once: entries are never evicted
  uint64_t block_ = 0;
  int shard_shift_ = 0;  // log2 of the shard count: an id's index within its shard
  std::byte* arena_ = nullptr;
  uint64_t arena_bytes_ = 0;
  std::vector<std::unique_ptr<Shard>> shards_;

  // Per id / per block; an id's entries are guarded by its shard's mutex, and so are the
  // blocks on that shard's free list and chains.
  std::unique_ptr<std::atomic<uint32_t>[]> first_block_;
  std::vector<uint64_t> size_;
  std::vector<uint32_t> next_block_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_CACHE_MEMORY_TIER_H_
