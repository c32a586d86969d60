#include "gpu/make_device.h"

#include <fmt/format.h>

#include "gpu/emulated_device.h"
#include "pipeline/runner.h"
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
  const bool cuda = s.gpu.device == "cuda" || (s.gpu.device == "auto" && CudaGpuPresent());
  if (!cuda) return std::make_unique<EmulatedDevice>(s.gpu.step_time);
#ifdef STALLSCOPE_HAVE_CUDA
  gpu::CudaDeviceOptions o;
  o.scenario_file = s.file;
  o.batch_size = s.loader.batch_size;
  o.input = s.gpu.model.input;
  o.hidden = s.gpu.model.hidden;
  o.layers = s.gpu.model.layers;
  o.classes = s.gpu.model.classes;
  o.step_time = s.gpu.step_time;
  o.own_gemm = s.gpu.gemm == "own";
  o.seed = s.seed;
  try {
    return std::make_unique<gpu::CudaDevice>(o);
  } catch (const gpu::CudaSetupError& e) {
    throw SetupError(e.what());
  }
#else
  throw SetupError(fmt::format(
      "{}: gpu.device: cuda: this stallscope was built without CUDA (no nvcc at configure "
      "time); use gpu.device: emulated or auto",
      s.file));
#endif
}

}  // namespace stallscope
