// Rung 9's launcher (gemm_tma.cu), called by LaunchGemm in gemm.cu for GemmKernel::kTmaWgmmaBf16.
// Callers use gemm.h; this header is the ladder's internal seam between its two files.
#ifndef STALLSCOPE_GPU_KERNELS_GEMM_TMA_H_
#define STALLSCOPE_GPU_KERNELS_GEMM_TMA_H_

#include <cuda_runtime_api.h>

namespace stallscope::gpu {

// True on a GPU of compute capability 9.0 (the sm_90a code of rungs 8 and 9 runs there only).
bool WgmmaRunsHere();

// C (m×n fp32) = A (m×k bf16) · Bᵀ where `bt` is n×k bf16, all row-major; m a multiple of 128,
// n of 256, k of 64; compute capability 9.0 only (the caller checks). Asynchronous on `stream`.
cudaError_t LaunchTmaWgmma(int m, int n, int k, const void* a, const void* bt, float* c,
                           cudaStream_t stream);

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_KERNELS_GEMM_TMA_H_
