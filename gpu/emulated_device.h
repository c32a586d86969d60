// EmulatedDevice: a device without a GPU, for machines and tests that have none.
//
// CopyIn() really copies the batch (memcpy into one of two device-side input buffers, so
// the host memory traffic of a transfer is real). Step() is busy for exactly `step_time`
// against absolute deadlines: a step starts at max(previous step's end, batch arrival) and
// ends step_time later on the logical timeline, and the thread sleeps until that absolute
// time (clock_nanosleep TIMER_ABSTIME). Sleep overshoot therefore never counts as busy time
// and never accumulates from step to step — the flaw of sleep()-based emulators.
//
// Thread-safety: CopyIn() and Step() may run concurrently on different buffers.
#ifndef STALLSCOPE_GPU_EMULATED_DEVICE_H_
#define STALLSCOPE_GPU_EMULATED_DEVICE_H_

#include <atomic>
#include <memory>
#include <vector>

#include "pipeline/device.h"

namespace stallscope {

class EmulatedDevice final : public Device {
 public:
  explicit EmulatedDevice(double step_seconds) : step_seconds_(step_seconds) {}

  std::string name() const override { return "emulated"; }
  void Prepare(uint64_t max_batch_bytes, uint32_t max_batch_samples) override;
  double CopyIn(int buffer, const DeviceBatch& batch) override;
  StepTiming Step(int buffer, const DeviceBatch& batch, double earliest_start) override;
  double nominal_step_seconds() const override { return step_seconds_; }
  void Interrupt(bool on) override { interrupted_ = on; }
  // The state is host memory of its own, filled with a pattern; a snapshot is a memcpy.
  void PrepareState(uint64_t bytes) override;
  void Snapshot(std::byte* dst, uint64_t bytes) override;
  void LoadState(const std::byte* src, uint64_t bytes) override;
  const std::byte* host_state() const override { return state_.get(); }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte[], Free> state_;  // 4096-aligned (written with O_DIRECT)
  const double step_seconds_;
  std::atomic<bool> interrupted_{false};
  uint64_t capacity_ = 0;
  std::unique_ptr<std::byte[]> inputs_[2];
  std::vector<uint32_t> labels_[2];
};

}  // namespace stallscope

#endif  // STALLSCOPE_GPU_EMULATED_DEVICE_H_
