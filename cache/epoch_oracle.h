// EpochOrderOracle: the AccessOracle of a run that reads every id once per epoch, in an
// order known in advance (the sampler's seeded shuffle).
//
// Access number `now` is epoch * num_ids + position. The next access of id after `now` is
// its position later in the same epoch, or its position in the next epoch. Each epoch's
// inverse permutation is computed once, on first use, and kept: 4 bytes per id per epoch
// reached (only belady asks).
//
// Thread-safety: NextAccess() is safe from any thread; computed epochs are read without a
// lock (published through atomic pointers), computing one takes a mutex.
#ifndef STALLSCOPE_CACHE_EPOCH_ORACLE_H_
#define STALLSCOPE_CACHE_EPOCH_ORACLE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "cache/policy.h"

namespace stallscope {

class EpochOrderOracle final : public AccessOracle {
 public:
  // `order_of(epoch, out)` writes epoch's order of all ids into `out`.
  using OrderFunction = std::function<void(uint64_t epoch, std::vector<uint64_t>& out)>;
  EpochOrderOracle(uint64_t num_ids, uint64_t epochs, OrderFunction order_of);

  uint64_t NextAccess(uint64_t id, uint64_t now) const override;

 private:
  // Position of every id in `epoch`.
  const uint32_t* Positions(uint64_t epoch) const;

  const uint64_t n_;
  const uint64_t epochs_;
  const OrderFunction order_of_;
  mutable std::mutex mu_;                                   // serializes computing an epoch
  mutable std::vector<std::unique_ptr<uint32_t[]>> owned_;  // guarded by mu_
  mutable std::unique_ptr<std::atomic<const uint32_t*>[]> positions_;  // per epoch, or null
};

}  // namespace stallscope

#endif  // STALLSCOPE_CACHE_EPOCH_ORACLE_H_
