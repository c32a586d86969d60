// The gpu library's settings: the scenario's `gpu` section (scenarios/README.md documents
// every key; each field's default here is the key's only default).
//
// Thread-safety: plain values.
#ifndef STALLSCOPE_GPU_DEVICE_OPTIONS_H_
#define STALLSCOPE_GPU_DEVICE_OPTIONS_H_

#include <cstdint>

#include "base/names.h"

namespace stallscope {

// auto: the GPU where this build has CUDA and one is visible, else emulated.
enum class DeviceKind { kAuto, kCuda, kEmulated };
constexpr NameTable<DeviceKind, 3> kDeviceKindNames = {{{DeviceKind::kAuto, "auto"},
                                                        {DeviceKind::kCuda, "cuda"},
                                                        {DeviceKind::kEmulated, "emulated"}}};
inline const char* NameOf(DeviceKind k) { return NameOf(kDeviceKindNames, k); }

// cublas: cuBLAS SGEMM; own: the kernel ladder's best fp32 kernel (gpu/kernels/gemm.h).
enum class GemmKind { kCublas, kOwn };
constexpr NameTable<GemmKind, 2> kGemmKindNames = {
    {{GemmKind::kCublas, "cublas"}, {GemmKind::kOwn, "own"}}};
inline const char* NameOf(GemmKind k) { return NameOf(kGemmKindNames, k); }

enum class ModelKind { kMlp };
constexpr NameTable<ModelKind, 1> kModelKindNames = {{{ModelKind::kMlp, "mlp"}}};

// gpu.model: the CUDA training step's MLP.
struct ModelOptions {
  ModelKind kind = ModelKind::kMlp;
  uint32_t input = 1024;  // features: the first `input` of each staged row
  uint32_t hidden = 0;    // width; 0 = calibrate to step_time
  uint32_t layers = 4;
  uint32_t classes = 100;  // outputs

  bool operator==(const ModelOptions&) const = default;
};

struct DeviceOptions {
  DeviceKind device = DeviceKind::kAuto;
  double step_time = 0.050;  // seconds: emulated busy time per step; cuda calibration target
  ModelOptions model;
  GemmKind gemm = GemmKind::kCublas;
  // Each training step replayed as a CUDA graph (captured once per input buffer and batch
  // shape): one launch instead of a step's ~35. false: every kernel launched one by one.
  bool graph = true;

  bool operator==(const DeviceOptions&) const = default;
};

}  // namespace stallscope

#endif  // STALLSCOPE_GPU_DEVICE_OPTIONS_H_
