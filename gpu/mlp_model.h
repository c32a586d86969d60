// MlpModel: the real training step the CUDA device runs on every batch.
//
// An MLP of `layers` linear layers (input → hidden → … → hidden → classes) with ReLU between
// them: forward (GEMM + bias + ReLU), softmax cross-entropy against the samples' labels,
// backward, and a plain SGD update, all on one CUDA stream. The GEMMs are cuBLAS fp32 GEMMs
// through cuBLASLt (the forward ones with bias and ReLU in their epilogue; every one with an
// algorithm that launches kernels only: gpu/lt_gemm.h; cublasSgemm where cuBLASLt has none;
// the weight gradient's GEMM applies the SGD step itself, W -= lr·Aᵀ·dZ) or the kernel
// ladder's own kernels (gpu.gemm: own): for each of the step's GEMM shapes, whichever of rung 6
// (fp32) and rung 9 (bf16 operands rounded from the fp32 ones, fp32 accumulate; Hopper only)
// validated and ran faster when the model was built. Every dimension is padded up to a multiple of
// 128 (the own kernels' tile); padded rows and classes carry no gradient.
//
// Thread-safety: one thread enqueues steps; the stream orders them.
#ifndef STALLSCOPE_GPU_MLP_MODEL_H_
#define STALLSCOPE_GPU_MLP_MODEL_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/kernels/gemm.h"
#include "gpu/kernels/training.h"
#include "gpu/lt_gemm.h"

namespace stallscope::gpu {

// A concrete model shape (CudaDevice fills every field from the scenario; nothing defaults).
struct MlpShape {
  int batch = 0, input = 0, hidden = 0, layers = 0, classes = 0;
};

// gpu.gemm: own — which rungs the step's GEMMs may run on.
enum class OwnRungs {
  kFastest,  // per shape, the faster of rung 6 and rung 9 where rung 9 runs and validates
  kFp32,     // rung 6 only (exact fp32, as cuBLAS SGEMM)
  kBf16,     // rung 9 wherever it runs, fits the shape and validates
};

// What the own path chose for one GEMM shape of the step (row-major C = op(A)·op(B)).
struct OwnGemmChoice {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  GemmKernel kernel = kBestOwnFp32;
  double fp32_ms = 0, bf16_ms = 0;  // best of the timed runs (0: not timed)
  double bf16_error = -1;           // rung 9 vs rung 6, relative Frobenius (-1: not run)
  bool Is(bool ta, bool tb, int m_, int n_, int k_) const {
    return trans_a == ta && trans_b == tb && m == m_ && n == n_ && k == k_;
  }
};

class MlpModel {
 public:
  // Allocates parameters (He-initialized from `seed`), activations and gradients; with the
  // own GEMMs, times and validates each GEMM shape's candidate rungs (OwnRungs).
  MlpModel(const MlpShape& shape, bool own_gemm, cublasHandle_t cublas, cudaStream_t stream,
           uint64_t seed, OwnRungs rungs = OwnRungs::kFastest);
  ~MlpModel();
  MlpModel(const MlpModel&) = delete;
  MlpModel& operator=(const MlpModel&) = delete;

  // gpu.graph: from now on each step is a CUDA graph, captured on its first use for each
  // (input buffer, labels, rows, row format) and replayed after, so a step costs one launch
  // instead of one per kernel; its loss is copied to its slot after the replay. Steps stay
  // plain launches with a gradient reducer (the all-reduce is not captured) or on the
  // legacy default stream (which cannot be captured).
  void UseGraphs(bool on) { use_graphs_ = on; }
  // Events EnqueueStep records around a step's kernels (first before the input gather, last
  // after the update); in a graph they are its own event records, so they time the kernels
  // and the gaps between them, not the graph's launch or the loss copy after it. Null: none.
  void SetStepEvents(cudaEvent_t start, cudaEvent_t end) {
    step_start_ = start;
    step_end_ = end;
  }
  uint64_t graphs_captured() const { return graphs_captured_; }
  // The own path's choice for each distinct GEMM shape of the step (empty with cuBLAS).
  const std::vector<OwnGemmChoice>& own_gemms() const { return own_gemms_; }
  // cuBLAS path: the cuBLASLt plans of the step so far (empty on the own path).
  std::vector<LtBiasGemm::Choice> lt_choices() const {
    return lt_ ? lt_->choices() : std::vector<LtBiasGemm::Choice>{};
  }

  // Device bytes a model of this shape allocates.
  static uint64_t DeviceBytes(const MlpShape& shape, bool own_gemm);
  // Floating-point operations of one step (forward + backward + update), padded shapes.
  static double StepFlops(const MlpShape& shape);

  // Enqueues one training step on `samples` staged rows (device memory) and their labels.
  // The step's mean loss lands in loss slot `step % kLossSlots`, read with Losses().
  // Rows of pixels (image.side > 0) are normalized into the input as gpu::GatherInput says.
  void EnqueueStep(const void* staged, bool floats, const gpu::StagedImage& image,
                   uint64_t row_bytes, int samples, const uint32_t* labels, uint64_t step);
  // Enqueues a step on the model's own random input (calibration, tests).
  void EnqueueSyntheticStep(uint64_t step);

  // Data-parallel training: from now on every step's gradients (all layers' weights and
  // biases, one contiguous float array) are handed to `reduce` on the model's stream after
  // the backward pass, which must leave their sum over the `ranks` replicas in place (an
  // all-reduce); the update then applies their mean. Allocates the gradient array.
  using GradientReduce = std::function<void(float* gradients, uint64_t count, cudaStream_t)>;
  void ReduceGradients(GradientReduce reduce, int ranks);
  // Floats in the gradient array (all parameters, padded shapes).
  uint64_t parameter_count() const;

  // Mean losses of steps [0, steps) (copied back; synchronizes the stream).
  std::vector<float> Losses(uint64_t steps);

  int padded_hidden() const { return dims_[1]; }
  float learning_rate() const { return lr_; }
  static constexpr uint64_t kLossSlots = 1 << 20;

 private:
  // C = alpha · op(A)·op(B) + beta · C; alpha 1 and beta 0 only on the own path.
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
            float* c, float alpha = 1, float beta = 0);
  // The own path's GEMM with `kernel`: rung 6 on transposed copies, or rung 9 on bf16 ones.
  void OwnGemm(GemmKernel kernel, bool trans_a, bool trans_b, int m, int n, int k, const float* a,
               const float* b, float* c);
  // Fills own_gemms_: every distinct GEMM of a step, on the model's own buffers.
  void PickOwnRungs(OwnRungs rungs);
  // The step's kernels; its mean loss lands in `loss`.
  void Train(int samples, const uint32_t* labels, float* loss);
  // What makes a captured step's graph replayable: its operands' addresses and shape.
  struct GraphKey {
    const void* staged;
    bool floats;
    int image_side;
    uint64_t row_bytes;
    int samples;
    const uint32_t* labels;
    auto operator<=>(const GraphKey&) const = default;
  };
  // Enqueues `body` (the step, its loss into the pointer given) for `step`: as a replayed
  // graph where graphs are on, else launch by launch.
  void Enqueue(const GraphKey& key, const std::function<void(float*)>& body, uint64_t step);
  void DropGraphs();
  // Records `event` on the stream (an external event node while capturing); null: nothing.
  void Record(cudaEvent_t event);
  // SGD on layer l's weights and biases from gradients `dw`, `db`.
  SgdTarget UpdateOf(int l, const float* dw, const float* db, float lr);

  MlpShape shape_;
  bool own_;
  cublasHandle_t cublas_;
  cudaStream_t stream_;
  float lr_;
  std::vector<int> dims_;                     // padded: dims_[0] input … dims_[L] classes
  std::vector<DeviceBuffer<float>> weights_;  // layer l: dims_[l] × dims_[l+1]
  std::vector<DeviceBuffer<float>> biases_;
  std::vector<DeviceBuffer<float>> acts_;  // acts_[0] = input, acts_[L] = logits
  DeviceBuffer<float> grad_[2], dweight_, scratch_a_, scratch_b_;
  std::vector<DeviceBuffer<float>> dbias_;  // layer l's bias gradient
  // cuBLAS: the forward GEMMs with their bias and ReLU (hidden layers keep ReLU's mask), and
  // the hidden layers' input gradients with ReLU's backward and the bias gradient (with
  // STALLSCOPE_LT_BACKWARD=1 only: not yet run on a GPU).
  std::unique_ptr<LtBiasGemm> lt_;
  std::vector<DeviceBuffer<uint8_t>> relu_masks_;
  std::vector<bool> lt_backward_;  // layer l's input gradient through lt_
  std::vector<OwnGemmChoice> own_gemms_;
  DeviceBuffer<float> losses_;
  DeviceBuffer<float> loss_now_;  // a graph's step writes its loss here
  bool use_graphs_ = false;
  std::map<GraphKey, cudaGraphExec_t> graphs_;
  uint64_t graphs_captured_ = 0;
  cudaEvent_t step_start_ = nullptr, step_end_ = nullptr;
  DeviceBuffer<uint32_t> synthetic_labels_;
  GradientReduce reduce_;  // set for data-parallel training
  int ranks_ = 1;
  DeviceBuffer<float> all_grads_;  // data-parallel: layer l's dW then db, layer by layer
};

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_MLP_MODEL_H_
