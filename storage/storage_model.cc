#include "storage/storage_model.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>

namespace stallscope {

StorageModel::StorageModel(const SimulatedStorageOptions& o, uint64_t seed,
                           uint64_t max_sample_bytes, double start)
    : options_(o), start_(start) {
  // Seed the generator's state with splitmix64, as its authors recommend.
  uint64_t x = seed ^ 0x73696d73746f7265ULL;
  for (uint64_t& word : rng_) {
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    word = z ^ (z >> 31);
  }
  if (o.latency_p50_seconds > 0) {
    // Lognormal: median = exp(mu); p99 = exp(mu + z99 * sigma), z99 = 2.326348.
    mu_ = std::log(o.latency_p50_seconds);
    sigma_ = std::max(0.0, std::log(o.latency_p99_seconds / o.latency_p50_seconds) / 2.326348);
    has_latency_ = true;
  }
  if (o.write.latency_p50 > 0) {
    write_mu_ = std::log(o.write.latency_p50);
    write_sigma_ = std::max(0.0, std::log(o.write.latency_p99 / o.write.latency_p50) / 2.326348);
    has_write_latency_ = true;
  } else {
    write_mu_ = mu_;
    write_sigma_ = sigma_;
    has_write_latency_ = has_latency_;
  }
  // Bucket depth: 1 ms of bandwidth, at least one largest sample, so a lone read after an
  // idle spell is not charged for the idle spell's unused tokens beyond a short burst.
  if (o.bandwidth_bytes_per_second > 0) {
    bw_depth_ =
        std::max(o.bandwidth_bytes_per_second * 1e-3, static_cast<double>(max_sample_bytes));
    bw_tokens_ = bw_depth_;
  }
  heap_.reserve(std::clamp<uint32_t>(o.max_inflight, 1, 4096));
}

uint64_t StorageModel::Next() {
  const uint64_t result = std::rotl(rng_[1] * 5, 7) * 9;
  const uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = std::rotl(rng_[3], 45);
  return result;
}

double StorageModel::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double StorageModel::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  // Marsaglia's polar method: two independent standard normals per accepted point.
  double u, v, q;
  do {
    u = 2 * Uniform() - 1;
    v = 2 * Uniform() - 1;
    q = u * u + v * v;
  } while (q >= 1 || q == 0);
  const double f = std::sqrt(-2.0 * std::log(q) / q);
  spare_normal_ = v * f;
  has_spare_ = true;
  return u * f;
}

SimulatedStorageOptions SeparateWriteModel(const SimulatedStorageOptions& o) {
  SimulatedStorageOptions w;
  w.bandwidth_bytes_per_second =
      o.write.bandwidth > 0 ? o.write.bandwidth : o.bandwidth_bytes_per_second;
  const bool own = o.write.latency_p50 > 0;
  w.latency_p50_seconds = own ? o.write.latency_p50 : o.latency_p50_seconds;
  w.latency_p99_seconds = own ? o.write.latency_p99 : o.latency_p99_seconds;
  w.max_inflight = o.max_inflight;
  return w;
}

void StorageModel::Submit(uint64_t token, uint64_t bytes, double now, bool write) {
  uint32_t index;
  if (free_.empty()) {
    index = static_cast<uint32_t>(reads_.size());
    reads_.emplace_back();
  } else {
    index = free_.back();
    free_.pop_back();
  }
  reads_[index] = {token, bytes, kNone, write, shared_ ? shared_->tickets.fetch_add(1) : 0};
  waiting_.push_back(index);
  Admit(now);
}

bool StorageModel::TakeSlot(const Read& front, double now) {
  const uint32_t cap = std::max<uint32_t>(options_.max_inflight, 1);
  if (!shared_) {
    if (inflight_ >= cap) return false;
  } else if (front.ticket >= shared_->released.load() + cap) {
    retry_at_ = now + kSharedPoll;  // earlier reads (any rank's) hold every slot
    return false;
  }
  ++inflight_;
  return true;
}

void StorageModel::ReleaseSlot() {
  --inflight_;
  if (shared_) shared_->released.fetch_add(1);
}

double StorageModel::SharedTake(std::atomic<double>& empty, double amount, double rate,
                                double depth, double t) const {
  const double at = t + offset_;
  double old = empty.load();
  double next;
  do {
    next = std::max(old, at - depth / rate) + amount / rate;
  } while (!empty.compare_exchange_weak(old, next));
  return std::max(at, next) - offset_;
}

void StorageModel::Admit(double now) {
  retry_at_ = kNever;
  while (!waiting_.empty() && TakeSlot(reads_[waiting_.front()], now)) {
    const uint32_t index = waiting_.front();
    waiting_.pop_front();
    Read& r = reads_[index];
    double t = now;
    if (options_.iops > 0) {
      t = shared_ ? SharedTake(shared_->iops_empty, 1.0, options_.iops, 1.0, t)
                  : Take(iops_tokens_, 1.0, options_.iops, 1.0, iops_last_, t);
    }
    if (r.write) {
      if (has_write_latency_) t += std::exp(write_mu_ + write_sigma_ * Normal());
      Push(t, index);
      continue;
    }
    if (has_latency_) t += std::exp(mu_ + sigma_ * Normal());
    if (host_delay_) t += host_delay_(r.token);
    const auto& f = options_.faults;
    if (f.any()) {
      const double u = Uniform();
      if (u < f.error_rate) {
        r.fault = kError;
      } else if (u < f.error_rate + f.timeout_rate) {
        r.fault = kTimeout;
        t = now + f.timeout;
      } else if (u < f.error_rate + f.timeout_rate + f.truncate_rate) {
        r.fault = kTruncate;
      }
      if (f.spike_rate > 0 && Uniform() < f.spike_rate) t += f.spike;
    }
    Push(t, index);
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

// The latency heap is 4-ary: half the depth of a binary heap, and a node's four children
// share a cache line (16-byte entries).
void StorageModel::Push(double due, uint32_t index) {
  size_t i = heap_.size();
  heap_.push_back({due, index});
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (heap_[parent].due <= due) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = {due, index};
}

StorageModel::Pending StorageModel::PopMin() {
  const Pending top = heap_.front();
  const Pending last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) return top;
  size_t i = 0;
  while (true) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t end = std::min(first + 4, n);
    for (size_t c = first + 1; c < end; ++c) {
      if (heap_[c].due < heap_[best].due) best = c;
    }
    if (heap_[best].due >= last.due) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
  return top;
}

void StorageModel::Advance(double now, std::vector<Completion>& done) {
  if (retry_at_ <= now) Admit(now);  // shared: slots other ranks held may be free
  while (true) {
    const bool from_heap =
        !heap_.empty() && (flowing_.empty() || heap_.front().due <= flowing_.front().due);
    Pending p;
    if (from_heap) {
      if (heap_.front().due > now) break;
      p = PopMin();
    } else {
      if (flowing_.empty() || flowing_.front().due > now) break;
      p = flowing_.front();
      flowing_.pop_front();
    }
    ++events_;
    if (const double resume = AfterStall(p.due); resume > p.due) {
      // The whole storage is stalled: nothing completes until it ends.
      if (from_heap) {
        Push(resume, p.index);
      } else {
        flowing_.push_front({resume, p.index});  // the ones behind it wait as long
      }
      continue;
    }
    Read& r = reads_[p.index];
    if (r.fault == kError || r.fault == kTimeout) {
      done.push_back({r.token, r.fault == kError ? -EIO : -ETIMEDOUT, p.due});
      free_.push_back(p.index);
      ReleaseSlot();
      Admit(now);
      continue;
    }
    if (from_heap && options_.bandwidth_bytes_per_second > 0) {
      // First byte has arrived; the rest flows at the bandwidth left in the bucket.
      const double bytes = static_cast<double>(r.bytes);
      const double rate = options_.bandwidth_bytes_per_second;
      const double due = shared_
                             ? SharedTake(shared_->bandwidth_empty, bytes, rate, bw_depth_, p.due)
                             : Take(bw_tokens_, bytes, rate, bw_depth_, bw_last_, p.due);
      if (due > now || !flowing_.empty()) {
        flowing_.push_back({due, p.index});
        continue;
      }
      p.due = due;  // granted at once (nothing ahead of it): it completes now
    }
    const uint64_t delivered = r.fault == kTruncate ? r.bytes / 2 : r.bytes;
    done.push_back({r.token, static_cast<int64_t>(delivered), p.due});
    free_.push_back(p.index);
    ReleaseSlot();
    Admit(now);
  }
}

}  // namespace stallscope
