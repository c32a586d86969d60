#include "gpu/mlp_model.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "gpu/kernels/gemm.h"
#include "gpu/kernels/training.h"

namespace stallscope::gpu {
namespace {

int Pad(int n) { return (std::max(n, 1) + 127) / 128 * 128; }

std::vector<int> PaddedDims(const MlpShape& s) {
  std::vector<int> d;
  d.push_back(Pad(s.input));
  for (int l = 1; l < s.layers; ++l) d.push_back(Pad(s.hidden));
  d.push_back(Pad(s.classes));
  return d;
}

// SGD step size: 0.05 at width 512 (checked to halve the loss within 300 steps on gen's
// data), scaled down as 1/sqrt(width) above it so wide calibrated models stay stable.
float LearningRate(int hidden) {
  return 0.05f * std::min(1.0f, std::sqrt(512.0f / static_cast<float>(std::max(hidden, 1))));
}

}  // namespace

uint64_t MlpModel::DeviceBytes(const MlpShape& s, bool own_gemm) {
  const std::vector<int> d = PaddedDims(s);
  const uint64_t b = static_cast<uint64_t>(Pad(s.batch));
  uint64_t floats = 0, widest = 0, biggest_w = 0;
  for (size_t l = 0; l + 1 < d.size(); ++l) {
    const uint64_t w = static_cast<uint64_t>(d[l]) * d[l + 1];
    floats += w + d[l + 1];
    biggest_w = std::max(biggest_w, w);
  }
  for (int x : d) {
    floats += b * x;  // activations
    widest = std::max<uint64_t>(widest, x);
  }
  floats += 2 * b * widest + biggest_w + 2 * widest;            // gradients, dW, db ×2
  if (own_gemm) floats += 2 * std::max(biggest_w, b * widest);  // transposed operands
  const uint64_t lt = own_gemm ? 0 : LtBiasGemm::kWorkspaceBytes;
  return floats * sizeof(float) + (kLossSlots + 1) * sizeof(float) + b * sizeof(uint32_t) + lt;
}

double MlpModel::StepFlops(const MlpShape& s) {
  const std::vector<int> d = PaddedDims(s);
  double flops = 0;
  for (size_t l = 0; l + 1 < d.size(); ++l) flops += 6.0 * Pad(s.batch) * d[l] * d[l + 1];
  return flops;
}

MlpModel::MlpModel(const MlpShape& shape, bool own_gemm, cublasHandle_t cublas, cudaStream_t stream,
                   uint64_t seed)
    : shape_(shape), own_(own_gemm), cublas_(cublas), stream_(stream), dims_(PaddedDims(shape)) {
  lr_ = LearningRate(dims_.size() > 2 ? dims_[1] : dims_[0]);
  const int b = Pad(shape.batch);
  std::mt19937_64 rng(seed);
  uint64_t widest = 0, biggest_w = 0;
  for (size_t l = 0; l + 1 < dims_.size(); ++l) {
    const uint64_t n = static_cast<uint64_t>(dims_[l]) * dims_[l + 1];
    biggest_w = std::max(biggest_w, n);
    // He initialization (uniform, variance 2 / fan-in) over the real fan-in, drawn on the GPU:
    // calibration builds models of up to billions of weights.
    const int fan_in = l == 0 ? shape.input : shape.hidden;
    weights_.emplace_back(n);
    STALLSCOPE_CUDA(FillUniform(weights_.back().get(), static_cast<int64_t>(n), rng() | 1, stream_,
                                std::sqrt(6.0f / static_cast<float>(std::max(fan_in, 1)))));
    biases_.emplace_back(dims_[l + 1]);
    STALLSCOPE_CUDA(cudaMemset(biases_.back().get(), 0, dims_[l + 1] * sizeof(float)));
  }
  for (int x : dims_) {
    acts_.emplace_back(static_cast<uint64_t>(b) * x);
    widest = std::max<uint64_t>(widest, x);
  }
  for (auto& g : grad_) g = DeviceBuffer<float>(static_cast<uint64_t>(b) * widest);
  dweight_ = DeviceBuffer<float>(biggest_w);
  for (auto& d : dbias_) d = DeviceBuffer<float>(widest);
  if (own_) {
    scratch_a_ = DeviceBuffer<float>(std::max(biggest_w, b * widest));
    scratch_b_ = DeviceBuffer<float>(std::max(biggest_w, b * widest));
  } else {
    lt_ = std::make_unique<LtBiasGemm>();
    const int layers = static_cast<int>(weights_.size());
    for (int l = 0; l < layers; ++l) {
      lt_->Plan(l, b, dims_[l], dims_[l + 1], biases_[l].get(), /*relu=*/l + 1 < layers);
    }
  }
  losses_ = DeviceBuffer<float>(kLossSlots);
  STALLSCOPE_CUDA(cudaMemset(losses_.get(), 0, kLossSlots * sizeof(float)));
  loss_now_ = DeviceBuffer<float>(1);
  synthetic_labels_ = DeviceBuffer<uint32_t>(b);
  std::vector<uint32_t> labels(b);
  for (int i = 0; i < b; ++i) labels[i] = static_cast<uint32_t>(i % std::max(shape.classes, 1));
  STALLSCOPE_CUDA(cudaMemcpy(synthetic_labels_.get(), labels.data(), b * sizeof(uint32_t),
                             cudaMemcpyHostToDevice));
  STALLSCOPE_CUDA(FillUniform(acts_[0].get(), static_cast<int64_t>(b) * dims_[0], seed, stream_));
  STALLSCOPE_CUDA(cudaStreamSynchronize(stream_));
}

void MlpModel::Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
                    float* c) {
  // Row-major C (m×n) = op(A) · op(B); op(A) is m×k, op(B) is k×n.
  if (!own_) {
    // cuBLAS is column-major: C^T = op(B)^T · op(A)^T, with each row-major matrix read as
    // its column-major transpose.
    const float one = 1, zero = 0;
    STALLSCOPE_CUBLAS(cublasSgemm(cublas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b,
                                  trans_b ? k : n, a, trans_a ? m : k, &zero, c, n));
    return;
  }
  if (trans_a) {  // A is stored k×m
    STALLSCOPE_CUDA(Transpose(a, k, m, scratch_a_.get(), stream_));
    a = scratch_a_.get();
  }
  if (trans_b) {  // B is stored n×k
    STALLSCOPE_CUDA(Transpose(b, n, k, scratch_b_.get(), stream_));
    b = scratch_b_.get();
  }
  STALLSCOPE_CUDA(LaunchGemm(kBestOwnFp32, m, n, k, a, b, c, stream_));
}

MlpModel::~MlpModel() { DropGraphs(); }

void MlpModel::DropGraphs() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
}

void MlpModel::EnqueueStep(const void* staged, bool floats, uint64_t row_bytes, int samples,
                           const uint32_t* labels, uint64_t step) {
  Enqueue(
      GraphKey{staged, floats, row_bytes, samples, labels},
      [=, this](float* loss) {
        Record(step_start_);
        STALLSCOPE_CUDA(GatherInput(staged, floats, row_bytes, samples, shape_.input,
                                    Pad(shape_.batch), dims_[0], acts_[0].get(), stream_));
        Train(samples, labels, loss);
        Record(step_end_);
      },
      step);
}

void MlpModel::Record(cudaEvent_t event) {
  if (event == nullptr) return;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (stream_ != nullptr) STALLSCOPE_CUDA(cudaStreamIsCapturing(stream_, &capture));
  // Captured: an event record node of the graph, recorded where the graph runs it.
  STALLSCOPE_CUDA(cudaEventRecordWithFlags(
      event, stream_,
      capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault));
}

void MlpModel::EnqueueSyntheticStep(uint64_t step) {
  Enqueue(
      GraphKey{nullptr, false, 0, shape_.batch, synthetic_labels_.get()},
      [this](float* loss) { Train(shape_.batch, synthetic_labels_.get(), loss); }, step);
}

void MlpModel::Enqueue(const GraphKey& key, const std::function<void(float*)>& body,
                       uint64_t step) {
  float* slot = losses_.get() + step % kLossSlots;
  if (!use_graphs_ || reduce_ || stream_ == nullptr) {
    body(slot);
    return;
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    // Two input buffers × (full, last partial batch) at most in a run; a bound all the same.
    if (graphs_.size() >= 16) DropGraphs();
    STALLSCOPE_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      body(loss_now_.get());
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    STALLSCOPE_CUDA(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    STALLSCOPE_CUDA(instantiated);
    it = graphs_.emplace(key, exec).first;
    ++graphs_captured_;
  }
  STALLSCOPE_CUDA(cudaGraphLaunch(it->second, stream_));
  STALLSCOPE_CUDA(
      cudaMemcpyAsync(slot, loss_now_.get(), sizeof(float), cudaMemcpyDeviceToDevice, stream_));
}

uint64_t MlpModel::parameter_count() const {
  uint64_t n = 0;
  for (size_t l = 0; l + 1 < dims_.size(); ++l) {
    n += static_cast<uint64_t>(dims_[l]) * dims_[l + 1] + dims_[l + 1];
  }
  return n;
}

void MlpModel::ReduceGradients(GradientReduce reduce, int ranks) {
  reduce_ = std::move(reduce);
  ranks_ = std::max(ranks, 1);
  all_grads_ = DeviceBuffer<float>(parameter_count());
}

void MlpModel::Train(int samples, const uint32_t* labels, float* loss) {
  const int b = Pad(shape_.batch);
  const int layers = static_cast<int>(weights_.size());
  for (int l = 0; l < layers; ++l) {
    // cuBLAS: bias and ReLU in the GEMM's epilogue (cuBLASLt) where it has an algorithm.
    if (lt_ && lt_->Run(l, acts_[l].get(), weights_[l].get(), acts_[l + 1].get(), stream_))
      continue;
    Gemm(false, false, b, dims_[l + 1], dims_[l], acts_[l].get(), weights_[l].get(),
         acts_[l + 1].get());
    STALLSCOPE_CUDA(BiasActivation(acts_[l + 1].get(), biases_[l].get(), b, dims_[l + 1],
                                   /*relu=*/l + 1 < layers, stream_));
  }
  // Where each layer's gradients land. Single replica: one dW buffer for all layers (each
  // layer's update follows its gradients) and two bias-gradient buffers in turn (layer l's is
  // read by its update in the same launch that writes layer l-1's). Data-parallel: every
  // layer's gradients in all_grads_, summed across the replicas, then the updates with the
  // mean (lr / ranks).
  std::vector<float*> dw(layers), db(layers);
  float* next = all_grads_.get();
  for (int l = layers - 1; l >= 0; --l) {
    if (reduce_) {
      dw[l] = next;
      db[l] = next + static_cast<uint64_t>(dims_[l]) * dims_[l + 1];
      next = db[l] + dims_[l + 1];
    } else {
      dw[l] = dweight_.get();
      db[l] = dbias_[l % 2].get();
    }
  }
  float* dz = grad_[0].get();
  float* da = grad_[1].get();
  STALLSCOPE_CUDA(SoftmaxCrossEntropy(acts_[layers].get(), labels, b, dims_[layers], samples,
                                      shape_.classes, dz, db[layers - 1], loss, stream_));
  for (int l = layers - 1; l >= 0; --l) {
    const int n_in = dims_[l], n_out = dims_[l + 1];
    Gemm(true, false, n_in, n_out, b, acts_[l].get(), dz, dw[l]);             // dW = Aᵀ·dZ
    if (l > 0) Gemm(false, true, b, n_in, n_out, dz, weights_[l].get(), da);  // dA = dZ·Wᵀ
    const SgdTarget sgd = reduce_ ? SgdTarget{} : UpdateOf(l, dw[l], db[l], lr_);
    STALLSCOPE_CUDA(ReluBackwardAndUpdate(l > 0 ? da : nullptr, acts_[l].get(), b, n_in,
                                          l > 0 ? db[l - 1] : nullptr, sgd, stream_));
    std::swap(dz, da);
  }
  if (!reduce_) return;
  reduce_(all_grads_.get(), parameter_count(), stream_);
  for (int l = 0; l < layers; ++l) {
    STALLSCOPE_CUDA(ReluBackwardAndUpdate(
        nullptr, nullptr, 0, 0, nullptr,
        UpdateOf(l, dw[l], db[l], lr_ / static_cast<float>(ranks_)), stream_));
  }
}

SgdTarget MlpModel::UpdateOf(int l, const float* dw, const float* db, float lr) {
  return {.w = weights_[l].get(),
          .dw = dw,
          .nw = static_cast<int64_t>(dims_[l]) * dims_[l + 1],
          .b = biases_[l].get(),
          .db = db,
          .nb = dims_[l + 1],
          .lr = lr};
}

std::vector<float> MlpModel::Losses(uint64_t steps) {
  steps = std::min(steps, kLossSlots);
  std::vector<float> out(steps);
  STALLSCOPE_CUDA(cudaStreamSynchronize(stream_));
  if (steps) {
    STALLSCOPE_CUDA(
        cudaMemcpy(out.data(), losses_.get(), steps * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return out;
}

}  // namespace stallscope::gpu
