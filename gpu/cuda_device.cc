#include "gpu/cuda_device.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>

#include "base/units.h"
#include "gpu/cuda_util.h"
#include "gpu/cupti_busy.h"
#include "gpu/mlp_model.h"

namespace stallscope::gpu {
namespace {

constexpr int kMaxHidden = 65536;

std::string Gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

// Calibrated widths by shape and target, so variants of one scenario calibrate once.
std::mutex calibration_mu;
std::map<std::string, std::pair<int, double>> calibrations;

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
};

}  // namespace

struct CudaDevice::Impl {
  CudaDeviceOptions options;
  cudaDeviceProp prop{};
  cublasHandle_t cublas = nullptr;
  cudaStream_t copy_stream = nullptr, compute_stream = nullptr;
  MlpShape shape;
  std::unique_ptr<MlpModel> model;
  double step_seconds = 0;  // measured for the final model
  bool calibrated = false;
  // Three input buffers: while step k runs and step k+1 waits queued behind it, batch k+2 is
  // copied into the third (the two-buffer rule of pipeline/device.h, one step further on).
  static constexpr int kBuffers = 3;
  DeviceBuffer<std::byte> inputs[kBuffers];
  DeviceBuffer<uint32_t> labels[kBuffers];
  uint32_t* pinned_labels[kBuffers] = {};
  uint64_t input_capacity = 0;
  uint32_t label_capacity = 0;
  // Per input buffer: a step on buffer k is bracketed by step_start[k] and step_end[k], and a
  // copy into buffer k waits for step_end[k] (the last step that read it).
  std::unique_ptr<Event> copy_start[kBuffers], copy_done[kBuffers], step_start[kBuffers],
      step_end[kBuffers];
  struct Launched {
    int buffer;
    double at;  // host time of the launch
  };
  std::deque<Launched> launched;  // in step order, not yet waited for
  double last_end = 0;            // the previous step's end, as Wait() saw it
  uint64_t queued = 0;            // steps launched while another was still in flight
  std::vector<double> event_busy;
  uint64_t h2d_bytes = 0;
  double h2d_event_seconds = 0;
  uint64_t steps = 0;
  double prepared_at = 0;
  bool cupti = false;
  std::string cupti_note;
  std::vector<void*> pinned;
  ncclComm_t nccl = nullptr;  // data-parallel only
  std::unique_ptr<Event> reduce_start, reduce_end;
  bool reduced = false;  // this step all-reduced (read its events after the step)
  uint64_t allreduce_bytes = 0;
  double allreduce_seconds = 0;
  DeviceBuffer<std::byte> state;  // checkpoint.*: the state a checkpoint writes
  cudaStream_t state_stream = nullptr;

  // Seconds per training step of a model of `hidden` width (median of timed synthetic
  // steps after warm-up), or a negative value when it does not fit in device memory.
  double MeasureStep(int hidden, std::unique_ptr<MlpModel>* keep) {
    MlpShape s = shape;
    s.hidden = hidden;
    size_t free = 0, total = 0;
    STALLSCOPE_CUDA(cudaMemGetInfo(&free, &total));
    if (static_cast<double>(MlpModel::DeviceBytes(s, (options.device.gemm == GemmKind::kOwn))) >
        0.85 * free)
      return -1;
    auto m = std::make_unique<MlpModel>(s, (options.device.gemm == GemmKind::kOwn), cublas,
                                        compute_stream, options.seed);
    m->UseGraphs(options.device.graph);  // calibrated as it will run
    for (int i = 0; i < 2; ++i) m->EnqueueSyntheticStep(i);
    STALLSCOPE_CUDA(cudaStreamSynchronize(compute_stream));
    std::vector<double> times;
    Event a, b;
    for (int i = 0; i < 5; ++i) {
      STALLSCOPE_CUDA(cudaEventRecord(a.get(), compute_stream));
      m->EnqueueSyntheticStep(2 + i);
      STALLSCOPE_CUDA(cudaEventRecord(b.get(), compute_stream));
      STALLSCOPE_CUDA(cudaEventSynchronize(b.get()));
      times.push_back(b.MillisecondsSince(a) / 1000.0);
    }
    std::sort(times.begin(), times.end());
    if (keep) *keep = std::move(m);
    return times[times.size() / 2];
  }

  std::string Where() const {
    return options.scenario_file.empty() ? std::string("gpu.model")
                                         : options.scenario_file + ": gpu.model";
  }

  void Calibrate() {
    const double target = options.device.step_time;
    const std::string key =
        fmt::format("{}/{}/{}/{}/{}/{}/{}", shape.batch, shape.input, shape.layers, shape.classes,
                    target, (options.device.gemm == GemmKind::kOwn), options.device.graph);
    {
      std::lock_guard lock(calibration_mu);
      if (auto it = calibrations.find(key); it != calibrations.end()) {
        step_seconds = MeasureStep(it->second.first, &model);
        calibrated = true;
        return;
      }
    }
    int lo = 128;
    const double t_lo = MeasureStep(lo, nullptr);
    if (t_lo < 0) {
      throw CudaSetupError(fmt::format("{}: even hidden width 128 does not fit in {}'s free memory",
                                       Where(), prop.name));
    }
    if (t_lo > target * 1.05) {
      throw CudaSetupError(fmt::format(
          "{}: gpu.step_time {} cannot be reached on {}: the narrowest model (hidden 128, batch "
          "{}, {} layers) already takes {} per step; raise gpu.step_time or lower "
          "loader.batch_size / gpu.model.layers",
          Where(), FormatDuration(target), prop.name, shape.batch, shape.layers,
          FormatDuration(t_lo)));
    }
    int hi = lo;
    double t_hi = t_lo;
    while (t_hi < target) {
      if (hi >= kMaxHidden) break;
      const int next = std::min(hi * 2, kMaxHidden);
      const double t = MeasureStep(next, nullptr);
      if (t < 0) break;  // does not fit
      lo = hi;
      hi = next;
      t_hi = t;
    }
    if (t_hi < target * 0.95) {
      throw CudaSetupError(fmt::format(
          "{}: gpu.step_time {} cannot be reached on {}: the widest model that fits (hidden {}) "
          "takes {} per step; lower gpu.step_time or raise loader.batch_size / gpu.model.layers",
          Where(), FormatDuration(target), prop.name, hi, FormatDuration(t_hi)));
    }
    // Bisect on multiples of 128 until the bracket is one step wide.
    while (hi - lo > 128) {
      const int mid = (lo + hi) / 2 / 128 * 128;
      const double t = MeasureStep(mid, nullptr);
      if (t < 0 || t >= target) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    const double t_a = MeasureStep(lo, nullptr);
    const int width = std::abs(t_a - target) <= std::abs(t_hi - target) ? lo : hi;
    step_seconds = MeasureStep(width, &model);
    calibrated = true;
    std::lock_guard lock(calibration_mu);
    calibrations[key] = {width, step_seconds};
  }
};

CudaDevice::CudaDevice(const CudaDeviceOptions& o) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.options = o;
  if (CudaDeviceCount() == 0) {
    throw CudaSetupError(fmt::format(
        "{}gpu.device: cuda: no CUDA GPU is visible to this process (cudaGetDeviceCount found "
        "none); use gpu.device: emulated, or auto to pick the GPU only where there is one",
        o.scenario_file.empty() ? "" : o.scenario_file + ": "));
  }
  if (o.gpu >= CudaDeviceCount()) {
    throw CudaSetupError(fmt::format("{}gpu.device: cuda: GPU {} asked for, {} visible",
                                     o.scenario_file.empty() ? "" : o.scenario_file + ": ", o.gpu,
                                     CudaDeviceCount()));
  }
  STALLSCOPE_CUDA(cudaSetDevice(o.gpu));
  STALLSCOPE_CUDA(cudaGetDeviceProperties(&d.prop, o.gpu));
  STALLSCOPE_CUDA(cudaFree(nullptr));  // create the context now, not on the first copy
  if (o.cupti) {
    d.cupti = CuptiRecorder::Instance().Start(&d.cupti_note);
  } else {
    d.cupti_note = "CUPTI disabled";
  }
  STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&d.copy_stream, cudaStreamNonBlocking));
  STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&d.compute_stream, cudaStreamNonBlocking));
  STALLSCOPE_CUBLAS(cublasCreate(&d.cublas));
  STALLSCOPE_CUBLAS(cublasSetStream(d.cublas, d.compute_stream));
  for (int i = 0; i < Impl::kBuffers; ++i) {
    d.copy_start[i] = std::make_unique<Event>();
    d.copy_done[i] = std::make_unique<Event>();
    d.step_start[i] = std::make_unique<Event>();
    d.step_end[i] = std::make_unique<Event>();
  }
  d.shape =
      MlpShape{static_cast<int>(o.batch_size), static_cast<int>(o.device.model.input),
               static_cast<int>(o.device.model.hidden), static_cast<int>(o.device.model.layers),
               static_cast<int>(o.device.model.classes)};
  if (o.device.model.hidden == 0) {
    d.Calibrate();
  } else {
    size_t free = 0, total = 0;
    STALLSCOPE_CUDA(cudaMemGetInfo(&free, &total));
    const uint64_t need = MlpModel::DeviceBytes(d.shape, (o.device.gemm == GemmKind::kOwn));
    if (static_cast<double>(need) > 0.9 * free) {
      throw CudaSetupError(fmt::format(
          "{}: the model (input {}, hidden {}, {} layers, {} classes, batch {}) needs {} of "
          "device memory; {} has {} free of {}",
          d.Where(), o.device.model.input, o.device.model.hidden, o.device.model.layers,
          o.device.model.classes, o.batch_size, Gib(need), d.prop.name, Gib(free), Gib(total)));
    }
    d.step_seconds = d.MeasureStep(static_cast<int>(o.device.model.hidden), &d.model);
  }
}

CudaDevice::~CudaDevice() {
  Impl& d = *impl_;
  if (d.compute_stream) cudaStreamSynchronize(d.compute_stream);
  if (d.copy_stream) cudaStreamSynchronize(d.copy_stream);
  d.model.reset();
  if (d.nccl) ncclCommDestroy(d.nccl);
  for (void* p : d.pinned) cudaHostUnregister(p);
  for (uint32_t* p : d.pinned_labels) {
    if (p) cudaFreeHost(p);
  }
  if (d.cublas) cublasDestroy(d.cublas);
  if (d.copy_stream) cudaStreamDestroy(d.copy_stream);
  if (d.compute_stream) cudaStreamDestroy(d.compute_stream);
  if (d.state_stream) cudaStreamDestroy(d.state_stream);
}

void CudaDevice::PrepareState(uint64_t bytes) {
  Impl& d = *impl_;
  STALLSCOPE_CUDA(cudaSetDevice(d.options.gpu));
  size_t free = 0, total = 0;
  STALLSCOPE_CUDA(cudaMemGetInfo(&free, &total));
  if (static_cast<double>(bytes) > 0.9 * static_cast<double>(free)) {
    throw CudaSetupError(fmt::format(
        "checkpoint: a rank's state of {:.2f} GiB does not fit in the {:.2f} GiB free on {}",
        bytes / 1073741824.0, free / 1073741824.0, d.prop.name));
  }
  state_bytes_ = bytes;
  d.state = DeviceBuffer<std::byte>(bytes);
  if (!d.state_stream) {
    STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&d.state_stream, cudaStreamNonBlocking));
  }
  STALLSCOPE_CUDA(cudaMemsetAsync(d.state.get(), 0x5a, bytes, d.state_stream));
  STALLSCOPE_CUDA(cudaStreamSynchronize(d.state_stream));
}

void CudaDevice::Snapshot(std::byte* dst, uint64_t bytes) {
  Impl& d = *impl_;
  STALLSCOPE_CUDA(cudaMemcpyAsync(dst, d.state.get(), std::min(bytes, state_bytes_),
                                  cudaMemcpyDeviceToHost, d.state_stream));
  STALLSCOPE_CUDA(cudaStreamSynchronize(d.state_stream));
}

void CudaDevice::LoadState(const std::byte* src, uint64_t bytes) {
  Impl& d = *impl_;
  STALLSCOPE_CUDA(cudaMemcpyAsync(d.state.get(), src, std::min(bytes, state_bytes_),
                                  cudaMemcpyHostToDevice, d.state_stream));
  STALLSCOPE_CUDA(cudaStreamSynchronize(d.state_stream));
}

std::string CudaDevice::name() const { return std::string("cuda:") + impl_->prop.name; }

double CudaDevice::nominal_step_seconds() const { return impl_->step_seconds; }
namespace {

void CheckNccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    throw DeviceError(fmt::format("NCCL: {} failed: {}", what, ncclGetErrorString(r)));
  }
}

}  // namespace

std::array<char, DataParallelGroup::kIdBytes> CudaDevice::NewNcclId() {
  static_assert(sizeof(ncclUniqueId) == DataParallelGroup::kIdBytes);
  ncclUniqueId id;
  CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::array<char, DataParallelGroup::kIdBytes> out;
  std::memcpy(out.data(), &id, out.size());
  return out;
}

void CudaDevice::JoinDataParallel(const DataParallelGroup& g) {
  Impl& d = *impl_;
  STALLSCOPE_CUDA(cudaSetDevice(d.options.gpu));
  if (g.hidden != d.model->padded_hidden()) {
    d.shape.hidden = g.hidden;
    d.step_seconds = d.MeasureStep(g.hidden, &d.model);
    if (d.step_seconds < 0) {
      throw DeviceError(fmt::format("rank 0's model width {} does not fit in {}'s free memory",
                                    g.hidden, d.prop.name));
    }
  }
  ncclUniqueId id;
  std::memcpy(&id, g.nccl_id.data(), sizeof(id));
  CheckNccl(ncclCommInitRank(&d.nccl, g.ranks, id, g.rank), "ncclCommInitRank");
  d.reduce_start = std::make_unique<Event>();
  d.reduce_end = std::make_unique<Event>();
  d.model->ReduceGradients(
      [&d](float* grads, uint64_t count, cudaStream_t stream) {
        STALLSCOPE_CUDA(cudaEventRecord(d.reduce_start->get(), stream));
        CheckNccl(ncclAllReduce(grads, grads, count, ncclFloat, ncclSum, d.nccl, stream),
                  "ncclAllReduce");
        STALLSCOPE_CUDA(cudaEventRecord(d.reduce_end->get(), stream));
        d.allreduce_bytes += count * sizeof(float);
        d.reduced = true;
      },
      g.ranks);
}

int CudaDevice::hidden_width() const { return impl_->model ? impl_->model->padded_hidden() : 0; }
double CudaDevice::calibrated_step_seconds() const { return impl_->step_seconds; }

void CudaDevice::Prepare(uint64_t max_batch_bytes, uint32_t max_batch_samples) {
  Impl& d = *impl_;
  if (max_batch_samples > d.options.batch_size) {
    throw DeviceError(fmt::format("batches of {} samples exceed the model's batch of {}",
                                  max_batch_samples, d.options.batch_size));
  }
  for (int i = 0; i < Impl::kBuffers; ++i) {
    d.inputs[i] = DeviceBuffer<std::byte>(std::max<uint64_t>(max_batch_bytes, 1));
    d.labels[i] = DeviceBuffer<uint32_t>(std::max<uint32_t>(max_batch_samples, 1));
    if (!d.pinned_labels[i]) {
      STALLSCOPE_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&d.pinned_labels[i]),
                                    d.options.batch_size * sizeof(uint32_t), cudaHostAllocDefault));
    }
  }
  d.input_capacity = max_batch_bytes;
  d.label_capacity = max_batch_samples;
  d.event_busy.clear();
  d.h2d_bytes = 0;
  d.h2d_event_seconds = 0;
  d.allreduce_bytes = 0;
  d.allreduce_seconds = 0;
  d.steps = 0;
  d.launched.clear();
  d.last_end = 0;
  d.queued = 0;
  if (d.cupti) {  // drop the calibration's records
    std::vector<Interval> k, c;
    CuptiRecorder::Instance().Collect(&k, &c);
  }
  d.prepared_at = MonotonicSeconds();
}

void CudaDevice::PinHost(void* p, uint64_t bytes) {
  STALLSCOPE_CUDA(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
  impl_->pinned.push_back(p);
}

void CudaDevice::UnpinHost(void* p) {
  auto& v = impl_->pinned;
  auto it = std::find(v.begin(), v.end(), p);
  if (it == v.end()) return;
  cudaHostUnregister(p);
  v.erase(it);
}

double CudaDevice::CopyIn(int buffer, const DeviceBatch& batch) {
  Impl& d = *impl_;
  if (batch.bytes() > d.input_capacity || batch.samples > d.label_capacity) {
    throw DeviceError("batch larger than the device input buffer");
  }
  NvtxRange range("stallscope: H2D copy");
  if (batch.labels)
    std::memcpy(d.pinned_labels[buffer], batch.labels, batch.samples * sizeof(uint32_t));
  // A queued step may still read this buffer: the copy waits for it on the device.
  STALLSCOPE_CUDA(cudaStreamWaitEvent(d.copy_stream, d.step_end[buffer]->get(), 0));
  STALLSCOPE_CUDA(cudaEventRecord(d.copy_start[buffer]->get(), d.copy_stream));
  STALLSCOPE_CUDA(cudaMemcpyAsync(d.inputs[buffer].get(), batch.data, batch.bytes(),
                                  cudaMemcpyHostToDevice, d.copy_stream));
  STALLSCOPE_CUDA(cudaMemcpyAsync(d.labels[buffer].get(), d.pinned_labels[buffer],
                                  batch.samples * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                  d.copy_stream));
  STALLSCOPE_CUDA(cudaEventRecord(d.copy_done[buffer]->get(), d.copy_stream));
  STALLSCOPE_CUDA(cudaEventSynchronize(d.copy_done[buffer]->get()));
  const double seconds = d.copy_done[buffer]->MillisecondsSince(*d.copy_start[buffer]) / 1000.0;
  d.h2d_bytes += batch.bytes();
  d.h2d_event_seconds += seconds;
  return seconds;
}

StepTiming CudaDevice::Step(int buffer, const DeviceBatch& batch, double earliest_start) {
  Launch(buffer, batch, earliest_start);
  return Wait();
}

int CudaDevice::input_buffers() const { return queues_steps() ? Impl::kBuffers : 2; }

bool CudaDevice::queues_steps() const {
  const char* q = std::getenv("STALLSCOPE_STEP_QUEUE");
  return impl_->nccl == nullptr && !(q && std::string_view(q) == "0");
}

void CudaDevice::Launch(int buffer, const DeviceBatch& batch, double) {
  Impl& d = *impl_;
  NvtxRange range("stallscope: training step");
  STALLSCOPE_CUDA(cudaStreamWaitEvent(d.compute_stream, d.copy_done[buffer]->get(), 0));
  if (!d.launched.empty()) ++d.queued;
  d.launched.push_back({buffer, MonotonicSeconds()});
  // The step's events bracket its kernels (recorded by the model, inside its graph).
  d.model->SetStepEvents(d.step_start[buffer]->get(), d.step_end[buffer]->get());
  gpu::StagedImage image;
  if (batch.image_side > 0) {
    const ImageNorm norm = ImageNetNorm();
    image.side = static_cast<int>(batch.image_side);
    std::copy(norm.scale, norm.scale + 3, image.scale);
    std::copy(norm.shift, norm.shift + 3, image.shift);
  }
  d.model->EnqueueStep(d.inputs[buffer].get(), batch.rows_are_floats, image, batch.row_bytes,
                       static_cast<int>(batch.samples), d.labels[buffer].get(), d.steps);
  ++d.steps;
}

StepTiming CudaDevice::Wait() {
  Impl& d = *impl_;
  if (d.launched.empty()) throw DeviceError("Wait() without a launched step");
  const Impl::Launched l = d.launched.front();
  d.launched.pop_front();
  STALLSCOPE_CUDA(cudaEventSynchronize(d.step_end[l.buffer]->get()));
  StepTiming t;
  t.end = MonotonicSeconds();
  // A step queued behind another starts when that one ended (as seen here).
  t.start = std::max(l.at, d.last_end);
  d.last_end = t.end;
  const double busy = d.step_end[l.buffer]->MillisecondsSince(*d.step_start[l.buffer]) / 1000.0;
  d.event_busy.push_back(busy);
  t.busy = std::min(busy, t.end - t.start);
  if (d.reduced) {
    d.allreduce_seconds += d.reduce_end->MillisecondsSince(*d.reduce_start) / 1000.0;
    d.reduced = false;
  }
  return t;
}

DeviceReport CudaDevice::Finish(std::vector<StepTiming>& steps) {
  Impl& d = *impl_;
  DeviceReport r;
  r.event_busy = d.event_busy;
  r.h2d_bytes = d.h2d_bytes;
  r.h2d_seconds = d.h2d_event_seconds;
  r.allreduce_bytes = d.allreduce_bytes;
  r.allreduce_seconds = d.allreduce_seconds;
  r.loss = d.model->Losses(d.steps);
  if (d.cupti) {
    std::vector<Interval> kernels, copies;
    CuptiRecorder::Instance().Collect(&kernels, &copies);
    std::erase_if(copies, [&](const Interval& i) { return i.start < d.prepared_at; });
    const std::vector<Interval> merged = Merge(kernels);
    if (merged.empty() && !steps.empty()) {
      d.cupti = false;
      d.cupti_note = "CUPTI returned no kernel records; busy time from CUDA events";
    } else {
      // Where the events' busy time exceeds CUPTI's, per step: gaps between the step's
      // kernels (first kernel start to last kernel end, less the kernels), and the rest of
      // the event pair (before the first kernel and after the last: launch, loss copy).
      double inside = 0, edges = 0;
      for (size_t i = 0; i < steps.size(); ++i) {
        StepTiming& s = steps[i];
        s.busy = CoveredSeconds(merged, s.start, s.end);
        const Interval e = Extent(merged, s.start, s.end);
        const double span = std::max(0.0, e.end - e.start);
        inside += span - s.busy;
        if (i < d.event_busy.size()) edges += std::max(0.0, d.event_busy[i] - span);
      }
      const double n = static_cast<double>(std::max<size_t>(steps.size(), 1));
      r.facts.emplace_back("mean_gaps_between_kernels_per_step_seconds", inside / n);
      r.facts.emplace_back("mean_event_edges_per_step_seconds", edges / n);
      double copy_seconds = 0;
      for (const Interval& c : copies) copy_seconds += c.end - c.start;
      if (copy_seconds > 0) r.h2d_seconds = copy_seconds;
      r.h2d_overlap_seconds = OverlapSeconds(copies, kernels);
      if (const uint64_t lost = CuptiRecorder::Instance().dropped()) {
        r.notes.push_back(fmt::format("CUPTI dropped {} activity records", lost));
      }
    }
  }
  r.busy_source = d.cupti ? "cupti" : "events";
  if (!d.cupti) r.notes.push_back(d.cupti_note);
  r.facts.emplace_back("hidden_width", d.model->padded_hidden());
  r.facts.emplace_back("layers", d.shape.layers);
  r.facts.emplace_back(d.calibrated ? "calibrated_step_seconds" : "measured_step_seconds",
                       d.step_seconds);
  r.facts.emplace_back("target_step_seconds", d.calibrated ? d.options.device.step_time : 0.0);
  r.facts.emplace_back("step_tflops",
                       MlpModel::StepFlops({d.shape.batch, d.shape.input, d.model->padded_hidden(),
                                            d.shape.layers, d.shape.classes}) /
                           std::max(d.step_seconds, 1e-12) / 1e12);
  r.facts.emplace_back("learning_rate", d.model->learning_rate());
  // gpu.graph: how many step graphs were captured (0: every step launched kernel by kernel).
  r.facts.emplace_back("step_graphs_captured", static_cast<double>(d.model->graphs_captured()));
  if (const auto lt = d.model->lt_choices(); !lt.empty()) {
    // cuBLASLt plans whose algorithm launches more than kernels (a memset node in the graph).
    const auto more =
        std::count_if(lt.begin(), lt.end(), [](const auto& c) { return !c.kernels_only; });
    r.facts.emplace_back("gemm_plans", static_cast<double>(lt.size()));
    r.facts.emplace_back("gemm_plans_not_kernels_only", static_cast<double>(more));
  }
  r.facts.emplace_back("steps_queued_behind_another", static_cast<double>(d.queued));
  // gpu.gemm: own: how many of the step's distinct GEMM shapes run on rung 9 (bf16, TMA).
  if (!d.model->own_gemms().empty()) {
    double rung9 = 0;
    for (const OwnGemmChoice& g : d.model->own_gemms()) {
      rung9 += g.kernel == GemmKernel::kTmaWgmmaBf16;
      std::string why = "rung 9 does not fit the shape or this GPU";
      if (g.bf16_error >= 0) {
        why = fmt::format("rung 9 {:.3f} ms, rung 6 {:.3f} ms, rung 9 vs rung 6 error {:.1e}",
                          g.bf16_ms, g.fp32_ms, g.bf16_error);
      }
      r.notes.push_back(fmt::format("own GEMM {}{}{}x{}x{}: {} ({})", g.trans_a ? "T" : "N",
                                    g.trans_b ? "T" : "N", g.m, g.n, g.k, GemmKernelName(g.kernel),
                                    why));
    }
    r.facts.emplace_back("own_gemm_shapes", static_cast<double>(d.model->own_gemms().size()));
    r.facts.emplace_back("own_gemm_shapes_on_rung9", rung9);
  }
  return r;
}

}  // namespace stallscope::gpu
