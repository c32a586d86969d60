// LtBiasGemm: a layer's forward pass as one cuBLASLt launch, row-major
// C (rows × out) = A (rows × in) · W (in × out) + bias, with ReLU on hidden layers: the GEMM's
// epilogue adds the bias and applies the activation, so the step has no separate bias kernel
// per layer (issue #20: fewer kernels, fewer launch gaps in a step).
//
// One plan per layer (its shapes, epilogue and bias pointer), with the algorithm cuBLASLt's
// heuristic picks for them; a layer for which it finds none reports false from Run() and the
// caller falls back to cublasSgemm and a bias kernel.
//
// The backward pass of a hidden layer's input gradient the same way: with the forward GEMM
// keeping ReLU's mask (a bit per output, RELU_AUX_BIAS), dA = (dZ · Wᵀ) ⊙ (A > 0) and its
// column sums (the bias gradient of the layer below) come out of one launch (DRELU_BGRAD).
//
// And the step's other GEMMs (the backward ones, the SGD step fused into dW's), planned per
// shape on first use: through cuBLASLt with a workspace of its own, not cublasSgemm, which
// under graph capture allocates, zeroes and frees a workspace around its kernel.
//
// Every plan takes an algorithm that launches kernels only (Choose): in a captured step any
// other node (a memset of a split-K workspace) leaves the GPU idle for microseconds.
//
// Thread-safety: not thread-safe; used by one MlpModel on its stream.
#ifndef STALLSCOPE_GPU_LT_GEMM_H_
#define STALLSCOPE_GPU_LT_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "gpu/cuda_util.h"

namespace stallscope::gpu {

class LtBiasGemm {
 public:
  LtBiasGemm();
  ~LtBiasGemm();
  LtBiasGemm(const LtBiasGemm&) = delete;
  LtBiasGemm& operator=(const LtBiasGemm&) = delete;

  // Plans layer `layer`: C (rows × out) = A (rows × in) · W (in × out) + bias, ReLU if `relu`
  // (and ReLU's mask into `relu_mask`, out × rows bits, when not null).
  // False when cuBLASLt has no algorithm for it (Run() then returns false for the layer).
  bool Plan(int layer, int rows, int in, int out, const float* bias, bool relu,
            void* relu_mask = nullptr);
  // Enqueues the layer's GEMM on `stream`; false (nothing enqueued) when it is not planned.
  bool Run(int layer, const float* a, const float* w, float* c, cudaStream_t stream);

  // Plans layer `layer`'s input gradient: dA (rows × in) = (dZ (rows × out) · Wᵀ) ⊙ mask, with
  // `relu_mask` the forward mask of the layer below (in × rows bits) and its column sums into
  // `dbias` (in values). False when cuBLASLt has no algorithm for it.
  bool PlanBackward(int layer, int rows, int in, int out, const void* relu_mask, float* dbias);
  // Enqueues it; false (nothing enqueued) when it is not planned.
  bool RunBackward(int layer, const float* dz, const float* w, float* da, cudaStream_t stream);

  // Row-major C (m × n) = alpha · op(A) · op(B) + beta · C (op(A) m × k, op(B) k × n), as
  // cublasSgemm computes it, planned on first use for each shape and transposition. False
  // (nothing enqueued) when cuBLASLt has no algorithm for the shape.
  bool Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
            float* c, float alpha, float beta, cudaStream_t stream);

  // Which of the heuristic's algorithms each plan took (0: its first; kCandidates + i: the
  // i-th of those without a workspace) and whether that one launches kernels only (Choose).
  struct Choice {
    const char* what;  // "forward", "backward" or "gemm"
    int layer;         // -1 for gemm
    int candidate;
    bool kernels_only;
  };
  std::vector<Choice> choices() const;

  static constexpr std::size_t kWorkspaceBytes = 32 << 20;
  static constexpr int kCandidates = 8;

 private:
  struct LayerPlan {  // planned when desc is set (Plan() leaves a failed one empty)
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t w = nullptr, a = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    int candidate = 0;
    bool kernels_only = false;
  };
  struct GemmKey {
    bool trans_a, trans_b;
    int m, n, k;
    auto operator<=>(const GemmKey&) const = default;
  };
  static void Destroy(LayerPlan& p);
  // Creates p.desc with `epilogue`, the bias and mask pointers (null: not set), and the first
  // (`transpose_w`) and second (`transpose_a`) operand transposed or not.
  static void Describe(LayerPlan& p, cublasLtEpilogue_t epilogue, const void* bias,
                       const void* mask, int64_t mask_ld, bool transpose_w,
                       bool transpose_a = false);
  // An algorithm for p (layouts set): of the heuristic's first kCandidates, the first whose
  // launch is kernels only; where none is, the first such of those it offers without a
  // workspace; else its first. False, p destroyed, when there is none. Some
  // algorithms (split-K with an in-place reduction) also zero a few bytes of the workspace
  // first: in a captured step that is a memset node, and on an H100 each cost 4-14 us of idle
  // between the step's kernels, more than the kernel it saves (gpu/NOTES.md, 2026-12-05).
  bool Choose(LayerPlan& p);
  // The heuristic's first kCandidates algorithms for p with at most `workspace` bytes of
  // workspace, into `results`; how many.
  int Candidates(const LayerPlan& p, uint64_t workspace, cublasLtMatmulHeuristicResult_t* results);
  // Whether `algo` launches p as kernel nodes only: captured into a graph (not run) and looked at.
  bool KernelsOnly(const LayerPlan& p, const cublasLtMatmulAlgo_t& algo);
  static LayerPlan& At(std::vector<LayerPlan>& plans, int layer);
  static bool Planned(const std::vector<LayerPlan>& plans, int layer);

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<std::byte> workspace_;
  std::vector<LayerPlan> plans_, backward_;
  std::map<GemmKey, LayerPlan> gemms_;
};

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_LT_GEMM_H_
