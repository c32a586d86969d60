#include "gpu/lt_gemm.h"

namespace stallscope::gpu {

LtBiasGemm::LtBiasGemm() : workspace_(kWorkspaceBytes) {
  STALLSCOPE_CUBLAS(cublasLtCreate(&handle_));
}

LtBiasGemm::~LtBiasGemm() {
  for (LayerPlan& p : plans_) Destroy(p);
  for (LayerPlan& p : backward_) Destroy(p);
  if (handle_) cublasLtDestroy(handle_);
}

void LtBiasGemm::Destroy(LayerPlan& p) {
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  for (cublasLtMatrixLayout_t l : {p.w, p.a, p.c}) {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  p = LayerPlan{};
}

LtBiasGemm::LayerPlan& LtBiasGemm::At(std::vector<LayerPlan>& plans, int layer) {
  if (plans.size() <= static_cast<size_t>(layer)) plans.resize(layer + 1);
  Destroy(plans[layer]);
  return plans[layer];
}

bool LtBiasGemm::Planned(const std::vector<LayerPlan>& plans, int layer) {
  return layer >= 0 && static_cast<size_t>(layer) < plans.size() && plans[layer].desc;
}

void LtBiasGemm::Describe(LayerPlan& p, cublasLtEpilogue_t epilogue, const void* bias,
                          const void* mask, int64_t mask_ld, bool transpose_w) {
  STALLSCOPE_CUBLAS(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  auto set = [&](cublasLtMatmulDescAttributes_t a, const void* v, size_t n) {
    STALLSCOPE_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, a, v, n));
  };
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  if (bias) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  if (mask) {
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &mask, sizeof mask);
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &mask_ld, sizeof mask_ld);
  }
  if (transpose_w) {
    const cublasOperation_t t = CUBLAS_OP_T;
    set(CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  }
}

bool LtBiasGemm::Choose(LayerPlan& p) {
  cublasLtMatmulPreference_t pref = nullptr;
  STALLSCOPE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof workspace);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.w, p.a, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
    Destroy(p);
    return false;
  }
  p.algo = result.algo;
  return true;
}

bool LtBiasGemm::Plan(int layer, int rows, int in, int out, const float* bias, bool relu,
                      void* relu_mask) {
  if (layer < 0) return false;
  LayerPlan& p = At(plans_, layer);
  // cuBLASLt is column-major: the row-major C (rows × out) is the column-major C^T
  // (out × rows) = W^T (out × in) · A^T (in × rows), each row-major matrix read as its
  // column-major transpose, so the bias (one per output feature) runs along C^T's rows.
  const bool mask = relu && relu_mask;
  Describe(p,
           mask   ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS
           : relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                  : CUBLASLT_EPILOGUE_BIAS,
           bias, mask ? relu_mask : nullptr, out, false);
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_32F, out, in, out));
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, in, rows, in));
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, out, rows, out));
  return Choose(p);
}

bool LtBiasGemm::PlanBackward(int layer, int rows, int in, int out, const void* relu_mask,
                              float* dbias) {
  if (layer < 0) return false;
  LayerPlan& p = At(backward_, layer);
  // Column-major: dA^T (in × rows) = op(W^T) · dZ^T, where the row-major W (in × out) is read
  // as the column-major W^T (out × in) and transposed back, and dZ (rows × out) as dZ^T
  // (out × rows). The mask has dA^T's shape (the forward C^T of the layer below); the bias
  // gradient sums along dA^T's columns, one value per input feature.
  Describe(p, CUBLASLT_EPILOGUE_DRELU_BGRAD, dbias, relu_mask, in, true);
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_32F, out, in, out));
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, out, rows, out));
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, in, rows, in));
  return Choose(p);
}

bool LtBiasGemm::Run(int layer, const float* a, const float* w, float* c, cudaStream_t stream) {
  if (!Planned(plans_, layer)) return false;
  const LayerPlan& p = plans_[layer];
  const float one = 1, zero = 0;
  STALLSCOPE_CUBLAS(cublasLtMatmul(handle_, p.desc, &one, w, p.w, a, p.a, &zero, c, p.c, c, p.c,
                                   &p.algo, workspace_.get(), kWorkspaceBytes, stream));
  return true;
}

bool LtBiasGemm::RunBackward(int layer, const float* dz, const float* w, float* da,
                             cudaStream_t stream) {
  if (!Planned(backward_, layer)) return false;
  const LayerPlan& p = backward_[layer];
  const float one = 1, zero = 0;
  STALLSCOPE_CUBLAS(cublasLtMatmul(handle_, p.desc, &one, w, p.w, dz, p.a, &zero, da, p.c, da, p.c,
                                   &p.algo, workspace_.get(), kWorkspaceBytes, stream));
  return true;
}

}  // namespace stallscope::gpu
