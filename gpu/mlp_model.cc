#include "gpu/mlp_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

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
// The hidden layers' input gradients through cuBLASLt's DRELU_BGRAD epilogue (two launches
// fewer a 4-layer step): STALLSCOPE_LT_BACKWARD=1. Off by default: on the H200 (2026-12-05)
// its tests pass but its 5 ms graph step left more idle between kernels (gpu/NOTES.md).
bool LtBackwardOn() {
  static const bool on = [] {
    const char* v = std::getenv("STALLSCOPE_LT_BACKWARD");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

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
  floats += 2 * b * widest + biggest_w + d.size() * widest;  // gradients, dW, db per layer
  floats += b * widest * d.size() / 32;                      // ReLU masks (bits), at most
  // Transposed (or bf16) operands, and while the rungs are picked a second output to compare.
  if (own_gemm) floats += 3 * std::max(biggest_w, b * widest);
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
                   uint64_t seed, OwnRungs rungs)
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
  for (size_t l = 0; l + 1 < dims_.size(); ++l) dbias_.emplace_back(widest);
  if (own_) {
    scratch_a_ = DeviceBuffer<float>(std::max(biggest_w, b * widest));
    scratch_b_ = DeviceBuffer<float>(std::max(biggest_w, b * widest));
  } else {
    lt_ = std::make_unique<LtBiasGemm>();
    const int layers = static_cast<int>(weights_.size());
    std::vector<bool> masked(layers, false);
    lt_backward_.assign(layers, false);
    const bool backward = LtBackwardOn();
    for (int l = 0; l < layers; ++l) {
      const bool hidden = l + 1 < layers;
      relu_masks_.emplace_back(hidden && backward ? static_cast<uint64_t>(dims_[l + 1]) * b / 8
                                                  : 0);
      masked[l] = lt_->Plan(l, b, dims_[l], dims_[l + 1], biases_[l].get(), hidden,
                            hidden && backward ? relu_masks_[l].get() : nullptr) &&
                  hidden && backward;
      // Layer l's input gradient needs the mask the layer below's forward GEMM wrote.
      lt_backward_[l] = l > 0 && masked[l - 1] &&
                        lt_->PlanBackward(l, b, dims_[l], dims_[l + 1], relu_masks_[l - 1].get(),
                                          dbias_[l - 1].get());
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
  if (own_) PickOwnRungs(rungs);
  STALLSCOPE_CUDA(cudaStreamSynchronize(stream_));
}

void MlpModel::Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
                    float* c, float alpha, float beta) {
  // Row-major C (m×n) = op(A) · op(B); op(A) is m×k, op(B) is k×n.
  if (!own_) {
    // Through cuBLASLt where it has an algorithm: one that launches kernels only (LtBiasGemm).
    if (lt_ && lt_->Gemm(trans_a, trans_b, m, n, k, a, b, c, alpha, beta, stream_)) return;
    // cuBLAS is column-major: C^T = op(B)^T · op(A)^T, with each row-major matrix read as
    // its column-major transpose.
    STALLSCOPE_CUBLAS(cublasSgemm(cublas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b,
                                  trans_b ? k : n, a, trans_a ? m : k, &beta, c, n));
    return;
  }
  if (alpha != 1 || beta != 0) throw std::logic_error("own GEMMs compute C = op(A)·op(B) only");
  GemmKernel kernel = kBestOwnFp32;
  for (const OwnGemmChoice& g : own_gemms_) {
    if (g.Is(trans_a, trans_b, m, n, k)) kernel = g.kernel;
  }
  OwnGemm(kernel, trans_a, trans_b, m, n, k, a, b, c);
}

void MlpModel::OwnGemm(GemmKernel kernel, bool trans_a, bool trans_b, int m, int n, int k,
                       const float* a, const float* b, float* c) {
  if (kernel == GemmKernel::kTmaWgmmaBf16) {
    // Rung 9 reads A as m×k and B as its transpose, n×k, both bf16 (K contiguous).
    STALLSCOPE_CUDA(
        ToBf16Matrix(a, trans_a ? k : m, trans_a ? m : k, trans_a, scratch_a_.get(), stream_));
    STALLSCOPE_CUDA(
        ToBf16Matrix(b, trans_b ? n : k, trans_b ? k : n, !trans_b, scratch_b_.get(), stream_));
    STALLSCOPE_CUDA(LaunchGemm(kernel, m, n, k, scratch_a_.get(), scratch_b_.get(), c, stream_));
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
  STALLSCOPE_CUDA(LaunchGemm(kernel, m, n, k, a, b, c, stream_));
}

void MlpModel::PickOwnRungs(OwnRungs rungs) {
  const int b = Pad(shape_.batch);
  const int layers = static_cast<int>(weights_.size());
  // Every buffer a GEMM reads holds finite values (the step overwrites them all before use).
  for (int l = 1; l <= layers; ++l) {
    STALLSCOPE_CUDA(
        FillUniform(acts_[l].get(), static_cast<int64_t>(b) * dims_[l], 11 + l, stream_));
  }
  for (int i = 0; i < 2; ++i) {
    STALLSCOPE_CUDA(
        FillUniform(grad_[i].get(), static_cast<int64_t>(grad_[i].size()), 7 + i, stream_));
  }
  struct Call {
    OwnGemmChoice shape;
    const float *a, *b;
    float* c;
  };
  std::vector<Call> calls;
  auto add = [&](bool ta, bool tb, int m, int n, int k, const float* a, const float* bb, float* c) {
    for (const Call& x : calls) {
      if (x.shape.Is(ta, tb, m, n, k)) return;
    }
    calls.push_back({OwnGemmChoice{ta, tb, m, n, k}, a, bb, c});
  };
  for (int l = 0; l < layers; ++l) {  // the step's GEMMs, as Train calls them
    add(false, false, b, dims_[l + 1], dims_[l], acts_[l].get(), weights_[l].get(),
        acts_[l + 1].get());
    add(true, false, dims_[l], dims_[l + 1], b, acts_[l].get(), grad_[0].get(), dweight_.get());
    if (l > 0)
      add(false, true, b, dims_[l], dims_[l + 1], grad_[0].get(), weights_[l].get(),
          grad_[1].get());
  }
  const GemmKernel bf16 = GemmKernel::kTmaWgmmaBf16;
  uint64_t biggest = 0;
  for (const Call& x : calls)
    biggest = std::max<uint64_t>(biggest, uint64_t(x.shape.m) * x.shape.n);
  DeviceBuffer<float> reference(biggest);
  DeviceBuffer<double> sums(3);
  Event t0, t1;
  auto time_ms = [&](GemmKernel kernel, const Call& x, float* c) {
    const OwnGemmChoice& g = x.shape;
    STALLSCOPE_CUDA(cudaEventRecord(t0.get(), stream_));
    OwnGemm(kernel, g.trans_a, g.trans_b, g.m, g.n, g.k, x.a, x.b, c);
    STALLSCOPE_CUDA(cudaEventRecord(t1.get(), stream_));
    STALLSCOPE_CUDA(cudaEventSynchronize(t1.get()));
    return static_cast<double>(t1.MillisecondsSince(t0));
  };
  for (Call& x : calls) {
    OwnGemmChoice& g = x.shape;
    const bool fits = GemmKernelRunsHere(bf16) && GemmShapeError(bf16, g.m, g.n, g.k).empty();
    if (!fits || rungs == OwnRungs::kFp32) {
      own_gemms_.push_back(g);
      continue;
    }
    // Rung 9 against rung 6 on the same operands: validated on this shape, then timed (the
    // best of 5 alternated runs each, after one untimed run of each).
    const int64_t count = static_cast<int64_t>(g.m) * g.n;
    STALLSCOPE_CUDA(FillNaN(reference.get(), count, stream_));
    STALLSCOPE_CUDA(FillNaN(x.c, count, stream_));
    time_ms(kBestOwnFp32, x, reference.get());
    time_ms(bf16, x, x.c);
    STALLSCOPE_CUDA(cudaMemsetAsync(sums.get(), 0, 3 * sizeof(double), stream_));
    STALLSCOPE_CUDA(ErrorSums(x.c, reference.get(), count, sums.get(), stream_));
    double host[3];
    STALLSCOPE_CUDA(cudaMemcpy(host, sums.get(), sizeof(host), cudaMemcpyDeviceToHost));
    g.bf16_error = host[2] > 0 ? 1.0 : std::sqrt(host[0] / std::max(host[1], 1e-300));
    g.fp32_ms = g.bf16_ms = 1e300;
    for (int rep = 0; rep < 5 && rungs == OwnRungs::kFastest; ++rep) {
      g.fp32_ms = std::min(g.fp32_ms, time_ms(kBestOwnFp32, x, reference.get()));
      g.bf16_ms = std::min(g.bf16_ms, time_ms(bf16, x, x.c));
    }
    if (rungs == OwnRungs::kBf16) g.fp32_ms = g.bf16_ms = 0;
    // The ladder's bound for the bf16 rungs (their error is the inputs' rounding, ~2e-3).
    if (g.bf16_error < 1e-2 && g.bf16_ms <= g.fp32_ms) g.kernel = bf16;
    own_gemms_.push_back(g);
  }
}

MlpModel::~MlpModel() { DropGraphs(); }

void MlpModel::DropGraphs() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
}

void MlpModel::EnqueueStep(const void* staged, bool floats, const gpu::StagedImage& image,
                           uint64_t row_bytes, int samples, const uint32_t* labels, uint64_t step) {
  Enqueue(
      GraphKey{staged, floats, image.side, row_bytes, samples, labels},
      [=, this](float* loss) {
        Record(step_start_);
        STALLSCOPE_CUDA(GatherInput(staged, floats, image, row_bytes, samples, shape_.input,
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
      GraphKey{nullptr, false, 0, 0, shape_.batch, synthetic_labels_.get()},
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
      db[l] = dbias_[l].get();
    }
  }
  float* dz = grad_[0].get();
  float* da = grad_[1].get();
  // cuBLAS with one replica: each weight-gradient GEMM applies the SGD step into W (alpha
  // -lr, beta 1) after the GEMM that reads the old W; each hidden layer's input gradient comes
  // with ReLU's backward and the bias gradient from cuBLASLt (else the ReLU-backward kernel
  // sums it and steps the bias), and those biases step together in one launch at the end.
  const bool fused = !own_ && !reduce_;
  auto bias_step = [&](int l) { return fused ? BiasStep{biases_[l].get(), lr_} : BiasStep{}; };
  SgdBatch hidden_biases;
  hidden_biases.lr = lr_;
  STALLSCOPE_CUDA(SoftmaxCrossEntropy(acts_[layers].get(), labels, b, dims_[layers], samples,
                                      shape_.classes, dz, db[layers - 1], loss, stream_,
                                      bias_step(layers - 1)));
  for (int l = layers - 1; l >= 0; --l) {
    const int n_in = dims_[l], n_out = dims_[l + 1];
    const bool lt_back = fused && lt_ && lt_backward_[l] && hidden_biases.count < SgdBatch::kMax &&
                         lt_->RunBackward(l, dz, weights_[l].get(), da, stream_);
    if (l > 0 && !lt_back) Gemm(false, true, b, n_in, n_out, dz, weights_[l].get(), da);  // dZ·Wᵀ
    if (fused) {
      Gemm(true, false, n_in, n_out, b, acts_[l].get(), dz, weights_[l].get(), -lr_, 1);
    } else {
      Gemm(true, false, n_in, n_out, b, acts_[l].get(), dz, dw[l]);  // dW = Aᵀ·dZ
    }
    if (lt_back) {
      const int j = hidden_biases.count++;
      hidden_biases.w[j] = biases_[l - 1].get();
      hidden_biases.g[j] = db[l - 1];
      hidden_biases.n[j] = n_in;
    } else {
      const SgdTarget sgd = reduce_ || fused ? SgdTarget{} : UpdateOf(l, dw[l], db[l], lr_);
      STALLSCOPE_CUDA(ReluBackwardAndUpdate(l > 0 ? da : nullptr, acts_[l].get(), b, n_in,
                                            l > 0 ? db[l - 1] : nullptr, sgd, stream_,
                                            l > 0 ? bias_step(l - 1) : BiasStep{}));
    }
    std::swap(dz, da);
  }
  STALLSCOPE_CUDA(SgdUpdateMany(hidden_biases, stream_));
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
