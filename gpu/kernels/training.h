// The training step's element-wise kernels (the GEMMs are cuBLAS or gemm.h), and the small
// tensor utilities the kernel ladder validates with. All launchers are asynchronous on
// `stream` and return the launch's error. Matrices are row-major.
//
// Thread-safety: launchers are reentrant.
#ifndef STALLSCOPE_GPU_KERNELS_TRAINING_H_
#define STALLSCOPE_GPU_KERNELS_TRAINING_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace stallscope::gpu {

// Staged rows that are a square image's HWC uint8 pixels (`side` > 0): a row's feature i is
// its CHW value i, pixel i % side² of channel c = i / side², times scale[c] plus shift[c].
struct StagedImage {
  int side = 0;
  float scale[3] = {}, shift[3] = {};
};

// x[r][c] for r < rows_out, c < cols_out: from `rows` staged rows of `row_bytes` (float32
// features when `floats`, an image's normalized pixels when image.side > 0, else bytes scaled
// by 1/255), centred by -0.5; zero outside the first `samples` rows and the row's first
// `features` values.
cudaError_t GatherInput(const void* staged, bool floats, const StagedImage& image,
                        uint64_t row_bytes, int samples, int features, int rows_out, int cols_out,
                        float* x, cudaStream_t stream);

// z[r][c] += bias[c]; with `relu`, z = max(z, 0).
cudaError_t BiasActivation(float* z, const float* bias, int rows, int cols, bool relu,
                           cudaStream_t stream);

// A bias that a kernel computing its gradient also steps: bias[c] -= lr * gradient[c].
// Null bias: the gradient is only written.
struct BiasStep {
  float* bias = nullptr;
  float lr = 0;
};

// Softmax cross-entropy over the first `classes` columns of `logits` (rows × ld) for the
// first `samples` rows: writes the mean loss to *loss, the gradient of the mean loss into
// dlogits (zero in padded rows and columns) and that gradient's column sums (the last
// layer's bias gradient, ld values) into dbias, and applies `step` with them. One block: for
// the classifier's few columns.
cudaError_t SoftmaxCrossEntropy(const float* logits, const uint32_t* labels, int rows, int ld,
                                int samples, int classes, float* dlogits, float* dbias, float* loss,
                                cudaStream_t stream, BiasStep step = {});

// An SGD step on one layer: w -= lr * dw (nw values), b -= lr * db (nb values).
struct SgdTarget {
  float* w = nullptr;
  const float* dw = nullptr;
  int64_t nw = 0;
  float* b = nullptr;
  const float* db = nullptr;
  int64_t nb = 0;
  float lr = 0;
};

// The end of a layer's backward pass in one launch. With `d` (rows × cols): d *= (activation
// > 0) and d_sums[c] = Σ_r d[r][c] (the bias gradient of the layer below), `step` applied with
// them. Then, beside it, the SGD step `sgd` (none when nw + nb = 0). Nothing to do: no launch.
cudaError_t ReluBackwardAndUpdate(float* d, const float* activation, int rows, int cols,
                                  float* d_sums, const SgdTarget& sgd, cudaStream_t stream,
                                  BiasStep step = {});

// w -= lr * g.
cudaError_t SgdUpdate(float* w, const float* g, int64_t n, float lr, cudaStream_t stream);
// The same for up to kMax arrays in one launch (the step's bias updates).
struct SgdBatch {
  static constexpr int kMax = 16;
  float* w[kMax] = {};
  const float* g[kMax] = {};
  int64_t n[kMax] = {};
  int count = 0;
  float lr = 0;
};
cudaError_t SgdUpdateMany(const SgdBatch& batch, cudaStream_t stream);

// out (cols × rows) = in (rows × cols) transposed.
cudaError_t Transpose(const float* in, int rows, int cols, float* out, cudaStream_t stream);
// out (__nv_bfloat16*) = in (rows × cols) rounded to bf16, as it is (rows × cols) or
// transposed (cols × rows): the operands of the bf16 GEMM rungs.
cudaError_t ToBf16Matrix(const float* in, int rows, int cols, bool transpose, void* out,
                         cudaStream_t stream);

// Uniform values in [-scale, scale) from a counter hash of (seed, index).
cudaError_t FillUniform(float* x, int64_t n, uint64_t seed, cudaStream_t stream,
                        float scale = 1.0f);
// x = NaN (poisons an output before a kernel that must write every element).
cudaError_t FillNaN(float* x, int64_t n, cudaStream_t stream);
// Round to bf16 (out is __nv_bfloat16*) and widen to double.
cudaError_t ToBf16(const float* in, int64_t n, void* out, cudaStream_t stream);
cudaError_t ToDouble(const float* in, int64_t n, double* out, cudaStream_t stream);
// sums[0] += Σ (x - ref)², sums[1] += Σ ref², sums[2] += count of non-finite x.
cudaError_t ErrorSums(const float* x, const double* ref, int64_t n, double* sums,
                      cudaStream_t stream);
cudaError_t ErrorSums(const float* x, const float* ref, int64_t n, double* sums,
                      cudaStream_t stream);

// Programmatic dependent launch (Hopper on): the step's element-wise kernels above (gather,
// bias, softmax, ReLU backward, bf16 conversion) are launched so the GPU may start them while
// the kernel before them drains; each waits (griddepcontrol.wait) for that kernel's results
// before it reads or writes anything. STALLSCOPE_PDL=0 in the environment turns it off.
bool ProgrammaticLaunchOn();

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_KERNELS_TRAINING_H_
