#include "cache/policy.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace stallscope {
namespace {

// A zeroed array, its pages mapped up front (MAP_POPULATE): a simulated cluster holds one per
// node over every sample id and looks ids up all over it, so every page is touched anyway;
// faulting them in one at a time — a read mapping the zero page, then a write copying it —
// doubled the event loop's time (tools/bench_simulator, 1,024 GPUs: 2.3 s → 4.6 s).
template <typename T>
class ZeroedArray {
 public:
  explicit ZeroedArray(uint64_t n) : bytes_(n * sizeof(T)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
  }
  ~ZeroedArray() { munmap(data_, bytes_); }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  T& operator[](uint64_t i) { return data_[i]; }
  const T& operator[](uint64_t i) const { return data_[i]; }

 private:
  uint64_t bytes_;
  T* data_ = nullptr;
};

class IdLists {
 public:
  IdLists(uint64_t num_ids, int lists)
      : base_(static_cast<uint32_t>(num_ids)), nodes_(num_ids + lists) {
    for (int k = 0; k < lists; ++k) nodes_[base_ + k].prev = nodes_[base_ + k].next = base_ + k;
  }
  bool empty(int k) const { return nodes_[base_ + k].next == base_ + k; }
  uint32_t back(int k) const { return nodes_[base_ + k].prev; }  // the oldest
  void PushFront(int k, uint32_t id) {
    const uint32_t s = base_ + k, first = nodes_[s].next;
    nodes_[id].prev = s;
    nodes_[id].next = first;
    nodes_[first].prev = id;
    nodes_[s].next = id;
  }
  void Remove(uint32_t id) {
    const Node n = nodes_[id];
    nodes_[n.prev].next = n.next;
    nodes_[n.next].prev = n.prev;
  }
  uint64_t& size(uint64_t id) { return nodes_[id].size; }
  uint64_t size(uint64_t id) const { return nodes_[id].size; }

 private:
  struct Node {
    uint32_t prev = 0, next = 0;
    uint64_t size = 0;  // 0 = not resident
  };
  const uint32_t base_;
  std::vector<Node> nodes_;
};

class FillOnce final : public EvictionPolicy {
 public:
  FillOnce(uint64_t cap, uint64_t n)
      : EvictionPolicy(cap), resident_((std::max<uint64_t>(n, 1) + 63) / 64) {}
  PolicyKind kind() const override { return PolicyKind::kFillOnce; }
  bool Contains(uint64_t id) const override { return resident_[id / 64] >> (id % 64) & 1; }
  void OnHit(uint64_t, uint64_t) override {}
  bool Admit(uint64_t id, uint64_t bytes, uint64_t, std::vector<uint64_t>&) override {
    if (bytes == 0 || used_ + bytes > capacity_) return false;
    used_ += bytes;
    resident_[id / 64] |= uint64_t{1} << (id % 64);
    return true;
  }
  void Remove(uint64_t id, uint64_t bytes) override {
    if (!Contains(id)) return;
    used_ -= bytes;
    resident_[id / 64] &= ~(uint64_t{1} << (id % 64));
  }

 private:
  // A bit per id and no sizes (Remove is told the size): the simulator holds one set per node
  // of a large cluster, asks it on every read and adds to it on every miss, all over the ids. A
  // 32-bit size per id (0 = absent) had a 125-node cluster over 1.28 M ids read and write
  // 640 MB at random, a third of a simulation's time (perf, 2026-12-07, docs/status.md); a bit
  // per id is 20 MB.
  ZeroedArray<uint64_t> resident_;
};

// FIFO and LRU differ only in what a hit does.
class Queue final : public EvictionPolicy {
 public:
  Queue(uint64_t cap, uint64_t n, bool lru) : EvictionPolicy(cap), lru_(lru), lists_(n, 1) {}
  PolicyKind kind() const override { return lru_ ? PolicyKind::kLru : PolicyKind::kFifo; }
  bool Contains(uint64_t id) const override { return lists_.size(id) != 0; }
  void OnHit(uint64_t id, uint64_t) override {
    if (!lru_) return;
    lists_.Remove(static_cast<uint32_t>(id));
    lists_.PushFront(0, static_cast<uint32_t>(id));
  }
  bool Admit(uint64_t id, uint64_t bytes, uint64_t, std::vector<uint64_t>& evicted) override {
    if (bytes > capacity_ || bytes == 0) return false;
    while (used_ + bytes > capacity_) {
      const uint32_t victim = lists_.back(0);
      Forget(victim);
      evicted.push_back(victim);
      ++evictions_;
    }
    lists_.PushFront(0, static_cast<uint32_t>(id));
    lists_.size(id) = bytes;
    used_ += bytes;
    return true;
  }
  void Remove(uint64_t id, uint64_t) override { Forget(id); }

 private:
  void Forget(uint64_t id) {
    if (!lists_.size(id)) return;
    lists_.Remove(static_cast<uint32_t>(id));
    used_ -= lists_.size(id);
    lists_.size(id) = 0;
  }

  const bool lru_;
  IdLists lists_;
};

class S3Fifo final : public EvictionPolicy {
 public:
  // The paper's split: 10% small queue, ghost entries worth 90% of the bytes.
  static constexpr double kSmallShare = 0.10;
  static constexpr double kGhostShare = 0.90;

  S3Fifo(uint64_t cap, uint64_t n)
      : EvictionPolicy(cap), lists_(n, 3), where_(n, kNone), freq_(n, 0), size_(n, 0) {}
  PolicyKind kind() const override { return PolicyKind::kS3Fifo; }
  bool Contains(uint64_t id) const override { return where_[id] == kSmall || where_[id] == kMain; }
  void OnHit(uint64_t id, uint64_t) override { freq_[id] = std::min<uint8_t>(freq_[id] + 1, 3); }
  bool Admit(uint64_t id, uint64_t bytes, uint64_t, std::vector<uint64_t>& evicted) override {
    if (bytes > capacity_ || bytes == 0) return false;
    while (used_ + bytes > capacity_) {
      // Main gives up space only beyond its 90% share (or when the small queue is empty).
      if (main_bytes_ > (1 - kSmallShare) * capacity_ || lists_.empty(kSmall)) {
        EvictMain(evicted);
      } else {
        EvictSmall(evicted);
      }
    }
    const bool returning = where_[id] == kGhost;
    if (returning) Unlink(id);
    Link(id, returning ? kMain : kSmall, bytes);
    freq_[id] = 0;
    return true;
  }
  void Remove(uint64_t id, uint64_t) override {
    if (Contains(id)) Unlink(id);
  }

 private:
  enum : uint8_t { kSmall = 0, kMain = 1, kGhost = 2, kNone = 3 };

  void Link(uint64_t id, uint8_t q, uint64_t bytes) {
    lists_.PushFront(q, static_cast<uint32_t>(id));
    where_[id] = q;
    size_[id] = bytes;
    if (q == kGhost) {
      ghost_bytes_ += bytes;
      return;
    }
    used_ += bytes;
    (q == kSmall ? small_bytes_ : main_bytes_) += bytes;
  }
  void Unlink(uint64_t id) {
    lists_.Remove(static_cast<uint32_t>(id));
    const uint8_t q = where_[id];
    where_[id] = kNone;
    if (q == kGhost) {
      ghost_bytes_ -= size_[id];
      return;
    }
    used_ -= size_[id];
    (q == kSmall ? small_bytes_ : main_bytes_) -= size_[id];
  }
  void EvictSmall(std::vector<uint64_t>& evicted) {
    const uint32_t t = lists_.back(kSmall);
    const uint64_t bytes = size_[t];
    Unlink(t);
    if (freq_[t] >= 1) {  // accessed while in the small queue: it earns a place in main
      freq_[t] = 0;
      Link(t, kMain, bytes);
      return;
    }
    evicted.push_back(t);
    ++evictions_;
    Link(t, kGhost, bytes);
    while (ghost_bytes_ > kGhostShare * capacity_) Unlink(lists_.back(kGhost));
  }
  void EvictMain(std::vector<uint64_t>& evicted) {
    const uint32_t t = lists_.back(kMain);
    if (freq_[t] > 0) {  // 2-bit clock: reinsert with one access spent
      freq_[t]--;
      lists_.Remove(t);
      lists_.PushFront(kMain, t);
      return;
    }
    Unlink(t);
    evicted.push_back(t);
    ++evictions_;
  }

  IdLists lists_;
  std::vector<uint8_t> where_, freq_;
  std::vector<uint64_t> size_;
  uint64_t small_bytes_ = 0, main_bytes_ = 0, ghost_bytes_ = 0;
};

class Belady final : public EvictionPolicy {
 public:
  Belady(uint64_t cap, uint64_t n, const AccessOracle* oracle)
      : EvictionPolicy(cap), oracle_(oracle), next_(n, 0), size_(n, 0) {}
  PolicyKind kind() const override { return PolicyKind::kBelady; }
  bool Contains(uint64_t id) const override { return size_[id] != 0; }
  void OnHit(uint64_t id, uint64_t now) override {
    next_[id] = oracle_->NextAccess(id, now);
    Push(id);
  }
  bool Admit(uint64_t id, uint64_t bytes, uint64_t now, std::vector<uint64_t>& evicted) override {
    if (bytes > capacity_ || bytes == 0) return false;
    const uint64_t next = oracle_->NextAccess(id, now);
    if (next == AccessOracle::kNever) return false;
    // Collect the farthest-needed residents until the id fits; refuse it if one of them is
    // needed sooner than the id itself (keeping them is better).
    candidates_.clear();
    uint64_t freed = 0;
    while (used_ - freed + bytes > capacity_) {
      const uint64_t victim = PopFarthest();
      if (next_[victim] <= next) {
        candidates_.push_back(victim);
        for (uint64_t c : candidates_) {
          heap_.push_back({next_[c], c});
          std::push_heap(heap_.begin(), heap_.end());
        }
        return false;
      }
      candidates_.push_back(victim);
      freed += size_[victim];
    }
    for (uint64_t v : candidates_) {
      Forget(v);
      evicted.push_back(v);
      ++evictions_;
    }
    size_[id] = bytes;
    used_ += bytes;
    ++count_;
    next_[id] = next;
    Push(id);
    return true;
  }
  void Remove(uint64_t id, uint64_t) override { Forget(id); }

 private:
  void Forget(uint64_t id) {
    if (!size_[id]) return;
    used_ -= size_[id];
    size_[id] = 0;
    --count_;
  }

  // Max-heap of (next access, id) with lazy deletion: an entry is valid while the id is
  // resident and its next access still matches.
  void Push(uint64_t id) {
    heap_.push_back({next_[id], id});
    std::push_heap(heap_.begin(), heap_.end());
    if (heap_.size() > 64 && heap_.size() > 4 * count_) Compact();
  }
  uint64_t PopFarthest() {
    while (true) {
      std::pop_heap(heap_.begin(), heap_.end());
      const auto [key, id] = heap_.back();
      heap_.pop_back();
      if (size_[id] && next_[id] == key) return id;
    }
  }
  // Drops stale entries (and duplicates of valid ones). Amortized: runs when the heap is
  // four times the resident count.
  void Compact() {
    std::vector<std::pair<uint64_t, uint64_t>> keep;
    keep.reserve(count_);
    for (const auto& [key, id] : heap_) {
      if (size_[id] && next_[id] == key) keep.push_back({key, id});
    }
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    heap_.swap(keep);
    std::make_heap(heap_.begin(), heap_.end());
  }

  const AccessOracle* oracle_;
  std::vector<uint64_t> next_;
  std::vector<uint64_t> size_;
  std::vector<std::pair<uint64_t, uint64_t>> heap_;
  std::vector<uint64_t> candidates_;
  uint64_t count_ = 0;  // resident ids
};

}  // namespace

std::unique_ptr<EvictionPolicy> EvictionPolicy::Make(PolicyKind kind, uint64_t capacity,
                                                     uint64_t num_ids, const AccessOracle* oracle) {
  switch (kind) {
    case PolicyKind::kFillOnce:
      return std::make_unique<FillOnce>(capacity, num_ids);
    case PolicyKind::kFifo:
      return std::make_unique<Queue>(capacity, num_ids, false);
    case PolicyKind::kLru:
      return std::make_unique<Queue>(capacity, num_ids, true);
    case PolicyKind::kS3Fifo:
      return std::make_unique<S3Fifo>(capacity, num_ids);
    case PolicyKind::kBelady:
      if (oracle) return std::make_unique<Belady>(capacity, num_ids, oracle);
      break;
  }
  return nullptr;
}

}  // namespace stallscope
