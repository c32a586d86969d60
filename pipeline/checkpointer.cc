#include "pipeline/checkpointer.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "base/align.h"
#include "base/clock.h"
#include "base/start_thread.h"
#include "pipeline/nvtx.h"

namespace stallscope {

Checkpointer::Checkpointer(const CheckpointOptions& options, uint64_t bytes, CheckpointStore& store,
                           Device& device, const LoaderOptions& loader,
                           std::function<void(const std::string&)> fail)
    : options_(options),
      bytes_(bytes),
      store_(store),
      device_(device),
      on_error_(loader.on_error),
      retries_(loader.retries_allowed()),
      fail_(std::move(fail)),
      schedule_(options) {
  device_.PrepareState(bytes_);
  const bool need_buffer = options_.mode == CheckpointMode::kAsync ||
                           device_.host_state() == nullptr || options_.restore;
  if (need_buffer) {
    const uint64_t room = RoundUp(std::max<uint64_t>(bytes_, 1), kBlockBytes);
    buffer_.reset(static_cast<std::byte*>(std::aligned_alloc(kBlockBytes, room)));
    if (!buffer_) throw std::bad_alloc();
    std::memset(buffer_.get(), 0, room);  // faulted in now, not during the first snapshot
    device_.PinHost(buffer_.get(), room);
  }
  if (options_.mode == CheckpointMode::kAsync)
    writer_ = StartThread("the checkpoint writer thread", [this] { WriterLoop(); });
}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  if (buffer_) device_.UnpinHost(buffer_.get());
}

RestoreRecord Checkpointer::Restore(std::optional<uint64_t> step) {
  RestoreRecord r;
  const std::optional<uint64_t> latest = step ? step : store_.Latest();
  if (!latest) {
    throw CheckpointError(
        fmt::format("checkpoint.restore: no checkpoint of this rank in {}", store_.Describe()),
        ENOENT);
  }
  const double t0 = MonotonicSeconds();
  store_.Read(*latest, {buffer_.get(), bytes_});
  device_.LoadState(buffer_.get(), bytes_);
  r.done = true;
  r.step = *latest;
  r.bytes = bytes_;
  r.seconds = MonotonicSeconds() - t0;
  return r;
}

int Checkpointer::WriteWithRules(uint64_t step, std::span<const std::byte> data) {
  for (uint32_t attempt = 0;; ++attempt) {
    try {
      store_.Write(step, data);
      return 0;
    } catch (const CheckpointError& e) {
      if (cancelled_) return ECANCELED;  // the run is stopping: not an error of its own
      {
        std::lock_guard lock(mu_);
        if (first_error_.empty()) first_error_ = e.what();
      }
      if (on_error_ == OnError::kSkip) return e.error() != 0 ? e.error() : EIO;
      if (on_error_ == OnError::kRetry && attempt < retries_) continue;
      fail_(e.what());
      return e.error() != 0 ? e.error() : EIO;
    }
  }
}

double Checkpointer::AfterStep(uint64_t step, double end) {
  if (agreed_) {
    if (agreed_step_ != step) return 0;
    schedule_.Taken(end);
  } else if (!schedule_.Due(step, end)) {
    return 0;
  }
  nvtx::ScopedRange range("stallscope: checkpoint");
  CheckpointSpan span;
  span.step = step;
  span.bytes = bytes_;
  span.start = MonotonicSeconds();
  if (options_.mode == CheckpointMode::kSync) {
    const std::byte* data = device_.host_state();
    if (data == nullptr) {
      device_.Snapshot(buffer_.get(), bytes_);
      data = buffer_.get();
    }
    span.write_start = MonotonicSeconds();
    span.error = WriteWithRules(step + 1, {data, bytes_});
    span.write_end = span.resumed = MonotonicSeconds();
    spans_.push_back(span);
    return span.resumed;
  }
  {
    // The buffer holds the previous snapshot until its write is done.
    std::unique_lock lock(mu_);
    span.waited_for_previous = pending_;
    cv_.wait(lock, [&] { return !pending_ || stop_; });
  }
  device_.Snapshot(buffer_.get(), bytes_);
  span.resumed = MonotonicSeconds();
  spans_.push_back(span);
  {
    std::lock_guard lock(mu_);
    pending_ = true;
    pending_span_ = spans_.size() - 1;
  }
  cv_.notify_all();
  return span.resumed;
}

void Checkpointer::WriterLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return pending_ || stop_; });
    if (!pending_) return;                         // stopping with nothing to write
    CheckpointSpan& span = spans_[pending_span_];  // not touched by the device thread meanwhile
    lock.unlock();
    span.write_start = MonotonicSeconds();
    span.error = WriteWithRules(span.step + 1, {buffer_.get(), bytes_});
    span.write_end = MonotonicSeconds();
    lock.lock();
    pending_ = false;
    cv_.notify_all();
  }
}

std::vector<CheckpointSpan> Checkpointer::Finish() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !pending_; });
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  return spans_;
}

}  // namespace stallscope
