// The GEMM ladder: C = A · B, row-major, each version adding one idea to the one before.
//
//   1 naive           one thread per element of C; threadIdx.x runs down a column of C, so a
//                     warp reads 32 different rows of A (32 transactions) and writes C strided.
//   2 coalesced       threadIdx.x runs along a row of C: a warp reads one row of B and writes
//                     one row of C in whole 128-byte lines; A's value is a broadcast.
//   3 shared-tiled    32×32 tiles of A and B are staged in shared memory, so each global value
//                     is read once per tile instead of once per multiply-add.
//   4 register-2d     a 128×128 block tile, each thread computing an 8×8 sub-tile held in
//                     registers: 16 multiply-adds per pair of shared-memory loads, not 1.
//   5 vectorized      float4 loads from global and shared memory; the A tile is stored
//                     transposed and each thread owns two 4-wide strips 64 apart, so a warp's
//                     shared-memory reads hit 32 distinct banks and C is written as float4.
//   6 double-buffered two shared-memory buffers: the next K-tile is loaded into registers
//                     while the current one is computed, one barrier per tile.
//   7 tensor-core     bf16 inputs, fp32 accumulation on the tensor cores (mma.sync
//                     m16n8k16); ldmatrix from padded (conflict-free) shared memory, filled
//                     by a multi-stage cp.async pipeline; 128×128×64 block tiles, 64×32 per
//                     warp (other tilings selectable with STALLSCOPE_TC_CONFIG, see below).
//   8 wgmma           Hopper's warpgroup MMA (sm_90a): two warpgroups each multiply a 64-row
//                     slab of A by the whole B tile straight from shared memory (no ldmatrix,
//                     no register fragments), asynchronously, one k-tile in flight while the
//                     next is issued; tiles 128×256×64 in 128-byte-swizzled K-major layout,
//                     filled by a 4-stage cp.async pipeline. B is given transposed (N×K).
//   9 tma-wgmma       gemm_tma.cu: TMA producer warp, consumer warpgroups, persistent grid.
//
// cuBLAS (fp32 SGEMM and bf16 GemmEx) is the bar; the ladder's driver is gpu/kernel_ladder.cc.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdlib>

#include "gpu/kernels/gemm.h"
#include "gpu/kernels/gemm_tma.h"
#include "gpu/kernels/wgmma.cuh"

namespace stallscope::gpu {
namespace {

// --- 1 naive and 2 coalesced: the same dot product, threads mapped differently ---------------
__device__ __forceinline__ void DotProduct(int m, int n, int k, const float* a, const float* b,
                                           float* c, int row, int col) {
  if (row >= m || col >= n) return;
  float acc = 0;
  for (int i = 0; i < k; ++i) {
    acc += a[static_cast<int64_t>(row) * k + i] * b[static_cast<int64_t>(i) * n + col];
  }
  c[static_cast<int64_t>(row) * n + col] = acc;
}

__global__ void GemmNaive(int m, int n, int k, const float* a, const float* b, float* c) {
  // threadIdx.x runs down a column of C: a warp touches 32 rows of A and of C.
  DotProduct(m, n, k, a, b, c, blockIdx.x * blockDim.x + threadIdx.x,
             blockIdx.y * blockDim.y + threadIdx.y);
}

__global__ void GemmCoalesced(int m, int n, int k, const float* a, const float* b, float* c) {
  // threadIdx.x runs along a row of C: a warp reads one row of B and writes one row of C.
  DotProduct(m, n, k, a, b, c, blockIdx.y * blockDim.y + threadIdx.y,
             blockIdx.x * blockDim.x + threadIdx.x);
}

// --- 3 shared-tiled -----------------------------------------------------------------------
__global__ void GemmSharedTiled(int m, int n, int k, const float* a, const float* b, float* c) {
  __shared__ float as[32][32];
  __shared__ float bs[32][32];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
  float acc = 0;
  for (int k0 = 0; k0 < k; k0 += 32) {
    as[ty][tx] = a[static_cast<int64_t>(row) * k + k0 + tx];
    bs[ty][tx] = b[static_cast<int64_t>(k0 + ty) * n + col];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 32; ++i) acc += as[ty][i] * bs[i][tx];
    __syncthreads();
  }
  c[static_cast<int64_t>(row) * n + col] = acc;
}

// --- 4 register-2d ------------------------------------------------------------------------
constexpr int kBm = 128, kBn = 128, kBk = 8, kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    GemmRegister2D(int m, int n, int k, const float* a, const float* b, float* c) {
  __shared__ float as[kBm][kBk];
  __shared__ float bs[kBk][kBn];
  const int tid = threadIdx.x, tr = tid / 16, tc = tid % 16;
  const int bm = blockIdx.y * kBm, bn = blockIdx.x * kBn;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < k; k0 += kBk) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kThreads;
      as[e / kBk][e % kBk] = a[static_cast<int64_t>(bm + e / kBk) * k + k0 + e % kBk];
      bs[e / kBn][e % kBn] = b[static_cast<int64_t>(k0 + e / kBn) * n + bn + e % kBn];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBk; ++kk) {
      float ra[8], rb[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) ra[i] = as[tr * 8 + i][kk];
#pragma unroll
      for (int j = 0; j < 8; ++j) rb[j] = bs[kk][tc * 8 + j];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      c[static_cast<int64_t>(bm + tr * 8 + i) * n + bn + tc * 8 + j] = acc[i][j];
}

// --- 5 vectorized and 6 double-buffered share their inner step ------------------------------
// Thread (tr, tc) owns rows {tr*4 .. tr*4+3, 64+tr*4 ..} and columns {tc*4 .., 64+tc*4 ..}.
__device__ __forceinline__ void OuterProducts(const float (*ast)[kBm], const float (*bs)[kBn],
                                              int tr, int tc, float (&acc)[8][8]) {
#pragma unroll
  for (int kk = 0; kk < kBk; ++kk) {
    const float4 a0 = *reinterpret_cast<const float4*>(&ast[kk][tr * 4]);
    const float4 a1 = *reinterpret_cast<const float4*>(&ast[kk][64 + tr * 4]);
    const float4 b0 = *reinterpret_cast<const float4*>(&bs[kk][tc * 4]);
    const float4 b1 = *reinterpret_cast<const float4*>(&bs[kk][64 + tc * 4]);
    const float ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    const float rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[i][j] += ra[i] * rb[j];
  }
}

__device__ __forceinline__ void StoreTile(const float (&acc)[8][8], int n, int bm, int bn, int tr,
                                          int tc, float* c) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = bm + (i < 4 ? tr * 4 + i : 64 + tr * 4 + i - 4);
    float* out = c + static_cast<int64_t>(row) * n + bn;
    *reinterpret_cast<float4*>(out + tc * 4) =
        make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(out + 64 + tc * 4) =
        make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

// One float4 of the A tile (row tid/2, columns (tid%2)*4..) and one of the B tile
// (row tid/32, columns (tid%32)*4..).
__device__ __forceinline__ void LoadTile(const float* a, const float* b, int n, int k, int bm,
                                         int bn, int k0, int tid, float4& ra, float4& rb) {
  ra = *reinterpret_cast<const float4*>(a + static_cast<int64_t>(bm + tid / 2) * k + k0 +
                                        (tid % 2) * 4);
  rb = *reinterpret_cast<const float4*>(b + static_cast<int64_t>(k0 + tid / 32) * n + bn +
                                        (tid % 32) * 4);
}

__device__ __forceinline__ void StoreShared(const float4& ra, const float4& rb, int tid,
                                            float (*ast)[kBm], float (*bs)[kBn]) {
  const int r = tid / 2, c4 = (tid % 2) * 4;
  ast[c4 + 0][r] = ra.x;
  ast[c4 + 1][r] = ra.y;
  ast[c4 + 2][r] = ra.z;
  ast[c4 + 3][r] = ra.w;
  *reinterpret_cast<float4*>(&bs[tid / 32][(tid % 32) * 4]) = rb;
}

__global__ void __launch_bounds__(kThreads)
    GemmVectorized(int m, int n, int k, const float* a, const float* b, float* c) {
  __shared__ __align__(16) float ast[kBk][kBm];
  __shared__ __align__(16) float bs[kBk][kBn];
  const int tid = threadIdx.x, tr = tid / 16, tc = tid % 16;
  const int bm = blockIdx.y * kBm, bn = blockIdx.x * kBn;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < k; k0 += kBk) {
    float4 ra, rb;
    LoadTile(a, b, n, k, bm, bn, k0, tid, ra, rb);
    StoreShared(ra, rb, tid, ast, bs);
    __syncthreads();
    OuterProducts(ast, bs, tr, tc, acc);
    __syncthreads();
  }
  StoreTile(acc, n, bm, bn, tr, tc, c);
}

__global__ void __launch_bounds__(kThreads)
    GemmDoubleBuffered(int m, int n, int k, const float* a, const float* b, float* c) {
  __shared__ __align__(16) float ast[2][kBk][kBm];
  __shared__ __align__(16) float bs[2][kBk][kBn];
  const int tid = threadIdx.x, tr = tid / 16, tc = tid % 16;
  const int bm = blockIdx.y * kBm, bn = blockIdx.x * kBn;
  float acc[8][8] = {};
  float4 ra, rb;
  LoadTile(a, b, n, k, bm, bn, 0, tid, ra, rb);
  StoreShared(ra, rb, tid, ast[0], bs[0]);
  __syncthreads();
  const int tiles = k / kBk;
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < tiles;
    if (more) LoadTile(a, b, n, k, bm, bn, (t + 1) * kBk, tid, ra, rb);  // in flight during compute
    OuterProducts(ast[cur], bs[cur], tr, tc, acc);
    if (more) StoreShared(ra, rb, tid, ast[cur ^ 1], bs[cur ^ 1]);
    __syncthreads();
  }
  StoreTile(acc, n, bm, bn, tr, tc, c);
}

// --- 7 tensor cores (bf16) ----------------------------------------------------------------
__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void LdMatrixX4(unsigned (&r)[4], const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
__device__ __forceinline__ void LdMatrixX4Trans(unsigned (&r)[4], const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
__device__ __forceinline__ void MmaBf16(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                        unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Block tile BM×BN×BK, 8 warps as WM×WN (each a (BM/WM)×(BN/WN) warp tile), STAGES-deep
// cp.async pipeline. Shared rows are padded by 8 bf16 (16 B): ldmatrix's 8 row addresses
// then fall in 8 different bank groups (row strides of 80, 144, 272 or 528 B).
template <int BM, int BN, int BK, int WM, int WN, int STAGES>
struct TcConfig {
  static constexpr int kALd = BK + 8, kBLd = BN + 8;
  static constexpr int kAStage = BM * kALd, kBStage = BK * kBLd;  // elements
  static constexpr int kSmemBytes = STAGES * (kAStage + kBStage) * 2;
  static constexpr int kMi = BM / WM / 16, kNi = BN / WN / 8;  // mma tiles per warp
  static_assert(WM * WN == 8 && kNi % 2 == 0 && BK % 16 == 0);
};

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__(kThreads)
    GemmTensorCore(int m, int n, int k, const __nv_bfloat16* a, const __nv_bfloat16* b, float* c) {
  using C = TcConfig<BM, BN, BK, WM, WN, STAGES>;
  extern __shared__ __align__(16) unsigned char smem[];
  auto* as = reinterpret_cast<__nv_bfloat16*>(smem);
  __nv_bfloat16* bs = as + STAGES * C::kAStage;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WN, wn = warp % WN;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const __nv_bfloat16* ag = a + static_cast<int64_t>(bm) * k;
  const __nv_bfloat16* bg = b + bn;
  const int tiles = k / BK;

  auto load = [&](int stage, int t) {
#pragma unroll
    for (int i = 0; i < BM * BK / 8 / kThreads; ++i) {  // A: BM rows × BK/8 chunks
      const int ch = tid + i * kThreads, r = ch / (BK / 8), col = (ch % (BK / 8)) * 8;
      CpAsync16(as + stage * C::kAStage + r * C::kALd + col,
                ag + static_cast<int64_t>(r) * k + t * BK + col);
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 8 / kThreads; ++i) {  // B: BK rows × BN/8 chunks
      const int ch = tid + i * kThreads, r = ch / (BN / 8), col = (ch % (BN / 8)) * 8;
      CpAsync16(bs + stage * C::kBStage + r * C::kBLd + col,
                bg + static_cast<int64_t>(t * BK + r) * n + col);
    }
  };

  float acc[C::kMi][C::kNi][4] = {};
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) load(s, s);
    CpAsyncCommit();
  }
  for (int t = 0; t < tiles; ++t) {
    CpAsyncWait<STAGES - 2>();
    __syncthreads();  // tile t is visible to all; the stage loaded next was consumed by all
    const int next = t + STAGES - 1;
    if (next < tiles) load(next % STAGES, next);
    CpAsyncCommit();
    const __nv_bfloat16* at = as + (t % STAGES) * C::kAStage;
    const __nv_bfloat16* bt = bs + (t % STAGES) * C::kBStage;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      unsigned af[C::kMi][4], bf[C::kNi][2];
#pragma unroll
      for (int mi = 0; mi < C::kMi; ++mi) {
        const int row = wm * (BM / WM) + mi * 16 + lane % 16, col = kk * 16 + (lane / 16) * 8;
        LdMatrixX4(af[mi], at + row * C::kALd + col);
      }
#pragma unroll
      for (int nj = 0; nj < C::kNi / 2; ++nj) {
        unsigned r[4];
        const int krow = kk * 16 + lane % 16;
        const int col = wn * (BN / WN) + nj * 16 + (lane / 16) * 8;
        LdMatrixX4Trans(r, bt + krow * C::kBLd + col);
        bf[nj * 2][0] = r[0];
        bf[nj * 2][1] = r[1];
        bf[nj * 2 + 1][0] = r[2];
        bf[nj * 2 + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < C::kMi; ++mi)
#pragma unroll
        for (int ni = 0; ni < C::kNi; ++ni) MmaBf16(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    }
  }
  CpAsyncWait<0>();
#pragma unroll
  for (int mi = 0; mi < C::kMi; ++mi) {
#pragma unroll
    for (int ni = 0; ni < C::kNi; ++ni) {
      const int row = bm + wm * (BM / WM) + mi * 16 + lane / 4;
      const int col = bn + wn * (BN / WN) + ni * 8 + (lane % 4) * 2;
      *reinterpret_cast<float2*>(c + static_cast<int64_t>(row) * n + col) =
          make_float2(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<float2*>(c + static_cast<int64_t>(row + 8) * n + col) =
          make_float2(acc[mi][ni][2], acc[mi][ni][3]);
    }
  }
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
cudaError_t LaunchTensorCore(int m, int n, int k, const void* a, const void* b, float* c,
                             cudaStream_t stream) {
  using C = TcConfig<BM, BN, BK, WM, WN, STAGES>;
  auto* kernel = GemmTensorCore<BM, BN, BK, WM, WN, STAGES>;
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes);
  if (attr != cudaSuccess) return attr;
  if (m % BM || n % BN) return cudaErrorInvalidValue;
  kernel<<<dim3(n / BN, m / BM), kThreads, C::kSmemBytes, stream>>>(
      m, n, k, static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b), c);
  return cudaGetLastError();
}

// Tile configurations tried on the H200 (gpu/NOTES.md); the ladder's rung 7 is kTcDefault.
// 0: 128×128×32, warps 2×4 (64×32), 4 stages   1: 128×256×32, warps 2×4 (64×64), 3 stages
// 2: 128×128×64, warps 2×4 (64×32), 3 stages   3: 256×128×32, warps 4×2 (64×64), 3 stages
constexpr int kTcDefault = 2;

int TensorCoreConfig() {
  static const int config = [] {
    const char* e = std::getenv("STALLSCOPE_TC_CONFIG");
    return e ? std::atoi(e) : kTcDefault;
  }();
  return config;
}

cudaError_t LaunchTensorCoreConfigured(int m, int n, int k, const void* a, const void* b, float* c,
                                       cudaStream_t stream) {
  switch (TensorCoreConfig()) {
    case 0:
      return LaunchTensorCore<128, 128, 32, 2, 4, 4>(m, n, k, a, b, c, stream);
    case 2:
      return LaunchTensorCore<128, 128, 64, 2, 4, 3>(m, n, k, a, b, c, stream);
    case 3:
      return LaunchTensorCore<256, 128, 32, 4, 2, 3>(m, n, k, a, b, c, stream);
    default:
      return LaunchTensorCore<128, 256, 32, 2, 4, 3>(m, n, k, a, b, c, stream);
  }
}

// --- 8 wgmma (sm_90a) ------------------------------------------------------------------------
// Compiled only into the sm_90a machine code; the compute_90 PTX has an empty body and the
// launcher refuses devices other than compute capability 9.0.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define STALLSCOPE_WGMMA_BODY 1
#endif

#ifdef STALLSCOPE_WGMMA_BODY
template <int BN>
__device__ __forceinline__ void WgmmaTile(float (&acc)[BN / 2], uint64_t da, uint64_t db) {
  if constexpr (BN == 128) {
    wgmma::Wgmma64x128(acc, da, db, 1);
  } else {
    wgmma::Wgmma64x256(acc, da, db, 1);
  }
}
#endif

template <int BN, int STAGES, int IN_FLIGHT>
__global__ void __launch_bounds__(kThreads, 1)
    GemmWgmma(int m, int n, int k, const __nv_bfloat16* a, const __nv_bfloat16* bt, float* c) {
#ifdef STALLSCOPE_WGMMA_BODY
  constexpr int BM = 128, BK = 64;  // a K row of the tile is one 128-byte line
  constexpr int kATile = BM * BK * 2, kBTile = BN * BK * 2, kStage = kATile + kBTile;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});  // swizzle atoms
  const int tid = threadIdx.x, wg = tid / 128;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int tiles = k / BK;
  // Row r's 16-byte chunk q lands at r*128 + ((q ^ (r % 8)) * 16): the 128-byte swizzle.
  auto load = [&](int stage, int t) {
    unsigned char* base = smem + stage * kStage;
#pragma unroll
    for (int i = 0; i < BM * 8 / kThreads; ++i) {
      const int ch = tid + i * kThreads, r = ch / 8, q = ch % 8;
      CpAsync16(base + r * 128 + ((q ^ (r & 7)) << 4),
                a + static_cast<int64_t>(bm + r) * k + t * BK + q * 8);
    }
#pragma unroll
    for (int i = 0; i < BN * 8 / kThreads; ++i) {
      const int ch = tid + i * kThreads, r = ch / 8, q = ch % 8;
      CpAsync16(base + kATile + r * 128 + ((q ^ (r & 7)) << 4),
                bt + static_cast<int64_t>(bn + r) * k + t * BK + q * 8);
    }
  };
  float acc[BN / 2] = {};
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) load(s, s);
    CpAsyncCommit();
  }
  for (int t = 0; t < tiles; ++t) {
    CpAsyncWait<STAGES - 2>();
    wgmma::FenceProxyAsync();
    __syncthreads();  // tile t is in shared memory, visible to the tensor cores
    const unsigned char* at = smem + (t % STAGES) * kStage + wg * 64 * 128;
    const unsigned char* btile = smem + (t % STAGES) * kStage + kATile;
    wgmma::Fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      WgmmaTile<BN>(acc, wgmma::Descriptor(at + kk * 32), wgmma::Descriptor(btile + kk * 32));
    }
    wgmma::Commit();
    wgmma::Wait<IN_FLIGHT>();  // with 1: tile t-1's multiplies are done, t's may still run
    __syncthreads();           // … in both warpgroups: its stage may be overwritten
    const int next = t + STAGES - 1;
    if (next < tiles) load(next % STAGES, next);
    CpAsyncCommit();
  }
  wgmma::Wait<0>();
  CpAsyncWait<0>();
  const int warp = (tid % 128) / 32, lane = tid % 32;
  const int row = bm + wg * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = bn + j * 8 + (lane % 4) * 2;
    *reinterpret_cast<float2*>(c + static_cast<int64_t>(row) * n + col) =
        make_float2(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<float2*>(c + static_cast<int64_t>(row + 8) * n + col) =
        make_float2(acc[4 * j + 2], acc[4 * j + 3]);
  }
#endif
}

template <int BN, int STAGES, int IN_FLIGHT>
cudaError_t LaunchWgmma(int m, int n, int k, const void* a, const void* bt, float* c,
                        cudaStream_t stream) {
  constexpr int kSmem = STAGES * (128 * 64 * 2 + BN * 64 * 2) + 1024;
  auto* kernel = GemmWgmma<BN, STAGES, IN_FLIGHT>;
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (attr != cudaSuccess) return attr;
  if (m % 128 || n % BN || k % 64) return cudaErrorInvalidValue;
  kernel<<<dim3(n / BN, m / 128), kThreads, kSmem, stream>>>(
      m, n, k, static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(bt), c);
  return cudaGetLastError();
}

// 0: 128×256×64, 4 stages, one k-tile in flight (default)   1: the same, 3 stages, none
// 2: 128×128×64, 4 stages, one in flight                     3: 128×256×64, 3 stages, one
cudaError_t LaunchWgmmaConfigured(int m, int n, int k, const void* a, const void* bt, float* c,
                                  cudaStream_t stream) {
  static const int config = [] {
    const char* e = std::getenv("STALLSCOPE_WGMMA_CONFIG");
    return e ? std::atoi(e) : 0;
  }();
  switch (config) {
    case 1:
      return LaunchWgmma<256, 3, 0>(m, n, k, a, bt, c, stream);
    case 2:
      return LaunchWgmma<128, 4, 1>(m, n, k, a, bt, c, stream);
    case 3:
      return LaunchWgmma<256, 3, 1>(m, n, k, a, bt, c, stream);
    default:
      return LaunchWgmma<256, 4, 1>(m, n, k, a, bt, c, stream);
  }
}

}  // namespace

const char* GemmKernelName(GemmKernel k) {
  switch (k) {
    case GemmKernel::kNaive:
      return "1 naive";
    case GemmKernel::kCoalesced:
      return "2 coalesced";
    case GemmKernel::kSharedTiled:
      return "3 shared-tiled";
    case GemmKernel::kRegister2D:
      return "4 register-2d";
    case GemmKernel::kVectorized:
      return "5 vectorized";
    case GemmKernel::kDoubleBuffered:
      return "6 double-buffered";
    case GemmKernel::kTensorCoreBf16:
      return "7 tensor-core bf16";
    case GemmKernel::kWgmmaBf16:
      return "8 wgmma bf16";
    case GemmKernel::kTmaWgmmaBf16:
      return "9 tma-wgmma bf16";
  }
  return "?";
}

bool GemmKernelIsBf16(GemmKernel k) {
  return k == GemmKernel::kTensorCoreBf16 || GemmKernelTakesTransposedB(k);
}

bool GemmKernelTakesTransposedB(GemmKernel k) {
  return k == GemmKernel::kWgmmaBf16 || k == GemmKernel::kTmaWgmmaBf16;
}

bool GemmKernelRunsHere(GemmKernel k) { return !GemmKernelTakesTransposedB(k) || WgmmaRunsHere(); }

std::string GemmShapeError(GemmKernel k, int64_t m, int64_t n, int64_t k_dim) {
  if (m <= 0 || n <= 0 || k_dim <= 0) return "dimensions must be positive";
  if (m > (1 << 30) || n > (1 << 30) || k_dim > (1 << 30)) return "dimensions must be below 2^30";
  if (GemmKernelTakesTransposedB(k)) {
    if (m % 128 || n % 256) return "M must be a multiple of 128 and N of 256";
    if (k_dim % 64) return "K must be a multiple of 64";
    return "";
  }
  const bool tc = k == GemmKernel::kTensorCoreBf16;
  const int64_t mn =
      k == GemmKernel::kNaive || k == GemmKernel::kCoalesced || k == GemmKernel::kSharedTiled
          ? 32
          : (tc ? 256 : 128);
  if (m % mn || n % mn) return "M and N must be multiples of " + std::to_string(mn);
  if (k_dim % (tc ? 64 : 32))
    return tc ? "K must be a multiple of 64" : "K must be a multiple of 32";
  return "";
}

cudaError_t LaunchGemm(GemmKernel kernel, int64_t m64, int64_t n64, int64_t k64, const void* a,
                       const void* b, float* c, cudaStream_t stream) {
  const int m = static_cast<int>(m64), n = static_cast<int>(n64), k = static_cast<int>(k64);
  const auto* fa = static_cast<const float*>(a);
  const auto* fb = static_cast<const float*>(b);
  switch (kernel) {
    case GemmKernel::kNaive:
      GemmNaive<<<dim3(m / 32, n / 32), dim3(32, 32), 0, stream>>>(m, n, k, fa, fb, c);
      break;
    case GemmKernel::kCoalesced:
      GemmCoalesced<<<dim3(n / 32, m / 32), dim3(32, 32), 0, stream>>>(m, n, k, fa, fb, c);
      break;
    case GemmKernel::kSharedTiled:
      GemmSharedTiled<<<dim3(n / 32, m / 32), dim3(32, 32), 0, stream>>>(m, n, k, fa, fb, c);
      break;
    case GemmKernel::kRegister2D:
      GemmRegister2D<<<dim3(n / kBn, m / kBm), kThreads, 0, stream>>>(m, n, k, fa, fb, c);
      break;
    case GemmKernel::kVectorized:
      GemmVectorized<<<dim3(n / kBn, m / kBm), kThreads, 0, stream>>>(m, n, k, fa, fb, c);
      break;
    case GemmKernel::kDoubleBuffered:
      GemmDoubleBuffered<<<dim3(n / kBn, m / kBm), kThreads, 0, stream>>>(m, n, k, fa, fb, c);
      break;
    case GemmKernel::kTensorCoreBf16:
      return LaunchTensorCoreConfigured(m, n, k, a, b, c, stream);
    case GemmKernel::kWgmmaBf16:
      if (!WgmmaRunsHere()) return cudaErrorNotSupported;
      return LaunchWgmmaConfigured(m, n, k, a, b, c, stream);
    case GemmKernel::kTmaWgmmaBf16:
      if (!WgmmaRunsHere()) return cudaErrorNotSupported;
      return LaunchTmaWgmma(m, n, k, a, b, c, stream);
  }
  return cudaGetLastError();
}

}  // namespace stallscope::gpu
