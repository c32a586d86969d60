// `stallscope kernels`: the GEMM ladder (gpu/kernels/gemm.h) against cuBLAS on this GPU.
//
// For every size n (C = A·B with M = N = K = n) and every rung: fresh random inputs, the
// output poisoned with NaN, one run checked against a float64 cuBLAS reference
// (‖C − ref‖ / ‖ref‖ within the precision's bound, no NaN left), then timed with CUDA events
// after warm-up (median of repeated runs). The roofline: device-to-device copy bandwidth and
// the fastest cuBLAS rate per precision, both measured here; a size is compute-bound when its
// arithmetic intensity exceeds that ratio.
//
// Thread-safety: RunKernelLadder uses the current CUDA device and must run alone on it.
#ifndef STALLSCOPE_GPU_KERNEL_LADDER_H_
#define STALLSCOPE_GPU_KERNEL_LADDER_H_

#include <functional>
#include <string>
#include <vector>

namespace stallscope::gpu {

struct LadderRow {
  int size = 0;
  std::string kernel;     // "1 naive" … "cuBLAS SGEMM", "cuBLAS bf16"
  std::string precision;  // "fp32" | "bf16"
  bool ran = false;       // false: skipped (slow rung at a large size, wgmma off Hopper)
  double ms = 0, tflops = 0;
  double percent_of_cublas = 0;  // against cuBLAS of the same precision and size
  double relative_error = 0, error_bound = 0;
  bool valid = false;
  std::string bound;  // "compute-bound" | "memory-bound" (at this size, this precision)
};

struct LadderResult {
  std::string device;
  double copy_bandwidth = 0;            // bytes/s, device-to-device (read + write)
  double peak_fp32 = 0, peak_bf16 = 0;  // FLOP/s, fastest cuBLAS measured
  std::vector<LadderRow> rows;
};

struct LadderOptions {
  std::vector<int> sizes = {1024, 4096, 8192};
  int slow_rung_max_size = 4096;  // rungs 1–3 are skipped above this size
  std::function<void(const std::string&)> progress;
};

// Throws DeviceError when there is no GPU or a CUDA call fails.
LadderResult RunKernelLadder(const LadderOptions& options);

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_KERNEL_LADDER_H_
