// cuBLAS and cuBLASLt, loaded on first use instead of at start-up. Linked the usual way,
// libcublasLt's static constructors ran in every stallscope process: 0.3 s of each start on
// this 2-core VM (1 s and 0.5 GB resident under AddressSanitizer), for `--help`, `validate` and
// every CPU-only run alike, although only the CUDA device and the GEMM ladder call it. Each
// function the code uses is defined here with the header's own signature (a mismatch is a
// compile error: the declaration is extern "C") and forwards to the library's definition, which
// dlopen finds by soname the way the dynamic linker would (LD_LIBRARY_PATH, the binary's
// RUNPATH, ld.so.cache). Where the library cannot be loaded, each call returns
// CUBLAS_STATUS_NOT_INITIALIZED and the first says why on stderr.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstdio>
#include <mutex>

namespace stallscope {
namespace {

#define STALLSCOPE_STR2(x) #x
#define STALLSCOPE_STR(x) STALLSCOPE_STR2(x)
constexpr const char* kCublas = "libcublas.so." STALLSCOPE_STR(CUBLAS_VER_MAJOR);
constexpr const char* kCublasLt = "libcublasLt.so." STALLSCOPE_STR(CUBLAS_VER_MAJOR);

// The library's handle (nullptr where it cannot be loaded, said once).
void* Library(const char* soname) {
  static std::mutex mu;
  const std::lock_guard lock(mu);
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    static bool said = false;
    if (!said) std::fprintf(stderr, "stallscope: cannot load %s: %s\n", soname, dlerror());
    said = true;
  }
  return lib;
}

template <typename F>
F Resolve(const char* soname, const char* name) {
  void* lib = Library(soname);
  return lib == nullptr ? nullptr : reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace
}  // namespace stallscope

// `name` with the parameters `params`, forwarded as `args` to `lib`'s own definition.
// (The pointer's type is spelled from `params`: cublas_api.h overloads cublasGemmEx in C++.)
#define STALLSCOPE_FORWARD(lib, name, params, args)                             \
  extern "C" cublasStatus_t CUBLASWINAPI name params {                          \
    using Real = cublasStatus_t(CUBLASWINAPI*) params;                          \
    static const auto real = stallscope::Resolve<Real>(stallscope::lib, #name); \
    return real == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : real args;         \
  }

STALLSCOPE_FORWARD(kCublas, cublasCreate_v2, (cublasHandle_t * h), (h))
STALLSCOPE_FORWARD(kCublas, cublasDestroy_v2, (cublasHandle_t h), (h))
STALLSCOPE_FORWARD(kCublas, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))
STALLSCOPE_FORWARD(kCublas, cublasSgemm_v2,
                   (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float* alpha, const float* a, int lda, const float* b, int ldb,
                    const float* beta, float* c, int ldc),
                   (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
STALLSCOPE_FORWARD(kCublas, cublasDgemm_v2,
                   (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const double* alpha, const double* a, int lda, const double* b, int ldb,
                    const double* beta, double* c, int ldc),
                   (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
STALLSCOPE_FORWARD(kCublas, cublasGemmEx,
                   (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const void* alpha, const void* a, cudaDataType at, int lda,
                    const void* b, cudaDataType bt, int ldb, const void* beta, void* c,
                    cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo),
                   (h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute,
                    algo))

STALLSCOPE_FORWARD(kCublasLt, cublasLtCreate, (cublasLtHandle_t * h), (h))
STALLSCOPE_FORWARD(kCublasLt, cublasLtDestroy, (cublasLtHandle_t h), (h))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmul,
                   (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                    cublasLtMatrixLayout_t al, const void* b, cublasLtMatrixLayout_t bl,
                    const void* beta, const void* c, cublasLtMatrixLayout_t cl, void* d,
                    cublasLtMatrixLayout_t dl, const cublasLtMatmulAlgo_t* algo, void* workspace,
                    size_t workspace_bytes, cudaStream_t stream),
                   (h, desc, alpha, a, al, b, bl, beta, c, cl, d, dl, algo, workspace,
                    workspace_bytes, stream))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmulAlgoGetHeuristic,
                   (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t al,
                    cublasLtMatrixLayout_t bl, cublasLtMatrixLayout_t cl, cublasLtMatrixLayout_t dl,
                    cublasLtMatmulPreference_t pref, int wanted,
                    cublasLtMatmulHeuristicResult_t results[], int* returned),
                   (h, desc, al, bl, cl, dl, pref, wanted, results, returned))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmulDescCreate,
                   (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
                   (desc, compute, scale))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmulDescSetAttribute,
                   (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,
                    size_t bytes),
                   (desc, attr, buf, bytes))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * p), (p))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatmulPreferenceSetAttribute,
                   (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr,
                    const void* buf, size_t bytes),
                   (p, attr, buf, bytes))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatrixLayoutCreate,
                   (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows,
                    uint64_t cols, int64_t ld),
                   (layout, type, rows, cols, ld))
STALLSCOPE_FORWARD(kCublasLt, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout),
                   (layout))

// The one function that returns text, not a status.
extern "C" const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto real = stallscope::Resolve<decltype(&cublasGetStatusString)>(
      stallscope::kCublas, "cublasGetStatusString");
  return real == nullptr ? "cuBLAS not loaded" : real(status);
}
