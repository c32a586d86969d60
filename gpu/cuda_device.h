// CudaDevice: the pipeline's batches on a real GPU.
//
// Staging slots are the pipeline's own page-aligned buffers, pinned with cudaHostRegister
// (so the same memory can later be an io_uring fixed buffer). CopyIn() copies a batch and its
// labels on the copy stream into one of three device input buffers and records an event; the
// slot is released when that event completes. Launch() makes the compute stream wait on the
// event and enqueues one real training step of an MLP (gpu/mlp_model.h) on it, so the copy
// of batch k+1 overlaps the step of batch k. Steps queue (Device::queues_steps): step k+1 is
// launched while step k runs, so the stream goes from one step's graph to the next without
// waiting for the host; the third buffer takes batch k+2 meanwhile, and a copy into a buffer
// waits on the device for the step that last read it. Wait() returns a step's timing; a
// queued step starts where the one before it ended. NVTX ranges name the H2D copy and the
// step.
//
// Busy time: every step is bracketed by CUDA events; CUPTI records every kernel, and at the
// end (Finish) each step's busy time becomes the union of its kernels' intervals, with the
// event times kept as the cross-check. With gpu.model.hidden 0 the hidden width is calibrated
// at construction so that one step takes gpu.step_time.
//
// Data-parallel (JoinDataParallel): after the backward pass the gradients are summed across
// the ranks with ncclAllReduce on the compute stream, timed by CUDA events around it and
// reported apart (DeviceReport::allreduce_seconds). The ranks meet at a host-timed MPI
// barrier before every step (the pipeline's StepSync: the `sync` stall), so the all-reduce
// starts with every peer present and its time is communication, not waiting; it stays in the
// step's busy time (the GPU runs NCCL's kernel).
//
// Thread-safety: CopyIn() (copy thread) and Step() (device thread) run concurrently on
// different buffers, as the Device interface allows; the rest is single-threaded.
#ifndef STALLSCOPE_GPU_CUDA_DEVICE_H_
#define STALLSCOPE_GPU_CUDA_DEVICE_H_

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "gpu/device_options.h"
#include "pipeline/device.h"

namespace stallscope::gpu {

struct CudaDeviceOptions {
  DeviceOptions device;       // the scenario's gpu section (step_time, model, gemm)
  std::string scenario_file;  // for error messages
  uint32_t batch_size = 0;    // REQUIRES > 0: the loader's batch_size (rows per step)
  uint64_t seed = 0;          // the scenario's seed (the model's initial weights)
  bool cupti = true;
  int gpu = 0;  // the CUDA device index (a multi-rank run: the rank's index on its host)
};

// This device's place in a data-parallel job (multi-rank runs on CUDA devices): every rank
// joins with the same NCCL id and width, and from then on each step all-reduces the model's
// gradients with NCCL before the update.
struct DataParallelGroup {
  static constexpr size_t kIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
  std::array<char, kIdBytes> nccl_id{};    // NewNcclId() on rank 0, the same bytes everywhere
  int rank = 0;
  int ranks = 1;
  int hidden = 0;  // rank 0's (padded) hidden width: all replicas train one shape
};

// Thrown for what the user asked that this GPU cannot do (too large, unreachable step time):
// the CLI maps it to exit code 2.
class CudaSetupError : public BadInput {
 public:
  using BadInput::BadInput;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(const CudaDeviceOptions& options);
  ~CudaDevice() override;

  std::string name() const override;
  void Prepare(uint64_t max_batch_bytes, uint32_t max_batch_samples) override;
  double CopyIn(int buffer, const DeviceBatch& batch) override;
  StepTiming Step(int buffer, const DeviceBatch& batch, double earliest_start) override;
  // Steps queue on the compute stream (not in a data-parallel group, whose steps meet at a
  // barrier; STALLSCOPE_STEP_QUEUE=0 turns it off to compare).
  bool queues_steps() const override;
  int input_buffers() const override;
  void Launch(int buffer, const DeviceBatch& batch, double earliest_start) override;
  StepTiming Wait() override;
  double nominal_step_seconds() const override;
  void PinHost(void* p, uint64_t bytes) override;
  void UnpinHost(void* p) override;
  DeviceReport Finish(std::vector<StepTiming>& steps) override;
  // Checkpoints: the state is device memory of its own; a snapshot is a device-to-host copy
  // on a stream of its own (into memory the Checkpointer pinned), a restore the way back.
  void PrepareState(uint64_t bytes) override;
  void Snapshot(std::byte* dst, uint64_t bytes) override;
  void LoadState(const std::byte* src, uint64_t bytes) override;

  // A new NCCL communicator id (rank 0 makes it; the launcher's MPI carries it to the rest).
  static std::array<char, DataParallelGroup::kIdBytes> NewNcclId();
  // Joins the data-parallel group: rebuilds the model at the group's width when this
  // device's own calibration chose another, then creates the NCCL communicator (collective:
  // every rank calls it). Afterwards DeviceReport::allreduce_* measure the all-reduces.
  void JoinDataParallel(const DataParallelGroup& group);

  int hidden_width() const;
  double calibrated_step_seconds() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_CUDA_DEVICE_H_
