#include "storage/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/start_thread.h"
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
  sizes_.resize(dataset.dataset.samples);
  for (uint64_t i = 0; i < dataset.dataset.samples; ++i) {
    sizes_[i] = SampleSizeOf(dataset.seed, i, dataset.dataset.sample_size,
                             dataset.dataset.sample_size_stdev);
    max_bytes_ = std::max(max_bytes_, sizes_[i]);
  }
}

uint64_t SyntheticStorage::Key(uint64_t sample) const { return ContentKey(dataset_.seed, sample); }

uint32_t SyntheticStorage::Label(uint64_t sample) const {
  return LabelOf(Key(sample), dataset_.dataset.classes);
}

bool SyntheticStorage::Verify(uint64_t sample, std::span<const std::byte> data) const {
  return data.size() == sizes_[sample] && MatchesContent(Key(sample), data, Label(sample));
}

std::string SyntheticFingerprint(const SyntheticDataset& d) {
  return fmt::format("synthetic v2 seed={} samples={} mean={} stdev={}", d.seed, d.dataset.samples,
                     d.dataset.sample_size, d.dataset.sample_size_stdev);
}

std::string SyntheticStorage::Fingerprint() const { return SyntheticFingerprint(dataset_); }

// ---------------------------------------------------------------------------------------
// MemoryStorage

MemoryStorage::MemoryStorage(const SyntheticDataset& dataset) : SyntheticStorage(dataset) {
  offsets_.resize(dataset.dataset.samples + 1);
  for (uint64_t i = 0; i < dataset.dataset.samples; ++i) offsets_[i + 1] = offsets_[i] + sizes_[i];
  bytes_ = std::make_unique_for_overwrite<std::byte[]>(offsets_.back());
  for (uint64_t i = 0; i < dataset.dataset.samples; ++i) {
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
  return fmt::format("memory: {} samples, {:.1f} MiB held in RAM", dataset_.dataset.samples,
                     static_cast<double>(offsets_.back()) / (1 << 20));
}

// ---------------------------------------------------------------------------------------
// SimulatedStorage

// The event loop behind SimulatedStorage: a StorageModel driven by the steady clock. One
// steady_timer is armed for the model's next event; the model, the slab of requests and the
// timer are touched by the io_context thread alone.
class SimulatedStorage::Engine {
 public:
  using Clock = std::chrono::steady_clock;

  Engine(SimulatedStorage* owner, const SimulatedStorageOptions& o, uint64_t seed,
         SharedStorageBudget* shared)
      : owner_(owner),
        start_(Clock::now()),
        model_(o, seed, owner->max_sample_bytes(), 0.0),
        timer_(context_),
        work_(boost::asio::make_work_guard(context_)) {
    if (!o.write.shared) {
      write_model_ = std::make_unique<StorageModel>(SeparateWriteModel(o), seed ^ 0x77726974ULL,
                                                    owner->max_sample_bytes(), 0.0);
    }
    // steady_clock is CLOCK_MONOTONIC: the same clock in every process of this host.
    if (shared)
      model_.Share(shared, std::chrono::duration<double>(start_.time_since_epoch()).count());
    thread_ = StartThread("the simulated storage's thread", [this] { context_.run(); });
  }

  ~Engine() {
    work_.reset();
    boost::asio::post(context_, [this] { timer_.cancel(); });
    context_.stop();
    thread_.join();
  }

  // Moves `bytes` in `block`-byte requests, at most `depth` in flight, and returns true when
  // the last has completed, false when Cancel() ended it (or came before). One transfer at a
  // time (callers are serialized).
  bool Transfer(uint64_t bytes, uint64_t block, uint32_t depth, bool write) {
    std::lock_guard serial(transfer_mu_);
    if (cancelled_) return false;
    Job job;
    job.blocks = (bytes + block - 1) / block;
    job.last = bytes - (job.blocks - 1) * block;
    job.block = block;
    job.depth = std::max<uint32_t>(depth, 1);
    job.write = write;
    if (job.blocks == 0) return true;
    boost::asio::post(context_, [this, &job] {
      job_ = &job;
      ++job_generation_;
      if (cancelled_) {
        EndJob(false);
        return;
      }
      FeedJob(Now());
      Process();
    });
    std::unique_lock lock(job.mu);
    job.cv.wait(lock, [&] { return job.done; });
    return job.completed == job.blocks;
  }

  // A stop: every read in flight completes now with -ECANCELED, and a transfer in progress
  // (or any later one) returns false. The model's own requests run on unseen: their
  // completions are dropped when they come.
  void Cancel() {
    cancelled_ = true;
    boost::asio::post(context_, [this] {
      if (job_) EndJob(false);
      for (Request& r : slab_) {
        if (!r.callback) continue;
        ReadCallback* cb = std::exchange(r.callback, nullptr);
        cb->OnReadComplete(r.request, -ECANCELED);
      }
    });
  }

  void Submit(std::span<const ReadRequest> requests, ReadCallback* cb) {
    std::lock_guard lock(mu_);
    for (const ReadRequest& r : requests) incoming_.push_back({r, cb});
    if (!drain_posted_) {
      drain_posted_ = true;
      boost::asio::post(context_, [this] { Drain(); });
    }
  }

 private:
  struct Request {
    ReadRequest request;
    ReadCallback* callback;
  };

  double Now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // A Transfer() in progress, owned by the thread waiting in it.
  struct Job {
    uint64_t blocks = 0, block = 0, last = 0, submitted = 0, completed = 0;
    uint32_t depth = 1;
    bool write = false;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;  // guarded by mu
  };
  // Model tokens of a Job's blocks: this bit, the job's generation (bits 40-62: a cancelled
  // job's late completions are not taken for the next job's), the block's index.
  static constexpr uint64_t kJobToken = 1ULL << 63;
  static constexpr int kGenerationShift = 40;
  static constexpr uint64_t kIndexMask = (1ULL << kGenerationShift) - 1;
  uint64_t JobTag() const { return kJobToken | (job_generation_ << kGenerationShift & ~kJobToken); }

  StorageModel& JobModel() { return job_->write && write_model_ ? *write_model_ : model_; }

  // Engine thread: keeps `depth` of the job's blocks in flight.
  void FeedJob(double now) {
    Job& j = *job_;
    while (j.submitted < j.blocks && j.submitted - j.completed < j.depth) {
      const uint64_t bytes = j.submitted + 1 == j.blocks ? j.last : j.block;
      JobModel().Submit(JobTag() | (j.submitted & kIndexMask), bytes, now, j.write);
      ++j.submitted;
    }
  }

  void JobBlockDone(double now) {
    Job& j = *job_;
    if (++j.completed < j.blocks) {
      FeedJob(now);
      return;
    }
    EndJob(true);
  }

  // Hands the job back to its waiter (whole, or cut short by Cancel()).
  void EndJob(bool whole) {
    Job& j = *job_;
    job_ = nullptr;
    if (!whole) j.completed = 0;
    std::lock_guard lock(j.mu);  // notified under the lock: j is gone once its waiter sees done
    j.done = true;
    j.cv.notify_all();
  }

  void Drain() {
    {
      std::lock_guard lock(mu_);
      drained_.swap(incoming_);
      drain_posted_ = false;
    }
    const double now = Now();
    for (const Request& r : drained_) {
      if (cancelled_) {
        r.callback->OnReadComplete(r.request, -ECANCELED);
        continue;
      }
      uint64_t token;
      if (free_.empty()) {
        token = slab_.size();
        slab_.push_back(r);
      } else {
        token = free_.back();
        free_.pop_back();
        slab_[token] = r;
      }
      model_.Submit(token, owner_->SampleBytes(r.request.sample), now);
    }
    drained_.clear();
    Process();
  }

  void Process() {
    done_.clear();
    const double now = Now();
    model_.Advance(now, done_);
    if (write_model_) write_model_->Advance(now, done_);
    for (const StorageModel::Completion& c : done_) {
      if (c.token & kJobToken) {
        if (job_ && (c.token & ~kIndexMask) == JobTag()) JobBlockDone(now);
        continue;
      }
      const Request r = slab_[c.token];
      slab_[c.token].callback = nullptr;
      free_.push_back(c.token);
      if (!r.callback) continue;  // cancelled: its completion was given at Cancel()
      if (c.result > 0) {
        FillContent(owner_->Key(r.request.sample), {r.request.dst, static_cast<size_t>(c.result)},
                    owner_->Label(r.request.sample));
      }
      r.callback->OnReadComplete(r.request, c.result);
    }
    const double next =
        std::min(model_.NextEventTime(),
                 write_model_ ? write_model_->NextEventTime() : StorageModel::kNever);
    if (next != StorageModel::kNever && (!armed_ || next < armed_at_)) {
      armed_ = true;
      armed_at_ = next;
      // (At most a year ahead: a rate of a few bytes a second puts events beyond what the
      // clock's ticks can count.)
      timer_.expires_at(start_ + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(std::min(next, 3.2e7))));
      timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec == boost::asio::error::operation_aborted) return;
        armed_ = false;
        Process();
      });
    }
  }

  SimulatedStorage* const owner_;
  const Clock::time_point start_;
  // Engine thread only.
  StorageModel model_;
  std::unique_ptr<StorageModel> write_model_;  // storage.write.shared false
  Job* job_ = nullptr;
  uint64_t job_generation_ = 0;
  std::vector<Request> slab_;  // indexed by the model's token
  std::vector<uint64_t> free_;
  std::vector<Request> drained_;
  std::vector<StorageModel::Completion> done_;
  bool armed_ = false;
  double armed_at_ = 0;

  boost::asio::io_context context_;
  boost::asio::steady_timer timer_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;

  std::mutex transfer_mu_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  // Guarded by mu_.
  std::vector<Request> incoming_;
  bool drain_posted_ = false;

  std::thread thread_;
};

SimulatedStorage::SimulatedStorage(const SyntheticDataset& dataset,
                                   const SimulatedStorageOptions& options,
                                   SharedStorageBudget* shared)
    : SyntheticStorage(dataset), options_(options) {
  engine_ = std::make_unique<Engine>(this, options, dataset.seed, shared);
}

SimulatedStorage::~SimulatedStorage() = default;

void SimulatedStorage::Submit(std::span<const ReadRequest> requests, ReadCallback* callback) {
  engine_->Submit(requests, callback);
}

bool SimulatedStorage::Transfer(uint64_t bytes, uint64_t block, uint32_t depth, bool write) {
  return engine_->Transfer(bytes, block, depth, write);
}

void SimulatedStorage::CancelReads() { engine_->Cancel(); }

std::string SimulatedStorage::Describe() const {
  std::string s = fmt::format("simulated: {} samples, {}", dataset_.dataset.samples,
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
