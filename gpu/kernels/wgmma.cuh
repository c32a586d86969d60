// Hopper warpgroup matrix-multiply (wgmma) wrappers for gemm.cu's rung 8: the descriptor of
// a 128-byte-swizzled K-major shared-memory tile, the fences, and one asm statement per
// shape with its accumulator registers written out (wgmma takes them as a flat list).
// Only for sm_90a code (__CUDA_ARCH_FEAT_SM90_ALL); see gemm.cu.
#ifndef STALLSCOPE_GPU_KERNELS_WGMMA_CUH_
#define STALLSCOPE_GPU_KERNELS_WGMMA_CUH_

#include <cstdint>

namespace stallscope::gpu::wgmma {

// Shared-memory matrix descriptor: start address, leading offset 16 B (unused when a K step
// stays inside a swizzle row), stride 1024 B between 8-row groups, 128-byte swizzle.
__device__ __forceinline__ uint64_t Descriptor(const void* smem) {
  const uint64_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return ((addr & 0x3FFFF) >> 4) | (uint64_t{16 >> 4} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

__device__ __forceinline__ void Fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void Commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void Wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes (cp.async) before the tensor
// cores' async-proxy reads.
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// wgmma takes its accumulators as a flat list of registers: the asm's operand numbers for
// 64 and for 128 of them, and the matching "+f" operands (8 and 64 at a time, from d[i]).
#define STALLSCOPE_WGMMA_REGS_0_63 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, " \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, " \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define STALLSCOPE_WGMMA_REGS_64_127 \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, " \
  "%81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, " \
  "%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, " \
  "%113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define STALLSCOPE_WGMMA_D8(i) \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), \
      "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define STALLSCOPE_WGMMA_D64(i)                                                             \
  STALLSCOPE_WGMMA_D8(i), STALLSCOPE_WGMMA_D8((i) + 8), STALLSCOPE_WGMMA_D8((i) + 16),     \
      STALLSCOPE_WGMMA_D8((i) + 24), STALLSCOPE_WGMMA_D8((i) + 32),                         \
      STALLSCOPE_WGMMA_D8((i) + 40), STALLSCOPE_WGMMA_D8((i) + 48), STALLSCOPE_WGMMA_D8((i) + 56)

__device__ __forceinline__ void Wgmma64x128(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                            int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" STALLSCOPE_WGMMA_REGS_0_63
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : STALLSCOPE_WGMMA_D64(0)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void Wgmma64x256(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                            int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" STALLSCOPE_WGMMA_REGS_0_63
      ", " STALLSCOPE_WGMMA_REGS_64_127 "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : STALLSCOPE_WGMMA_D64(0), STALLSCOPE_WGMMA_D64(64)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

#undef STALLSCOPE_WGMMA_D64
#undef STALLSCOPE_WGMMA_D8
#undef STALLSCOPE_WGMMA_REGS_64_127
#undef STALLSCOPE_WGMMA_REGS_0_63

}  // namespace stallscope::gpu::wgmma

#endif  // STALLSCOPE_GPU_KERNELS_WGMMA_CUH_
