// Chooses the Device a scenario asks for (gpu.device: auto | cuda | emulated).
//
// `auto` is the CUDA device where this build has CUDA and a GPU is visible, else the
// emulated one. `cuda` without a GPU, or a model this GPU cannot hold or time, is a
// BadInput (exit code 2).
//
// Multi-rank runs: the rank `local_rank` of the `local_ranks` ranks on its host drives CUDA
// device `local_rank`. `auto` is CUDA only when every local rank has a GPU of its own;
// `cuda` with more local ranks than GPUs is a BadInput. Thread-safety: plain functions.
#ifndef STALLSCOPE_APP_MAKE_DEVICE_H_
#define STALLSCOPE_APP_MAKE_DEVICE_H_

#include <memory>
#include <string>

#include "config/scenario.h"
#include "pipeline/device.h"

namespace stallscope {

std::unique_ptr<Device> MakeDevice(const Scenario& scenario, int local_rank = 0,
                                   int local_ranks = 1);

class MpiJob;
// A multi-rank run's devices before the first step. Every rank of `job` calls both.
// Collective check: a message (the same on every rank) when some ranks drive CUDA devices
// and others emulated ones, which cannot train one model together; "" when they agree.
std::string MixedDevices(const Device& device, MpiJob& job);
// CUDA devices join one data-parallel group (rank 0's model width, an NCCL communicator
// from rank 0's id carried by MPI): each step then all-reduces the gradients. Emulated
// devices need nothing: their steps meet at the pipeline's per-step barrier.
void JoinDataParallel(Device& device, MpiJob& job);

// True where this build has CUDA and a GPU is visible.
bool CudaGpuPresent();

}  // namespace stallscope

#endif  // STALLSCOPE_APP_MAKE_DEVICE_H_
