#include "cache/epoch_oracle.h"

namespace stallscope {

EpochOrderOracle::EpochOrderOracle(uint64_t num_ids, uint64_t epochs, OrderFunction order_of)
    : n_(num_ids),
      epochs_(epochs),
      order_of_(std::move(order_of)),
      positions_(std::make_unique<std::atomic<const uint32_t*>[]>(epochs)) {}

const uint32_t* EpochOrderOracle::Positions(uint64_t epoch) const {
  if (const uint32_t* p = positions_[epoch].load(std::memory_order_acquire)) return p;
  std::lock_guard lock(mu_);
  if (const uint32_t* p = positions_[epoch].load(std::memory_order_relaxed)) return p;
  std::vector<uint64_t> order;
  order_of_(epoch, order);
  auto pos = std::make_unique<uint32_t[]>(n_);
  for (uint64_t p = 0; p < order.size(); ++p) pos[order[p]] = static_cast<uint32_t>(p);
  const uint32_t* raw = pos.get();
  owned_.push_back(std::move(pos));
  positions_[epoch].store(raw, std::memory_order_release);
  return raw;
}

uint64_t EpochOrderOracle::NextAccess(uint64_t id, uint64_t now) const {
  const uint64_t epoch = now / n_, position = now % n_;
  if (epoch < epochs_) {
    const uint64_t p = Positions(epoch)[id];
    if (p > position) return epoch * n_ + p;
  }
  if (epoch + 1 < epochs_) return (epoch + 1) * n_ + Positions(epoch + 1)[id];
  return kNever;
}

}  // namespace stallscope
