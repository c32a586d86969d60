#include "gpu/lt_gemm.h"

#include <cstdlib>
#include <cstring>

namespace stallscope::gpu {

LtBiasGemm::LtBiasGemm() : workspace_(kWorkspaceBytes) {
  STALLSCOPE_CUBLAS(cublasLtCreate(&handle_));
}

LtBiasGemm::~LtBiasGemm() {
  for (LayerPlan& p : plans_) Destroy(p);
  for (LayerPlan& p : backward_) Destroy(p);
  for (auto& [key, p] : gemms_) Destroy(p);
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
                          const void* mask, int64_t mask_ld, bool transpose_w, bool transpose_a) {
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
  const cublasOperation_t t = CUBLAS_OP_T;
  if (transpose_w) set(CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  if (transpose_a) set(CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof t);
}

namespace {

// STALLSCOPE_LT_KERNELS_ONLY=0: the heuristic's first algorithm for every plan, and the
// backward GEMMs through cublasSgemm, as before 2026-12-05 (to compare).
bool KernelsOnlyOn() {
  static const bool on = [] {
    const char* v = std::getenv("STALLSCOPE_LT_KERNELS_ONLY");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

}  // namespace

bool LtBiasGemm::KernelsOnly(const LayerPlan& p, const cublasLtMatmulAlgo_t& algo) {
  // Captured, not run: the operands' addresses only become kernel parameters.
  cudaStream_t stream = nullptr;
  STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* any = workspace_.get();
  const float one = 1, zero = 0;
  cudaGraph_t graph = nullptr;
  bool ok = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (ok) {
    ok = cublasLtMatmul(handle_, p.desc, &one, any, p.w, any, p.a, &zero, any, p.c, any, p.c, &algo,
                        workspace_.get(), kWorkspaceBytes, stream) == CUBLAS_STATUS_SUCCESS;
    ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok;
  }
  cudaGetLastError();  // a failed capture leaves nothing behind
  if (ok && graph) {
    size_t count = 0;
    cudaGraphGetNodes(graph, nullptr, &count);
    std::vector<cudaGraphNode_t> nodes(count);
    cudaGraphGetNodes(graph, nodes.data(), &count);
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      ok =
          ok && cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel;
    }
  }
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  return ok;
}

int LtBiasGemm::Candidates(const LayerPlan& p, uint64_t workspace,
                           cublasLtMatmulHeuristicResult_t* results) {
  cublasLtMatmulPreference_t pref = nullptr;
  STALLSCOPE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof workspace);
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.w, p.a, p.c, p.c,
                                                           pref, kCandidates, results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) return 0;
  // Those the heuristic could not check are no candidates.
  int kept = 0;
  for (int i = 0; i < found; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) results[kept++] = results[i];
  }
  return kept;
}

bool LtBiasGemm::Choose(LayerPlan& p) {
  cublasLtMatmulHeuristicResult_t results[kCandidates]{};
  const int found = Candidates(p, kWorkspaceBytes, results);
  if (found == 0) {
    Destroy(p);
    return false;
  }
  // The heuristic's first algorithm that launches kernels only; where none of its first
  // candidates does, the first of those it offers without a workspace (no split-K reduction
  // to zero) that does; else its very first.
  p.algo = results[0].algo;
  p.kernels_only = false;
  p.candidate = 0;
  if (!KernelsOnlyOn()) return true;
  auto take_first_kernels_only = [&](const cublasLtMatmulHeuristicResult_t* r, int n, int first) {
    for (int i = 0; i < n; ++i) {
      if (KernelsOnly(p, r[i].algo)) {
        p.algo = r[i].algo;
        p.kernels_only = true;
        p.candidate = first + i;
        return true;
      }
    }
    return false;
  };
  if (take_first_kernels_only(results, found, 0)) return true;
  cublasLtMatmulHeuristicResult_t bare[kCandidates]{};
  take_first_kernels_only(bare, Candidates(p, 0, bare), kCandidates);
  return true;
}

bool LtBiasGemm::Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                      const float* b, float* c, float alpha, float beta, cudaStream_t stream) {
  if (!KernelsOnlyOn()) return false;
  const GemmKey key{trans_a, trans_b, m, n, k};
  auto it = gemms_.find(key);
  if (it == gemms_.end()) {
    LayerPlan p;
    // Row-major C (m × n) = op(A) · op(B) is the column-major C^T (n × m) = op(B)^T · op(A)^T,
    // each row-major matrix read as its column-major transpose: W' = B (n × k as op), A' = A.
    Describe(p, CUBLASLT_EPILOGUE_DEFAULT, nullptr, nullptr, 0, trans_b, trans_a);
    // Stored column-major shapes: B is k × n row-major (n × k when transposed), so its
    // column-major view is n × k (k × n); A likewise.
    STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_32F, trans_b ? k : n, trans_b ? n : k,
                                                 trans_b ? k : n));
    STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, trans_a ? m : k, trans_a ? k : m,
                                                 trans_a ? m : k));
    STALLSCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, n, m, n));
    Choose(p);  // none: p is left empty, and the shape stays on cublasSgemm from now on
    it = gemms_.emplace(key, p).first;
  }
  const LayerPlan& p = it->second;
  if (!p.desc) return false;
  STALLSCOPE_CUBLAS(cublasLtMatmul(handle_, p.desc, &alpha, b, p.w, a, p.a, &beta, c, p.c, c, p.c,
                                   &p.algo, workspace_.get(), kWorkspaceBytes, stream));
  return true;
}

std::vector<LtBiasGemm::Choice> LtBiasGemm::choices() const {
  std::vector<Choice> out;
  for (size_t l = 0; l < plans_.size(); ++l) {
    if (plans_[l].desc)
      out.push_back({"forward", static_cast<int>(l), plans_[l].candidate, plans_[l].kernels_only});
  }
  for (size_t l = 0; l < backward_.size(); ++l) {
    if (backward_[l].desc)
      out.push_back(
          {"backward", static_cast<int>(l), backward_[l].candidate, backward_[l].kernels_only});
  }
  for (const auto& [key, p] : gemms_) {
    if (p.desc) out.push_back({"gemm", -1, p.candidate, p.kernels_only});
  }
  return out;
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
