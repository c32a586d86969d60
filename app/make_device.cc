#include "app/make_device.h"

#include <fmt/format.h>

#include "app/errors.h"
#include "app/mpi_job.h"
#include "app/runner.h"
#include "gpu/emulated_device.h"
#ifdef STALLSCOPE_HAVE_CUDA
#include "gpu/cuda_device.h"
#include "gpu/cuda_util.h"
#endif

namespace stallscope {

bool CudaGpuPresent() {
#ifdef STALLSCOPE_HAVE_CUDA
  return gpu::CudaDeviceCount() > 0;
#else
  return false;
#endif
}

std::unique_ptr<Device> MakeDevice(const Scenario& s, int local_rank, int local_ranks) {
  const SettingUp doing(
      fmt::format("setting up the {} device (variant {})", NameOf(s.gpu.device), s.variant));
  const bool enough = CudaGpuPresent() &&
#ifdef STALLSCOPE_HAVE_CUDA
                      gpu::CudaDeviceCount() >= local_ranks;
#else
                      false;
#endif
  const bool cuda =
      s.gpu.device == DeviceKind::kCuda || (s.gpu.device == DeviceKind::kAuto && enough);
  if (!cuda) return std::make_unique<EmulatedDevice>(s.gpu.step_time);
#ifdef STALLSCOPE_HAVE_CUDA
  if (CudaGpuPresent() && !enough) {
    throw BadInput(fmt::format(
        "{}: gpu.device: cuda: {} ranks on this host but {} GPU(s) visible; each rank needs a "
        "GPU of its own: launch at most {} ranks per host (mpirun --map-by ppr:{}:node) or use "
        "gpu.device: emulated",
        s.file, local_ranks, gpu::CudaDeviceCount(), gpu::CudaDeviceCount(),
        gpu::CudaDeviceCount()));
  }
  return std::make_unique<gpu::CudaDevice>(gpu::CudaDeviceOptions{.device = s.gpu,
                                                                  .scenario_file = s.file,
                                                                  .batch_size = s.loader.batch_size,
                                                                  .seed = s.seed,
                                                                  .gpu = local_rank});
#else
  throw BadInput(fmt::format(
      "{}: gpu.device: cuda: this stallscope was built without CUDA (no nvcc at configure "
      "time); use gpu.device: emulated or auto",
      s.file));
#endif
}

namespace {

bool IsCuda(const Device& device) {
#ifdef STALLSCOPE_HAVE_CUDA
  return dynamic_cast<const gpu::CudaDevice*>(&device) != nullptr;
#else
  return false;
#endif
}

}  // namespace

std::string MixedDevices(const Device& device, MpiJob& job) {
  const bool cuda = IsCuda(device);
  const bool any_cuda = job.AnyRank(cuda);
  const bool any_emulated = job.AnyRank(!cuda);
  if (!any_cuda || !any_emulated) return "";
  return "gpu.device: auto chose CUDA devices on some ranks and emulated ones on others (hosts "
         "with and without enough GPUs); one data-parallel job needs one kind: set gpu.device "
         "to cuda or emulated";
}

void JoinDataParallel(Device& device, MpiJob& job) {
#ifdef STALLSCOPE_HAVE_CUDA
  auto* cuda = dynamic_cast<gpu::CudaDevice*>(&device);
  if (!cuda) return;
  gpu::DataParallelGroup g;
  g.rank = job.rank();
  g.ranks = job.size();
  g.hidden = cuda->hidden_width();
  job.Broadcast(&g.hidden, sizeof g.hidden);
  if (job.rank() == 0) g.nccl_id = gpu::CudaDevice::NewNcclId();
  job.Broadcast(g.nccl_id.data(), g.nccl_id.size());
  cuda->JoinDataParallel(g);
#endif
}

}  // namespace stallscope
