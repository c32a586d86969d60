// Eviction and admission policies over sample ids, for one cache shard.
//
// A policy decides which ids a tier holds; the tier stores their bytes. Ids are dense
// (0..num_ids-1, the storage's sample ids), so every policy keeps its state in arrays
// indexed by id and intrusive lists — no hashing and no allocation per request, which is
// what lets a trace replay run at tens of millions of requests per second.
//
//   fill-once  admit until full, never evict. Optimal when every epoch reads the whole
//              dataset in a fresh uniform shuffle: what is kept is as good as anything else.
//   fifo       evict the oldest admitted.
//   lru        evict the least recently used (a hit moves an id to the front).
//   s3-fifo    Yang et al., SOSP '23: a small FIFO (10% of the bytes) filters one-hit
//              wonders, a main FIFO with 2-bit reinsertion holds the rest, a ghost FIFO
//              (ids only, 90% of the bytes' worth) sends returning ids straight to main.
//   belady     clairvoyant: evicts the id whose next access is farthest in the future, and
//              does not admit an id needed later than everything it would displace. Exact,
//              because the sampler's seeded order is known in advance (AccessOracle).
//
// Thread-safety: none; the owning shard serializes calls.
#ifndef STALLSCOPE_CACHE_POLICY_H_
#define STALLSCOPE_CACHE_POLICY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/names.h"

namespace stallscope {

// When each id is read next. `now` is the position in the run's access sequence (epoch *
// samples + position in the epoch's order).
class AccessOracle {
 public:
  static constexpr uint64_t kNever = ~0ULL;
  virtual ~AccessOracle() = default;
  // The first access of `id` strictly after `now`, or kNever.
  virtual uint64_t NextAccess(uint64_t id, uint64_t now) const = 0;
};

enum class PolicyKind { kFillOnce, kLru, kFifo, kS3Fifo, kBelady };
constexpr NameTable<PolicyKind, 5> kPolicyNames = {{{PolicyKind::kFillOnce, "fill-once"},
                                                    {PolicyKind::kLru, "lru"},
                                                    {PolicyKind::kFifo, "fifo"},
                                                    {PolicyKind::kS3Fifo, "s3-fifo"},
                                                    {PolicyKind::kBelady, "belady"}}};
inline const char* NameOf(PolicyKind k) { return NameOf(kPolicyNames, k); }

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  // Returns nullptr for belady without an oracle. `oracle` is required by belady and must
  // outlive the policy.
  static std::unique_ptr<EvictionPolicy> Make(PolicyKind kind, uint64_t capacity_bytes,
                                              uint64_t num_ids, const AccessOracle* oracle);

  virtual PolicyKind kind() const = 0;
  const char* name() const { return NameOf(kind()); }
  virtual bool Contains(uint64_t id) const = 0;
  // A hit on a resident id.
  virtual void OnHit(uint64_t id, uint64_t now) = 0;
  // Offers a non-resident id of `bytes`. Returns true when admitted; the ids evicted to make
  // room are appended to `evicted`. Nothing is evicted for an id that is refused.
  virtual bool Admit(uint64_t id, uint64_t bytes, uint64_t now, std::vector<uint64_t>& evicted) = 0;
  // Forgets a resident id (its bytes turned out bad). `bytes`: what Admit was given for it
  // (fill-once keeps no sizes; the others ignore it).
  virtual void Remove(uint64_t id, uint64_t bytes) = 0;

  uint64_t used_bytes() const { return used_; }
  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t evictions() const { return evictions_; }

 protected:
  explicit EvictionPolicy(uint64_t capacity) : capacity_(capacity) {}
  const uint64_t capacity_;
  uint64_t used_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace stallscope

#endif  // STALLSCOPE_CACHE_POLICY_H_
