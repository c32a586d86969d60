#include "gpu/emulated_device.h"

#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace stallscope {
namespace {

// Sleeps until MonotonicSeconds() reaches `t` (steady_clock is CLOCK_MONOTONIC on Linux).
void SleepUntil(double t) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(std::floor(t));
  ts.tv_nsec = static_cast<long>((t - std::floor(t)) * 1e9);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
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

StepTiming EmulatedDevice::Step(int buffer, const DeviceBatch& batch, double earliest_start) {
  StepTiming t;
  t.start = earliest_start;
  t.end = earliest_start + step_seconds_;
  t.busy = step_seconds_;
  if (step_seconds_ > 0) SleepUntil(t.end);
  return t;
}

}  // namespace stallscope
