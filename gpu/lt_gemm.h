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
// Thread-safety: not thread-safe; used by one MlpModel on its stream.
#ifndef STALLSCOPE_GPU_LT_GEMM_H_
#define STALLSCOPE_GPU_LT_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
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

  static constexpr std::size_t kWorkspaceBytes = 32 << 20;

 private:
  struct LayerPlan {  // planned when desc is set (Plan() leaves a failed one empty)
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t w = nullptr, a = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  static void Destroy(LayerPlan& p);
  // Creates p.desc with `epilogue` and the bias and mask pointers (null: not set).
  static void Describe(LayerPlan& p, cublasLtEpilogue_t epilogue, const void* bias,
                       const void* mask, int64_t mask_ld, bool transpose_w);
  // The heuristic's algorithm for p (layouts set); false, p destroyed, when there is none.
  bool Choose(LayerPlan& p);
  static LayerPlan& At(std::vector<LayerPlan>& plans, int layer);
  static bool Planned(const std::vector<LayerPlan>& plans, int layer);

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<std::byte> workspace_;
  std::vector<LayerPlan> plans_, backward_;
};

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_LT_GEMM_H_
