#include "app/make_device.h"

#include <fmt/format.h>

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

std::unique_ptr<Device> MakeDevice(const Scenario& s) {
  const bool cuda =
      s.gpu.device == DeviceKind::kCuda || (s.gpu.device == DeviceKind::kAuto && CudaGpuPresent());
  if (!cuda) return std::make_unique<EmulatedDevice>(s.gpu.step_time);
#ifdef STALLSCOPE_HAVE_CUDA
  return std::make_unique<gpu::CudaDevice>(gpu::CudaDeviceOptions{
      .device = s.gpu, .scenario_file = s.file, .batch_size = s.loader.batch_size, .seed = s.seed});
#else
  throw BadInput(fmt::format(
      "{}: gpu.device: cuda: this stallscope was built without CUDA (no nvcc at configure "
      "time); use gpu.device: emulated or auto",
      s.file));
#endif
}

}  // namespace stallscope
