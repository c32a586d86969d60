#include "gpu/make_device.h"

#include "gpu/emulated_device.h"
#include "pipeline/runner.h"

namespace stallscope {

std::unique_ptr<Device> MakeDevice(const Scenario& s) {
  if (s.gpu.device == "cuda") {
    throw SetupError(s.file +
                     ": gpu.device: cuda is not available in this build (no CUDA device support "
                     "yet); use emulated or auto");
  }
  return std::make_unique<EmulatedDevice>(s.gpu.step_time);
}

}  // namespace stallscope
