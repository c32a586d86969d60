#include "cache/memory_tier.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace stallscope {

namespace {
constexpr int kShards = 16;
}  // namespace

MemoryTier::MemoryTier(uint64_t capacity, PolicyKind policy, uint64_t num_ids,
                       uint64_t max_item_bytes, const AccessOracle* oracle)
    : capacity_(capacity), policy_(policy), lock_free_hits_(policy == PolicyKind::kFillOnce) {
  block_ = BlockBytes(max_item_bytes);
  const int shards = ShardCount(policy);
  // No more blocks than every id's largest item takes: a tier larger than the dataset holds
  // the dataset and evicts nothing, as it would at its full size, while the arena, the block
  // lists and the policies stay the size of what the run can cache (a 1 TiB tier over 48 MiB
  // of samples took 12 GB of block lists and 30 s to set up).
  const uint64_t per_item = std::max<uint64_t>((max_item_bytes + block_ - 1) / block_, 1);
  const uint64_t blocks =
      std::min(capacity / block_, ShardIds(num_ids, shards) * shards * per_item);
  if (blocks >= kNoBlock) {
    throw CacheError(fmt::format("a memory tier of {} blocks of {} bytes: at most {} blocks",
                                 blocks, block_, kNoBlock - 1));
  }
  shard_shift_ = std::countr_zero(static_cast<unsigned>(shards));
  arena_bytes_ = blocks * block_;
  if (arena_bytes_ > 0) {
    void* p = mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      throw CacheError(fmt::format("cannot reserve {} bytes for a memory tier", arena_bytes_));
    }
    arena_ = static_cast<std::byte*>(p);
    // Transparent huge pages where the kernel offers them: the arena fills in 2 MiB faults
    // instead of 4 KiB ones (on a VM a 4 KiB first-touch fault can cost ~15 us, which capped
    // a filling tier at ~250 MB/s). Advisory: without THP nothing changes.
    madvise(p, arena_bytes_, MADV_HUGEPAGE);
  }
  first_block_ = std::make_unique<std::atomic<uint32_t>[]>(num_ids);
  for (uint64_t i = 0; i < num_ids; ++i) first_block_[i].store(kNoBlock, std::memory_order_relaxed);
  size_.assign(num_ids, 0);
  next_block_.assign(blocks, kNoBlock);
  for (int s = 0; s < shards; ++s) {
    auto shard = std::make_unique<Shard>();
    // Shard s owns blocks [lo, hi): an even split.
    const uint64_t lo = blocks * s / shards, hi = blocks * (s + 1) / shards;
    shard->policy =
        EvictionPolicy::Make(policy, (hi - lo) * block_, ShardIds(num_ids, shards), oracle);
    if (!shard->policy) throw CacheError("belady needs the sampler's future order (an oracle)");
    shard->free_blocks.reserve(hi - lo);
    for (uint64_t b = hi; b > lo; --b) shard->free_blocks.push_back(static_cast<uint32_t>(b - 1));
    shard->evicted.reserve(hi - lo + 1);
    shards_.push_back(std::move(shard));
  }
}

uint64_t MemoryTier::BlockBytes(uint64_t max_item_bytes) {
  return std::clamp<uint64_t>(std::bit_floor(std::max<uint64_t>(max_item_bytes / 32, 1)), 256,
                              65536);
}

int MemoryTier::ShardCount(PolicyKind policy) {
  return policy == PolicyKind::kBelady ? 1 : kShards;
}

uint64_t MemoryTier::ShardIds(uint64_t num_ids, int shards) {
  return (num_ids + shards - 1) / shards;
}

MemoryTier::~MemoryTier() {
  if (arena_) munmap(arena_, arena_bytes_);
}

void MemoryTier::CopyOut(uint32_t b, uint64_t size, std::byte* dst) const {
  while (size > 0) {
    const uint64_t n = std::min(size, block_);
    std::memcpy(dst, arena_ + b * block_, n);
    dst += n;
    size -= n;
    b = next_block_[b];
  }
}

uint64_t MemoryTier::Lookup(uint64_t id, std::byte* dst, uint64_t now) {
  Shard& shard = ShardOf(id);
  if (lock_free_hits_) {
    const uint32_t b = first_block_[id].load(std::memory_order_acquire);
    if (b == kNoBlock) {
      shard.misses.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    const uint64_t size = size_[id];  // written before the release that published b
    CopyOut(b, size, dst);
    shard.hits.fetch_add(1, std::memory_order_relaxed);
    return size;
  }
  std::lock_guard lock(shard.mu);
  if (!shard.policy->Contains(id >> shard_shift_)) {
    shard.misses.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint64_t size = size_[id];
  CopyOut(first_block_[id].load(std::memory_order_relaxed), size, dst);
  shard.policy->OnHit(id >> shard_shift_, now);
  shard.hits.fetch_add(1, std::memory_order_relaxed);
  return size;
}

void MemoryTier::FreeChain(Shard& shard, uint64_t id) {
  for (uint32_t b = first_block_[id].load(std::memory_order_relaxed); b != kNoBlock;) {
    const uint32_t next = next_block_[b];
    shard.free_blocks.push_back(b);
    b = next;
  }
  first_block_[id].store(kNoBlock, std::memory_order_relaxed);
  size_[id] = 0;
}

void MemoryTier::Admit(uint64_t id, std::span<const std::byte> data, uint64_t now) {
  if (data.empty()) return;
  Shard& shard = ShardOf(id);
  std::lock_guard lock(shard.mu);
  const uint64_t local = id >> shard_shift_;
  if (shard.policy->Contains(local)) return;
  const uint64_t blocks = (data.size() + block_ - 1) / block_;
  shard.evicted.clear();
  if (!shard.policy->Admit(local, blocks * block_, now, shard.evicted)) return;
  const uint64_t low_bits = id & (shards_.size() - 1);
  for (uint64_t v : shard.evicted) FreeChain(shard, v << shard_shift_ | low_bits);
  // The policy's byte accounting equals this shard's blocks, so the blocks are there.
  uint32_t head = kNoBlock;
  uint32_t* link = &head;
  const std::byte* src = data.data();
  uint64_t left = data.size();
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint32_t b = shard.free_blocks.back();
    shard.free_blocks.pop_back();
    *link = b;
    link = &next_block_[b];
    const uint64_t n = std::min(left, block_);
    std::memcpy(arena_ + b * block_, src, n);
    src += n;
    left -= n;
  }
  *link = kNoBlock;
  size_[id] = data.size();
  first_block_[id].store(head, std::memory_order_release);  // publish: bytes are in place
}

TierStats MemoryTier::Stats() const {
  TierStats s;
  s.name = "memory";
  s.policy = NameOf(policy_);
  s.capacity = capacity_;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    s.hits += shard->hits.load(std::memory_order_relaxed);
    s.misses += shard->misses.load(std::memory_order_relaxed);
    s.evictions += shard->policy->evictions();
    s.bytes_held += shard->policy->used_bytes();
  }
  return s;
}

std::string MemoryTier::Describe() const {
  return fmt::format("memory {:.1f} MiB {}", static_cast<double>(capacity_) / (1 << 20),
                     NameOf(policy_));
}

}  // namespace stallscope
