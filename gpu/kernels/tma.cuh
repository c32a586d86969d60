// Hopper's tensor memory accelerator (TMA) and transaction barriers for gemm_tma.cu's rung 9:
// mbarrier set-up, arrival and waiting by phase parity, a 2-D tiled bulk copy from global to
// shared memory that reports its bytes to an mbarrier, and setmaxnreg (moving registers
// between warpgroups). Only for sm_90a code (__CUDA_ARCH_FEAT_SM90_ALL).
//
// The pipeline idiom (CUTLASS's PipelineTmaAsync, written out): each shared-memory stage has a
// "full" barrier (the producer arrives once with the stage's byte count; the TMA unit's
// completed bytes finish the phase) and an "empty" barrier (every consumer warp arrives when
// its multiplies have read the stage). Iteration i uses stage i % S in phase (i / S) & 1; the
// producer waits on the empty barrier's previous phase, which a fresh barrier has completed.
#ifndef STALLSCOPE_GPU_KERNELS_TMA_CUH_
#define STALLSCOPE_GPU_KERNELS_TMA_CUH_

#include <cuda.h>

#include <cstdint>

namespace stallscope::gpu::tma {

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void BarrierInit(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(SharedAddress(bar)), "r"(arrivals)
               : "memory");
}

// Makes the barriers' initialization visible to the async proxy (the TMA unit).
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also tells the barrier to expect `bytes` of transactions this phase.
__device__ __forceinline__ void ArriveExpectBytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(SharedAddress(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void Arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(SharedAddress(bar)) : "memory");
}

// Returns once the barrier's phase of this parity has completed.
__device__ __forceinline__ void Wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = SharedAddress(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}

// The box of `map` whose first element is at (x, y) (x the contiguous dimension) into shared
// memory at `dst`; its bytes complete on `bar`.
__device__ __forceinline__ void Load2D(void* dst, const CUtensorMap* map, int x, int y,
                                       uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(SharedAddress(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(SharedAddress(bar))
      : "memory");
}

__device__ __forceinline__ void Prefetch(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Every warp of a warpgroup executes these together.
template <int kRegisters>
__device__ __forceinline__ void ReleaseRegisters() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void ClaimRegisters() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

}  // namespace stallscope::gpu::tma

#endif  // STALLSCOPE_GPU_KERNELS_TMA_CUH_
