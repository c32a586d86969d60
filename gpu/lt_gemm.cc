#include "gpu/lt_gemm.h"

namespace stallscope::gpu {

LtBiasGemm::LtBiasGemm() : workspace_(kWorkspaceBytes) {
  STALLSCOPE_CUBLAS(cublasLtCreate(&handle_));
}

LtBiasGemm::~LtBiasGemm() {
  for (LayerPlan& p : plans_) Destroy(p);
  if (handle_) cublasLtDestroy(handle_);
}

void LtBiasGemm::Destroy(LayerPlan& p) {
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  for (cublasLtMatrixLayout_t l : {p.w, p.a, p.c}) {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  p = LayerPlan{};
}

bool LtBiasGemm::Plan(int layer, int rows, int in, int out, const float* bias, bool relu) {
  if (layer < 0) return false;
  if (plans_.size() <= static_cast<size_t>(layer)) plans_.resize(layer + 1);
  LayerPlan& p = plans_[layer];
  Destroy(p);
  // cuBLASLt is column-major: the row-major C (rows × out) is the column-major C^T
  // (out × rows) = W^T (out × in) · A^T (in × rows), each row-major matrix read as its
  // column-major transpose, so the bias (one per output feature) runs along C^T's rows.
  STALLSCOPE_CUBLAS(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasLtEpilogue_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  STALLSCOPE_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                   sizeof epilogue));
  STALLSCOPE_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                   sizeof bias));
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_32F, out, in, out));
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, in, rows, in));
  STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, out, rows, out));
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

bool LtBiasGemm::Run(int layer, const float* a, const float* w, float* c, cudaStream_t stream) {
  if (layer < 0 || static_cast<size_t>(layer) >= plans_.size() || !plans_[layer].desc) return false;
  const LayerPlan& p = plans_[layer];
  const float one = 1, zero = 0;
  STALLSCOPE_CUBLAS(cublasLtMatmul(handle_, p.desc, &one, w, p.w, a, p.a, &zero, c, p.c, c, p.c,
                                   &p.algo, workspace_.get(), kWorkspaceBytes, stream));
  return true;
}

}  // namespace stallscope::gpu
