#include "gpu/emulated_device.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

namespace stallscope {
namespace {

// Sleeps until MonotonicSeconds() reaches `t` (steady_clock is CLOCK_MONOTONIC on Linux), or
// until `interrupted`, looked at every 50 ms: the last stretch is one absolute sleep, so
// the wake-up is as exact as one sleep of the whole step.
void SleepUntil(double t, const std::atomic<bool>& interrupted) {
  constexpr double kLook = 0.05;
  for (;;) {
    if (interrupted.load(std::memory_order_relaxed)) return;
    const double until = std::min(t, MonotonicSeconds() + kLook);
    timespec ts;
    ts.tv_sec = static_cast<time_t>(std::floor(until));
    ts.tv_nsec = static_cast<long>((until - std::floor(until)) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    if (until >= t) return;
  }
}

}  // namespace

void EmulatedDevice::Prepare(uint64_t max_batch_bytes, uint32_t max_batch_samples) {
  capacity_ = max_batch_bytes;
  for (int i = 0; i < 2; ++i) {
    inputs_[i] = std::make_unique<std::byte[]>(max_batch_bytes);  // zeroed: pages faulted now
    labels_[i].assign(max_batch_samples, 0);
  }
}

double EmulatedDevice::CopyIn(int buffer, const DeviceBatch& batch) {
  if (batch.bytes() > capacity_) throw DeviceError("batch larger than the device input buffer");
  const double t0 = MonotonicSeconds();
  std::memcpy(inputs_[buffer].get(), batch.data, batch.bytes());
  if (batch.labels) {
    std::memcpy(labels_[buffer].data(), batch.labels, batch.samples * sizeof(uint32_t));
  }
  return MonotonicSeconds() - t0;
}

void EmulatedDevice::PrepareState(uint64_t bytes) {
  state_bytes_ = bytes;
  const uint64_t room = (std::max<uint64_t>(bytes, 1) + 4095) / 4096 * 4096;
  state_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, room)));
  if (!state_) throw std::bad_alloc();
  // A pattern that differs from word to word (xorshift), so a checkpoint's checksum sees
  // misplaced blocks; the padding is zero.
  auto* words = reinterpret_cast<uint64_t*>(state_.get());
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (uint64_t i = 0; i < room / 8; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    words[i] = i * 8 < bytes ? x : 0;
  }
}

void EmulatedDevice::Snapshot(std::byte* dst, uint64_t bytes) {
  std::memcpy(dst, state_.get(), std::min(bytes, state_bytes_));
}

void EmulatedDevice::LoadState(const std::byte* src, uint64_t bytes) {
  std::memcpy(state_.get(), src, std::min(bytes, state_bytes_));
}

StepTiming EmulatedDevice::Step(int buffer, const DeviceBatch& batch, double earliest_start) {
  StepTiming t;
  t.start = earliest_start;
  t.end = earliest_start + step_seconds_;
  t.busy = step_seconds_;
  if (step_seconds_ > 0) SleepUntil(t.end, interrupted_);
  return t;
}

}  // namespace stallscope
