// Chooses the Device a scenario asks for (gpu.device: auto | cuda | emulated).
//
// This build has no CUDA device yet: `auto` picks the emulated device and `cuda` is a
// SetupError (exit code 2). Thread-safety: a plain function.
#ifndef STALLSCOPE_GPU_MAKE_DEVICE_H_
#define STALLSCOPE_GPU_MAKE_DEVICE_H_

#include <memory>

#include "pipeline/device.h"
#include "pipeline/scenario.h"

namespace stallscope {

std::unique_ptr<Device> MakeDevice(const Scenario& scenario);

}  // namespace stallscope

#endif  // STALLSCOPE_GPU_MAKE_DEVICE_H_
