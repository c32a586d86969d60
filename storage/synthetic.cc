#include "storage/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <queue>
#include <random>
#include <thread>

#include "storage/content.h"

namespace stallscope {

namespace {

std::string FormatRate(double bytes_per_second) {
  if (bytes_per_second <= 0) return "unlimited bandwidth";
  return fmt::format("{:.0f} MB/s", bytes_per_second / 1e6);
}

std::string FormatMs(double seconds) { return fmt::format("{:g} ms", seconds * 1e3); }

}  // namespace

SyntheticStorage::SyntheticStorage(const SyntheticDataset& dataset) : dataset_(dataset) {
  sizes_.resize(dataset.samples);
  for (uint64_t i = 0; i < dataset.samples; ++i) {
    sizes_[i] = SampleSizeOf(dataset.seed, i, dataset.sample_mean, dataset.sample_stdev);
    max_bytes_ = std::max(max_bytes_, sizes_[i]);
  }
}

uint64_t SyntheticStorage::Key(uint64_t sample) const { return ContentKey(dataset_.seed, sample); }

uint32_t SyntheticStorage::Label(uint64_t sample) const {
  return LabelOf(Key(sample), dataset_.classes);
}

bool SyntheticStorage::Verify(uint64_t sample, std::span<const std::byte> data) const {
  return data.size() == sizes_[sample] && MatchesContent(Key(sample), data, Label(sample));
}

std::string SyntheticStorage::Fingerprint() const {
  return fmt::format("synthetic v2 seed={} samples={} mean={} stdev={}", dataset_.seed,
                     dataset_.samples, dataset_.sample_mean, dataset_.sample_stdev);
}

// ---------------------------------------------------------------------------------------
// MemoryStorage

MemoryStorage::MemoryStorage(const SyntheticDataset& dataset) : SyntheticStorage(dataset) {
  offsets_.resize(dataset.samples + 1);
  for (uint64_t i = 0; i < dataset.samples; ++i) offsets_[i + 1] = offsets_[i] + sizes_[i];
  bytes_ = std::make_unique_for_overwrite<std::byte[]>(offsets_.back());
  for (uint64_t i = 0; i < dataset.samples; ++i) {
    FillContent(Key(i), {bytes_.get() + offsets_[i], sizes_[i]}, Label(i));
  }
}

void MemoryStorage::Submit(std::span<const ReadRequest> requests, ReadCallback* callback) {
  for (const ReadRequest& r : requests) {
    std::memcpy(r.dst, bytes_.get() + offsets_[r.sample], sizes_[r.sample]);
    callback->OnReadComplete(r, static_cast<int64_t>(sizes_[r.sample]));
  }
}

std::string MemoryStorage::Describe() const {
  return fmt::format("memory: {} samples, {:.1f} MiB held in RAM", dataset_.samples,
                     static_cast<double>(offsets_.back()) / (1 << 20));
}

// ---------------------------------------------------------------------------------------
// SimulatedStorage

// The event loop behind SimulatedStorage. Each read goes through: queue (max_inflight) →
// IOPS bucket → latency → bandwidth bucket → completion. One steady_timer is armed for the
// earliest pending event; all state below "Engine thread only" is touched by the io_context
// thread alone.
class SimulatedStorage::Engine {
 public:
  using Clock = std::chrono::steady_clock;

  Engine(SimulatedStorage* owner, const SimulatedStorageOptions& o, uint64_t seed)
      : owner_(owner),
        options_(o),
        timer_(context_),
        work_(boost::asio::make_work_guard(context_)),
        rng_(seed ^ 0x73696d73746f7265ULL) {
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
      bw_depth_ = std::max(o.bandwidth_bytes_per_second * 1e-3,
                           static_cast<double>(owner->max_sample_bytes()));
      bw_tokens_ = bw_depth_;
    }
    iops_tokens_ = 1.0;
    start_ = Clock::now();
    heap_storage_.reserve(std::max<uint32_t>(o.max_inflight, 1) * 2);
    thread_ = std::thread([this] { context_.run(); });
  }

  ~Engine() {
    work_.reset();
    boost::asio::post(context_, [this] { timer_.cancel(); });
    context_.stop();
    thread_.join();
  }

  void Submit(std::span<const ReadRequest> requests, ReadCallback* cb) {
    std::lock_guard lock(mu_);
    for (const ReadRequest& r : requests) incoming_.push_back({r, cb, {}});
    if (!drain_posted_) {
      drain_posted_ = true;
      boost::asio::post(context_, [this] { Drain(); });
    }
  }

 private:
  struct Pending {
    ReadRequest request;
    ReadCallback* callback;
    Clock::time_point due;
    bool latency_done = false;
    int fault = 0;  // kNone, kError, kTimeout, kTruncate
  };
  enum { kNone = 0, kError, kTimeout, kTruncate };

  // The end of the whole-storage stall that `t` falls in, or `t` when none does.
  Clock::time_point AfterStall(Clock::time_point t) const {
    const auto& f = options_.faults;
    if (f.stall_every <= 0 || f.stall_for <= 0) return t;
    const double since = std::chrono::duration<double>(t - start_).count();
    const double k = std::floor(since / f.stall_every);
    if (k < 1) return t;
    const double stall_end = k * f.stall_every + f.stall_for;
    return since < stall_end ? start_ + ToDuration(stall_end) : t;
  }
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const { return a.due > b.due; }
  };

  void Drain() {
    {
      std::lock_guard lock(mu_);
      drained_.swap(incoming_);
      drain_posted_ = false;
    }
    for (const Pending& p : drained_) waiting_.push_back(p);
    drained_.clear();
    Admit(Clock::now());
    Process();
  }

  void Admit(Clock::time_point now) {
    while (inflight_ < std::max<uint32_t>(options_.max_inflight, 1) && !waiting_.empty()) {
      Pending p = waiting_.front();
      waiting_.pop_front();
      ++inflight_;
      Clock::time_point t = now;
      if (options_.iops > 0) t = Take(iops_tokens_, 1.0, options_.iops, 1.0, iops_last_, t);
      if (has_latency_) t += ToDuration(latency_(rng_));
      const auto& f = options_.faults;
      if (f.any()) {
        const double u = uniform_(rng_);
        if (u < f.error_rate) {
          p.fault = kError;
        } else if (u < f.error_rate + f.timeout_rate) {
          p.fault = kTimeout;
          t = now + ToDuration(f.timeout);
        } else if (u < f.error_rate + f.timeout_rate + f.truncate_rate) {
          p.fault = kTruncate;
        }
        if (f.spike_rate > 0 && uniform_(rng_) < f.spike_rate) t += ToDuration(f.spike);
      }
      p.due = t;
      Push(p);
    }
  }

  // Token bucket with debt: refills at `rate` up to `depth`; taking more than is there
  // leaves a debt that delays the taker until it is paid. Returns when `amount` is granted.
  static Clock::time_point Take(double& tokens, double amount, double rate, double depth,
                                Clock::time_point& last, Clock::time_point t) {
    if (t < last) t = last;
    const double refill = std::chrono::duration<double>(t - last).count() * rate;
    tokens = std::min(depth, tokens + refill);
    last = t;
    tokens -= amount;
    if (tokens >= 0) return t;
    return t + ToDuration(-tokens / rate);
  }

  static Clock::duration ToDuration(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  void Push(const Pending& p) {
    heap_storage_.push_back(p);
    std::push_heap(heap_storage_.begin(), heap_storage_.end(), Later{});
  }

  void Process() {
    const Clock::time_point now = Clock::now();
    while (!heap_storage_.empty() && heap_storage_.front().due <= now) {
      std::pop_heap(heap_storage_.begin(), heap_storage_.end(), Later{});
      Pending p = heap_storage_.back();
      heap_storage_.pop_back();
      if (const Clock::time_point resume = AfterStall(p.due); resume > p.due) {
        p.due = resume;  // the whole storage is stalled: nothing completes until it ends
        Push(p);
        continue;
      }
      const uint64_t bytes = owner_->SampleBytes(p.request.sample);
      if (p.fault == kError || p.fault == kTimeout) {
        p.callback->OnReadComplete(p.request, p.fault == kError ? -EIO : -ETIMEDOUT);
        --inflight_;
        Admit(now);
        continue;
      }
      if (!p.latency_done && options_.bandwidth_bytes_per_second > 0) {
        // First byte has arrived; the rest flows at the bandwidth left in the bucket.
        p.latency_done = true;
        p.due = Take(bw_tokens_, static_cast<double>(bytes), options_.bandwidth_bytes_per_second,
                     bw_depth_, bw_last_, p.due);
        if (p.due > now) {
          Push(p);
          continue;
        }
      }
      const uint64_t delivered = p.fault == kTruncate ? bytes / 2 : bytes;
      FillContent(owner_->Key(p.request.sample), {p.request.dst, delivered},
                  owner_->Label(p.request.sample));
      p.callback->OnReadComplete(p.request, static_cast<int64_t>(delivered));
      --inflight_;
      Admit(now);
    }
    if (!heap_storage_.empty()) {
      const Clock::time_point next = heap_storage_.front().due;
      if (!armed_ || next < armed_at_) {
        armed_ = true;
        armed_at_ = next;
        timer_.expires_at(next);
        timer_.async_wait([this](const boost::system::error_code& ec) {
          if (ec == boost::asio::error::operation_aborted) return;
          armed_ = false;
          Process();
        });
      }
    }
  }

  SimulatedStorage* const owner_;
  const SimulatedStorageOptions options_;
  boost::asio::io_context context_;
  boost::asio::steady_timer timer_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;

  std::mutex mu_;
  // Guarded by mu_.
  std::vector<Pending> incoming_;
  bool drain_posted_ = false;

  // Engine thread only.
  std::vector<Pending> drained_;
  std::deque<Pending> waiting_;
  std::vector<Pending> heap_storage_;  // min-heap on `due`
  uint32_t inflight_ = 0;
  bool armed_ = false;
  Clock::time_point armed_at_;
  std::mt19937_64 rng_;
  std::lognormal_distribution<double> latency_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  Clock::time_point start_;
  bool has_latency_ = false;
  double bw_tokens_ = 0, bw_depth_ = 0;
  Clock::time_point bw_last_{};
  double iops_tokens_ = 0;
  Clock::time_point iops_last_{};

  std::thread thread_;
};

SimulatedStorage::SimulatedStorage(const SyntheticDataset& dataset,
                                   const SimulatedStorageOptions& options)
    : SyntheticStorage(dataset), options_(options) {
  engine_ = std::make_unique<Engine>(this, options, dataset.seed);
}

SimulatedStorage::~SimulatedStorage() = default;

void SimulatedStorage::Submit(std::span<const ReadRequest> requests, ReadCallback* callback) {
  engine_->Submit(requests, callback);
}

std::string SimulatedStorage::Describe() const {
  std::string s = fmt::format("simulated: {} samples, {}", dataset_.samples,
                              FormatRate(options_.bandwidth_bytes_per_second));
  if (options_.latency_p50_seconds > 0) {
    s += fmt::format(", latency p50 {} / p99 {}", FormatMs(options_.latency_p50_seconds),
                     FormatMs(options_.latency_p99_seconds));
  }
  if (options_.iops > 0) s += fmt::format(", {:.0f} IOPS", options_.iops);
  s += fmt::format(", max {} in flight", options_.max_inflight);
  return s;
}

}  // namespace stallscope
