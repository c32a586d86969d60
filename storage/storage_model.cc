#include "storage/storage_model.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace stallscope {

StorageModel::StorageModel(const SimulatedStorageOptions& o, uint64_t seed,
                           uint64_t max_sample_bytes, double start)
    : options_(o), start_(start), rng_(seed ^ 0x73696d73746f7265ULL) {
  if (o.latency_p50_seconds > 0) {
    // Lognormal: median = exp(mu); p99 = exp(mu + z99 * sigma), z99 = 2.326348.
    const double mu = std::log(o.latency_p50_seconds);
    const double sigma =
        std::max(0.0, std::log(o.latency_p99_seconds / o.latency_p50_seconds) / 2.326348);
    latency_ = std::lognormal_distribution<double>(mu, sigma);
    has_latency_ = true;
  }
  // Bucket depth: 1 ms of bandwidth, at least one largest sample, so a lone read after an
  // idle spell is not charged for the idle spell's unused tokens beyond a short burst.
  if (o.bandwidth_bytes_per_second > 0) {
    bw_depth_ = std::max(o.bandwidth_bytes_per_second * 1e-3, static_cast<double>(max_sample_bytes));
    bw_tokens_ = bw_depth_;
  }
  heap_.reserve(std::max<uint32_t>(o.max_inflight, 1) * 2);
}

void StorageModel::Submit(uint64_t token, uint64_t bytes, double now) {
  Pending p;
  p.token = token;
  p.bytes = bytes;
  waiting_.push_back(p);
  Admit(now);
}

void StorageModel::Admit(double now) {
  while (inflight_ < std::max<uint32_t>(options_.max_inflight, 1) && !waiting_.empty()) {
    Pending p = waiting_.front();
    waiting_.pop_front();
    ++inflight_;
    double t = now;
    if (options_.iops > 0) t = Take(iops_tokens_, 1.0, options_.iops, 1.0, iops_last_, t);
    if (has_latency_) t += latency_(rng_);
    const auto& f = options_.faults;
    if (f.any()) {
      const double u = uniform_(rng_);
      if (u < f.error_rate) {
        p.fault = kError;
      } else if (u < f.error_rate + f.timeout_rate) {
        p.fault = kTimeout;
        t = now + f.timeout;
      } else if (u < f.error_rate + f.timeout_rate + f.truncate_rate) {
        p.fault = kTruncate;
      }
      if (f.spike_rate > 0 && uniform_(rng_) < f.spike_rate) t += f.spike;
    }
    p.due = t;
    Push(p);
  }
}

double StorageModel::Take(double& tokens, double amount, double rate, double depth, double& last,
                          double t) {
  if (t < last) t = last;
  tokens = std::min(depth, tokens + (t - last) * rate);
  last = t;
  tokens -= amount;
  if (tokens >= 0) return t;
  return t + -tokens / rate;
}

double StorageModel::AfterStall(double t) const {
  const auto& f = options_.faults;
  if (f.stall_every <= 0 || f.stall_for <= 0) return t;
  const double since = t - start_;
  const double k = std::floor(since / f.stall_every);
  if (k < 1) return t;
  const double stall_end = k * f.stall_every + f.stall_for;
  return since < stall_end ? start_ + stall_end : t;
}

void StorageModel::Push(const Pending& p) {
  heap_.push_back(p);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void StorageModel::Advance(double now, std::vector<Completion>& done) {
  while (!heap_.empty() && heap_.front().due <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Pending p = heap_.back();
    heap_.pop_back();
    ++events_;
    if (const double resume = AfterStall(p.due); resume > p.due) {
      p.due = resume;  // the whole storage is stalled: nothing completes until it ends
      Push(p);
      continue;
    }
    if (p.fault == kError || p.fault == kTimeout) {
      done.push_back({p.token, p.fault == kError ? -EIO : -ETIMEDOUT, p.due});
      --inflight_;
      Admit(now);
      continue;
    }
    if (!p.latency_done && options_.bandwidth_bytes_per_second > 0) {
      // First byte has arrived; the rest flows at the bandwidth left in the bucket.
      p.latency_done = true;
      p.due = Take(bw_tokens_, static_cast<double>(p.bytes), options_.bandwidth_bytes_per_second,
                   bw_depth_, bw_last_, p.due);
      if (p.due > now) {
        Push(p);
        continue;
      }
    }
    const uint64_t delivered = p.fault == kTruncate ? p.bytes / 2 : p.bytes;
    done.push_back({p.token, static_cast<int64_t>(delivered), p.due});
    --inflight_;
    Admit(now);
  }
}

}  // namespace stallscope
