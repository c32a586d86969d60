// Chooses the Device a scenario asks for (gpu.device: auto | cuda | emulated).
//
// `auto` is the CUDA device where this build has CUDA and a GPU is visible, else the
// emulated one. `cuda` without a GPU, or a model this GPU cannot hold or time, is a
// BadInput (exit code 2). Thread-safety: a plain function.
#ifndef STALLSCOPE_APP_MAKE_DEVICE_H_
#define STALLSCOPE_APP_MAKE_DEVICE_H_

#include <memory>

#include "config/scenario.h"
#include "pipeline/device.h"

namespace stallscope {

std::unique_ptr<Device> MakeDevice(const Scenario& scenario);

// True where this build has CUDA and a GPU is visible.
bool CudaGpuPresent();

}  // namespace stallscope

#endif  // STALLSCOPE_APP_MAKE_DEVICE_H_
