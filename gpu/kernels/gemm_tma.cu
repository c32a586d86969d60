// Rung 9 of the GEMM ladder (gemm.cu lists rungs 1–8): bf16 in, fp32 out, the loads taken off
// the warps that multiply.
//
//   9 tma-wgmma   one producer warp issues TMA bulk-tensor copies of 128-byte-swizzled tiles
//                 (the layout wgmma reads) into a 4-stage ring of shared memory, synchronized by
//                 full/empty mbarriers; two consumer warpgroups only wait and multiply (wgmma
//                 m64n256k16, one k-tile in flight) and hold the registers the producer gave up
//                 (setmaxnreg 40 / 232); a persistent grid of one block per SM walks the output
//                 tiles in groups of 16 tile rows (tiles that run together share A and B in L2),
//                 and while the consumers write one tile's C the producer already fills the ring
//                 with the next tile's operands.
//
// Compared with rung 8, no thread that runs a multiply also computes an address or waits for a
// copy, and the number of loads in flight is set by the ring, not by registers.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "gpu/kernels/gemm_tma.h"
#include "gpu/kernels/tma.cuh"
#include "gpu/kernels/wgmma.cuh"

namespace stallscope::gpu {
namespace {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define STALLSCOPE_TMA_BODY 1
#endif

constexpr int kBM = 128, kBK = 64;  // a tile row of K is one 128-byte swizzle line
constexpr int kConsumers = 2;       // warpgroups, 64 rows of the tile each
constexpr int kThreads = 128 * (1 + kConsumers);

template <int BN, int STAGES>
struct TmaConfig {
  static constexpr int kATile = kBM * kBK * 2, kBTile = BN * kBK * 2;
  static constexpr int kStage = kATile + kBTile;
  // The ring, 1 KiB of slack to align it to the swizzle atom, the barriers.
  static constexpr int kSmem = STAGES * kStage + 1024 + 2 * STAGES * 8;
};

#ifdef STALLSCOPE_TMA_BODY
constexpr int kGroupRows = 16;  // tile rows walked together (L2 reuse)

// Output tile t (in launch order) -> (tile row, tile column): down kGroupRows rows, then right.
__device__ __forceinline__ void TileOf(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroupRows * tiles_n;
  const int first = (t / per_group) * kGroupRows;
  const int rows = min(kGroupRows, tiles_m - first);
  const int r = t % per_group;
  tm = first + r % rows;
  tn = r / rows;
}

template <int BN>
__device__ __forceinline__ void MultiplyStage(float (&acc)[BN / 2], const unsigned char* a_rows,
                                              const unsigned char* b_tile) {
  wgmma::Fence();
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    const uint64_t da = wgmma::Descriptor(a_rows + kk * 32),
                   db = wgmma::Descriptor(b_tile + kk * 32);
    if constexpr (BN == 128) {
      wgmma::Wgmma64x128(acc, da, db, 1);
    } else {
      wgmma::Wgmma64x256(acc, da, db, 1);
    }
  }
  wgmma::Commit();
}
#endif

template <int BN, int STAGES, bool MOVE_REGISTERS>
__global__ void __launch_bounds__(kThreads, 1)
    GemmTmaWgmma(const __grid_constant__ CUtensorMap map_a,
                 const __grid_constant__ CUtensorMap map_bt, float* c, int m, int n, int k) {
#ifdef STALLSCOPE_TMA_BODY
  using C = TmaConfig<BN, STAGES>;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * C::kStage);
  uint64_t* empty = full + STAGES;
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      tma::BarrierInit(&full[s], 1);
      tma::BarrierInit(&empty[s], kConsumers * 4);  // every consumer warp
    }
    tma::FenceBarrierInit();
  }
  __syncthreads();
  const int tiles_m = m / kBM, tiles_n = n / BN, tiles = tiles_m * tiles_n, k_tiles = k / kBK;

  if (wg == 0) {  // the producer: one thread issues every copy
    if constexpr (MOVE_REGISTERS) tma::ReleaseRegisters<40>();
    if (threadIdx.x == 0) {
      tma::Prefetch(&map_a);
      tma::Prefetch(&map_bt);
      uint32_t it = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        TileOf(t, tiles_m, tiles_n, tm, tn);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
          const int s = it % STAGES;
          tma::Wait(&empty[s], ((it / STAGES) & 1) ^ 1);
          unsigned char* stage = smem + s * C::kStage;
          tma::ArriveExpectBytes(&full[s], C::kStage);
          tma::Load2D(stage, &map_a, kt * kBK, tm * kBM, &full[s]);
          tma::Load2D(stage + C::kATile, &map_bt, kt * kBK, tn * BN, &full[s]);
        }
      }
    }
    return;
  }

  if constexpr (MOVE_REGISTERS) tma::ClaimRegisters<232>();
  const int rows = (wg - 1) * 64;  // this consumer's 64 rows of the tile
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  uint32_t it = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int tm, tn;
    TileOf(t, tiles_m, tiles_n, tm, tn);
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0;
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const int s = it % STAGES;
      tma::Wait(&full[s], (it / STAGES) & 1);
      const unsigned char* stage = smem + s * C::kStage;
      MultiplyStage<BN>(acc, stage + rows * 128, stage + C::kATile);
      wgmma::Wait<1>();  // the previous k-tile's multiplies are done: its stage is free
      if (kt > 0 && lane == 0) tma::Arrive(&empty[(it - 1) % STAGES]);
    }
    wgmma::Wait<0>();
    if (lane == 0) tma::Arrive(&empty[(it - 1) % STAGES]);
    const int row = tm * kBM + rows + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = tn * BN + j * 8 + (lane % 4) * 2;
      *reinterpret_cast<float2*>(c + static_cast<int64_t>(row) * n + col) =
          make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(c + static_cast<int64_t>(row + 8) * n + col) =
          make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
#endif
}

// cuTensorMapEncodeTiled from the driver, found through the runtime (no link to libcuda, so
// the binary still starts on a host without a GPU driver).
PFN_cuTensorMapEncodeTiled_v12000 Encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      return PFN_cuTensorMapEncodeTiled_v12000{};
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// A rows × cols bf16 row-major matrix read in boxes of box_rows × 64, 128-byte swizzled.
bool EncodeMap(CUtensorMap* map, const void* base, int rows, int cols, int box_rows) {
  const auto encode = Encoder();
  if (!encode) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};
  const cuuint32_t box[2] = {kBK, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides,
                box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

int SmCount() {
  static const int count = [] {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
    return sms;
  }();
  return count;
}

template <int BN, int STAGES, bool MOVE_REGISTERS = true>
cudaError_t Launch(int m, int n, int k, const void* a, const void* bt, float* c,
                   cudaStream_t stream) {
  using C = TmaConfig<BN, STAGES>;
  auto* kernel = GemmTmaWgmma<BN, STAGES, MOVE_REGISTERS>;
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem);
  if (attr != cudaSuccess) return attr;
  if (m % kBM || n % BN || k % kBK) return cudaErrorInvalidValue;
  CUtensorMap map_a{}, map_bt{};
  if (!EncodeMap(&map_a, a, m, k, kBM) || !EncodeMap(&map_bt, bt, n, k, BN)) {
    return cudaErrorInvalidValue;
  }
  const int tiles = (m / kBM) * (n / BN);
  const int grid = SmCount() > 0 ? std::min(SmCount(), tiles) : tiles;
  kernel<<<grid, kThreads, C::kSmem, stream>>>(map_a, map_bt, c, m, n, k);
  return cudaGetLastError();
}

}  // namespace

bool WgmmaRunsHere() {
  static const bool ok = [] {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return major == 9 && minor == 0;
  }();
  return ok;
}

// 0: 128×256×64 tiles, 4 stages (default)   1: 128×128×64, 6 stages
// 2: as 0 without setmaxnreg
cudaError_t LaunchTmaWgmma(int m, int n, int k, const void* a, const void* bt, float* c,
                           cudaStream_t stream) {
  static const int config = [] {
    const char* e = std::getenv("STALLSCOPE_TMA_CONFIG");
    return e ? std::atoi(e) : 0;
  }();
  if (config == 1) return Launch<128, 6>(m, n, k, a, bt, c, stream);
  if (config == 2) return Launch<256, 4, false>(m, n, k, a, bt, c, stream);
  return Launch<256, 4>(m, n, k, a, bt, c, stream);
}

}  // namespace stallscope::gpu
