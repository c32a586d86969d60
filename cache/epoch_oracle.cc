#include "cache/epoch_oracle.h"

namespace stallscope {

namespace {
constexpr size_t kKeptEpochs = 4;
}  // namespace

EpochOrderOracle::EpochOrderOracle(uint64_t num_ids, uint64_t epochs, OrderFunction order_of)
    : n_(num_ids), epochs_(epochs), order_of_(std::move(order_of)) {}

std::shared_ptr<const std::vector<uint32_t>> EpochOrderOracle::Positions(uint64_t epoch) const {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < kept_.size(); ++i) {
    if (kept_[i].first == epoch) return kept_[i].second;
  }
  std::vector<uint64_t> order;
  order_of_(epoch, order);
  auto pos = std::make_shared<std::vector<uint32_t>>(n_);
  for (uint64_t p = 0; p < order.size(); ++p) (*pos)[order[p]] = static_cast<uint32_t>(p);
  if (kept_.size() == kKeptEpochs) kept_.erase(kept_.begin());
  kept_.emplace_back(epoch, pos);
  return pos;
}

uint64_t EpochOrderOracle::NextAccess(uint64_t id, uint64_t now) const {
  const uint64_t epoch = now / n_, position = now % n_;
  if (epoch < epochs_) {
    const uint64_t p = (*Positions(epoch))[id];
    if (p > position) return epoch * n_ + p;
  }
  if (epoch + 1 < epochs_) return (epoch + 1) * n_ + (*Positions(epoch + 1))[id];
  return kNever;
}

}  // namespace stallscope
