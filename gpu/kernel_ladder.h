// `stallscope kernels`: the GEMM ladder (gpu/kernels/gemm.h) against cuBLAS on this GPU.
//
// For every size n (C = A·B with M = N = K = n) and every rung, and for every extra shape
// M×N×K (the bf16 tensor-core rungs only): fresh random inputs, the output poisoned with NaN,
// one run checked against a float64 cuBLAS reference (‖C − ref‖ / ‖ref‖ within the
// precision's bound, no NaN left), then timed with CUDA events after warm-up (median of
// repeated runs). The bf16 rungs are timed alternately with cuBLAS bf16 on the same inputs,
// run by run in one loop (kAlternatedPairs pairs), so both see the same clocks and heat; their
// percentage of cuBLAS is the ratio of the two medians. The roofline: device-to-device copy
// bandwidth and the fastest cuBLAS rate per precision, both measured here; a size is compute-bound
// when its arithmetic intensity exceeds that ratio.
//
// Thread-safety: RunKernelLadder uses the current CUDA device and must run alone on it.
#ifndef STALLSCOPE_GPU_KERNEL_LADDER_H_
#define STALLSCOPE_GPU_KERNEL_LADDER_H_

#include <functional>
#include <string>
#include <vector>

namespace stallscope::gpu {

// Timed pairs (own rung, cuBLAS bf16) for each bf16 rung and shape.
inline constexpr int kAlternatedPairs = 25;

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

struct LadderRow {
  int size = 0;  // n of a square size; 0 for an extra shape
  GemmShape shape;
  std::string kernel;     // "1 naive" … "cuBLAS SGEMM", "cuBLAS bf16"
  std::string precision;  // "fp32" | "bf16"
  bool ran = false;       // false: skipped (slow rung at a large size, wgmma off Hopper)
  double ms = 0, tflops = 0;
  double percent_of_cublas = 0;  // against cuBLAS of the same precision and shape
  int alternated_pairs = 0;      // > 0: timed alternately with cuBLAS bf16 (median of each)
  double cublas_ms = 0;          // cuBLAS bf16's median in those pairs
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
  std::vector<GemmShape> shapes;  // extra M×N×K shapes, bf16 tensor-core rungs and cuBLAS bf16
  int slow_rung_max_size = 4096;  // rungs 1–3 are skipped above this size
  std::function<void(const std::string&)> progress;
};

// Throws DeviceError when there is no GPU or a CUDA call fails.
LadderResult RunKernelLadder(const LadderOptions& options);

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_KERNEL_LADDER_H_
