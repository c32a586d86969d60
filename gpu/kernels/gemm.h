// The GEMM kernel ladder: one operation, C = A · B (row-major, M×K times K×N), written seven
// ways, each adding one idea to the last (nine rungs). Launchers are host functions; kernels live
// in gemm.cu. Every launcher is asynchronous on `stream` and returns the launch's error.
//
// Shapes: rungs 1–3 need M and N multiples of 32, rungs 4–6 multiples of 128, both K a
// multiple of 32; the bf16 tensor-core kernel needs M and N multiples of 256 and K of 64;
// the wgmma kernels (8, 9) M a multiple of 128, N of 256, K of 64.
// GemmShapeError() says what a shape lacks (empty = fine).
//
// Thread-safety: launchers are reentrant; kernels only read A and B and write C.
#ifndef STALLSCOPE_GPU_KERNELS_GEMM_H_
#define STALLSCOPE_GPU_KERNELS_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace stallscope::gpu {

enum class GemmKernel {
  kNaive,        // one thread per C element; consecutive threads walk down a column of C
  kCoalesced,    // consecutive threads walk along a row of C: B and C accesses coalesce
  kSharedTiled,  // 32×32 tiles of A and B staged in shared memory, each value read once per tile
  kRegister2D,   // 128×128 block tile, each thread computes an 8×8 sub-tile in registers
  kVectorized,   // float4 global and shared loads, A tile stored transposed, no bank conflicts
  kDoubleBuffered,  // the next K-tile is fetched into registers while the current one computes
  kTensorCoreBf16,  // bf16 mma.sync m16n8k16 tensor cores, fp32 accumulate, cp.async pipeline
  kWgmmaBf16,       // Hopper warpgroup MMA from swizzled shared memory (sm_90a only); B is N×K
  kTmaWgmmaBf16,    // TMA producer warp, wgmma consumer warpgroups, persistent grid (sm_90a)
};
inline constexpr GemmKernel kLastGemmKernel = GemmKernel::kTmaWgmmaBf16;

const char* GemmKernelName(GemmKernel k);
bool GemmKernelIsBf16(GemmKernel k);
// The wgmma rungs read B transposed: `b` is N×K row-major (each column of B contiguous).
bool GemmKernelTakesTransposedB(GemmKernel k);
// False for the wgmma rungs on a GPU other than compute capability 9.0 (or none).
bool GemmKernelRunsHere(GemmKernel k);

// Empty when kernel `k` handles this shape, otherwise the reason.
std::string GemmShapeError(GemmKernel k, int64_t m, int64_t n, int64_t k_dim);

// fp32 kernels: A, B, C float. bf16 kernels: A, B __nv_bfloat16 (passed as void*), C float.
cudaError_t LaunchGemm(GemmKernel k, int64_t m, int64_t n, int64_t k_dim, const void* a,
                       const void* b, float* c, cudaStream_t stream);

// The best own fp32 kernel (what gpu.gemm: own uses).
inline constexpr GemmKernel kBestOwnFp32 = GemmKernel::kDoubleBuffered;

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_KERNELS_GEMM_H_
