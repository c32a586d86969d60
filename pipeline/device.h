// Device: what the pipeline feeds. The pipeline knows this interface and never CUDA.
//
// A device has two input buffers (double buffering): the copy of batch k+1 into one buffer
// overlaps the training step on batch k in the other. The pipeline calls CopyIn() from its
// copy thread and Step() (or Launch() and Wait()) from its device thread; a buffer is never
// copied into while a step reads it (a device that queues steps orders the two itself, see
// queues_steps()). Implementations: EmulatedDevice (gpu/emulated_device.h) and, on a GPU host,
// CudaDevice.
//
// Times are MonotonicSeconds(): seconds on the steady clock, shared by every stage.
//
// Thread-safety: CopyIn() and Step() (or Launch() and Wait()) are called from two different
// threads concurrently, on different buffers.
#ifndef STALLSCOPE_PIPELINE_DEVICE_H_
#define STALLSCOPE_PIPELINE_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/errors.h"

namespace stallscope {

// ImageNet's normalization as v · scale[c] + shift[c] = (v / 255 − mean[c]) / std[c]: what
// jpeg-decode applies to its crop, on the host's workers or, for rows of pixels
// (DeviceBatch::image_side), on the device.
struct ImageNorm {
  float scale[3], shift[3];
};
inline ImageNorm ImageNetNorm() {
  constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
  constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
  ImageNorm n;
  for (int c = 0; c < 3; ++c) {
    n.scale[c] = 1.0f / (255.0f * kStd[c]);
    n.shift[c] = -kMean[c] / kStd[c];
  }
  return n;
}

// A staged batch in host memory, laid out as `samples` rows of `row_bytes`.
struct DeviceBatch {
  uint64_t step = 0;
  uint32_t samples = 0;
  const std::byte* data = nullptr;
  uint64_t row_bytes = 0;
  bool rows_are_floats = false;  // normalized float32 rows, or raw bytes
  // > 0: each row is a square image's HWC uint8 pixels of this side, which the device
  // normalizes (ImageNet mean and std) into CHW floats, as jpeg-decode does on the host.
  uint32_t image_side = 0;
  const uint32_t* labels = nullptr;
  uint64_t bytes() const { return samples * row_bytes; }
};

struct StepTiming {
  double start = 0;  // when the step began on the device
  double end = 0;    // when it finished
  double busy = 0;   // device busy seconds within [start, end]
};

// What a device measured beyond the step timings (the CUDA device: CUPTI records, CUDA
// events, the H2D copies and the training loss). Empty for the emulated device.
struct DeviceReport {
  std::string busy_source;         // "cupti" or "events" (how StepTiming::busy was measured)
  std::vector<double> event_busy;  // per step: seconds between CUDA events around the step
  uint64_t h2d_bytes = 0;          // batches copied host to device
  double h2d_seconds = 0;          // copy-engine time of those copies
  double h2d_overlap_seconds = 0;  // of which a training kernel ran at the same time
  uint64_t allreduce_bytes = 0;    // data-parallel: gradient bytes all-reduced
  double allreduce_seconds = 0;    // their time on the GPU (CUDA events around each)
  std::vector<float> loss;         // per step: mean training loss of the batch
  std::vector<std::pair<std::string, double>> facts;  // e.g. model width, calibrated step
  std::vector<std::string> notes;                     // e.g. why CUPTI was not used
};

class DeviceError : public RunFailed {
 public:
  using RunFailed::RunFailed;
};

class Device {
 public:
  virtual ~Device() = default;
  // "emulated", "cuda:NVIDIA H200".
  virtual std::string name() const = 0;
  // Allocates the two input buffers. Called once before the first CopyIn().
  virtual void Prepare(uint64_t max_batch_bytes, uint32_t max_batch_samples) = 0;
  // Copies `batch` into input buffer `buffer` (0 or 1). When it returns, the host memory
  // may be reused. Returns the seconds the copy took on the device's copy engine.
  virtual double CopyIn(int buffer, const DeviceBatch& batch) = 0;
  // Runs one training step on `buffer`. The step may not start before `earliest_start`
  // (when the previous step ended, or when this batch arrived, whichever is later).
  // Blocks until the step is complete.
  virtual StepTiming Step(int buffer, const DeviceBatch& batch, double earliest_start) = 0;
  // Queued steps, as a training loop keeps a GPU's stream fed: Launch() starts a step as
  // Step() does but may return before it is complete; Wait() blocks until the oldest launched
  // step is complete and returns its timing. A device that says queues_steps() accepts a
  // second Launch() before the first one's Wait(), and then makes CopyIn() into a buffer wait
  // (on the device) for the step still reading it; the pipeline launches step k+1 before
  // waiting for step k whenever batch k+1 is already on the device, so the GPU does not idle
  // through the host's turn-around between the steps. Timings stay in step order and do not
  // overlap: a queued step starts when the one before it ended. The default runs Step() in
  // Launch(), which never queues.
  virtual bool queues_steps() const { return false; }
  // Input buffers the pipeline cycles through: batch k goes to buffer k % input_buffers().
  // A device that queues steps has three, so that the next batch's copy need not wait for
  // the queued step (at least two).
  virtual int input_buffers() const { return 2; }
  virtual void Launch(int buffer, const DeviceBatch& batch, double earliest_start) {
    launched_ = Step(buffer, batch, earliest_start);
  }
  virtual StepTiming Wait() { return launched_; }
  // Busy seconds a step takes when fed at once (the GPU's demand: batch / step_seconds).
  virtual double nominal_step_seconds() const = 0;
  // A stop is pending (true) or a run begins (false). A device whose steps can be cut short
  // (the emulated one's sleep) ends the step in progress at once; the pipeline then discards
  // it (it returned before its StepTiming::end). Safe from any thread.
  virtual void Interrupt(bool /*on*/) {}

  // Staging memory the pipeline copies from, offered for pinning (CUDA: cudaHostRegister,
  // so the copy engine reads it directly). UnpinHost() comes before the memory is freed.
  virtual void PinHost(void* p, uint64_t bytes) {}
  virtual void UnpinHost(void* p) {}

  // Checkpoints (checkpoint.*): the device holds `bytes` of model state, allocated and
  // filled once by PrepareState() before the first step. Snapshot() copies it into host
  // memory `dst` (the emulated device: a memcpy; CUDA: a device-to-host copy) and returns when
  // the copy is complete; LoadState() puts a restored checkpoint back.
  virtual void PrepareState(uint64_t bytes) { state_bytes_ = bytes; }
  virtual void Snapshot(std::byte* dst, uint64_t bytes) {}
  virtual void LoadState(const std::byte* src, uint64_t bytes) {}
  // The state when it lives in host memory already (the emulated device), so a synchronous
  // checkpoint is written from it without a snapshot; nullptr otherwise.
  virtual const std::byte* host_state() const { return nullptr; }

  // After the last step: a device that measures the GPU itself may replace each step's busy
  // seconds (CUPTI's union of kernel intervals) and reports what else it measured.
  virtual DeviceReport Finish(std::vector<StepTiming>& steps) { return {}; }

 protected:
  uint64_t state_bytes_ = 0;

 private:
  StepTiming launched_;  // the default Launch()'s, until Wait()
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_DEVICE_H_
