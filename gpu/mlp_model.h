// MlpModel: the real training step the CUDA device runs on every batch.
//
// An MLP of `layers` linear layers (input → hidden → … → hidden → classes) with ReLU between
// them: forward (GEMM + bias + ReLU), softmax cross-entropy against the samples' labels,
// backward, and a plain SGD update, all on one CUDA stream. The GEMMs are cuBLAS SGEMM (the
// forward ones through cuBLASLt, bias and ReLU in their epilogue: gpu/lt_gemm.h) or the
// kernel ladder's best own fp32 kernel (gpu.gemm: own). Every dimension is padded up to
// a multiple of 128 (the own kernels' tile); padded rows and classes carry no gradient.
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
#include "gpu/kernels/training.h"
#include "gpu/lt_gemm.h"

namespace stallscope::gpu {

// A concrete model shape (CudaDevice fills every field from the scenario; nothing defaults).
struct MlpShape {
  int batch = 0, input = 0, hidden = 0, layers = 0, classes = 0;
};

class MlpModel {
 public:
  // Allocates parameters (He-initialized from `seed`), activations and gradients.
  MlpModel(const MlpShape& shape, bool own_gemm, cublasHandle_t cublas, cudaStream_t stream,
           uint64_t seed);
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

  // Device bytes a model of this shape allocates.
  static uint64_t DeviceBytes(const MlpShape& shape, bool own_gemm);
  // Floating-point operations of one step (forward + backward + update), padded shapes.
  static double StepFlops(const MlpShape& shape);

  // Enqueues one training step on `samples` staged rows (device memory) and their labels.
  // The step's mean loss lands in loss slot `step % kLossSlots`, read with Losses().
  void EnqueueStep(const void* staged, bool floats, uint64_t row_bytes, int samples,
                   const uint32_t* labels, uint64_t step);
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
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
            float* c);
  // The step's kernels; its mean loss lands in `loss`.
  void Train(int samples, const uint32_t* labels, float* loss);
  // What makes a captured step's graph replayable: its operands' addresses and shape.
  struct GraphKey {
    const void* staged;
    bool floats;
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
  DeviceBuffer<float> grad_[2], dweight_, dbias_[2], scratch_a_, scratch_b_;
  std::unique_ptr<LtBiasGemm> lt_;  // cuBLAS: the forward GEMMs with their bias and ReLU
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
