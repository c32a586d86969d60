#include "gpu/kernel_ladder.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpu/cuda_util.h"
#include "gpu/kernels/gemm.h"
#include "gpu/kernels/training.h"

namespace stallscope::gpu {
namespace {

constexpr double kFp32Bound = 1e-4;  // fp32 accumulation over K ≤ 16k lands far below
constexpr double kBf16Bound = 1e-2;  // bf16-rounded inputs: about 3e-3 expected

struct Buffers {
  explicit Buffers(int64_t n)
      : a(n * n),
        b(n * n),
        c(n * n),
        a16(n * n / 2),
        b16(n * n / 2),
        bt16(n * n / 2),
        ad(n * n),
        bd(n * n),
        cd(n * n),
        sums(3) {}
  DeviceBuffer<float> a, b, c;
  DeviceBuffer<float> a16, b16, bt16;  // bf16 storage (n² halves = n²/2 floats); bt16 = Bᵀ
  DeviceBuffer<double> ad, bd, cd, sums;
};

class Ladder {
 public:
  explicit Ladder(int64_t max_n) : buf_(max_n) {
    STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    STALLSCOPE_CUBLAS(cublasCreate(&cublas_));
    STALLSCOPE_CUBLAS(cublasSetStream(cublas_, stream_));
  }
  ~Ladder() {
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }

  // Fresh random A and B (fp32, bf16 copies, float64 copies) and the float64 reference.
  void NewInputs(int64_t n) {
    ++seed_;
    STALLSCOPE_CUDA(FillUniform(buf_.a.get(), n * n, seed_ * 2, stream_));
    STALLSCOPE_CUDA(FillUniform(buf_.b.get(), n * n, seed_ * 2 + 1, stream_));
    STALLSCOPE_CUDA(ToBf16(buf_.a.get(), n * n, buf_.a16.get(), stream_));
    STALLSCOPE_CUDA(ToBf16(buf_.b.get(), n * n, buf_.b16.get(), stream_));
    STALLSCOPE_CUDA(
        Transpose(buf_.b.get(), static_cast<int>(n), static_cast<int>(n), buf_.c.get(), stream_));
    STALLSCOPE_CUDA(ToBf16(buf_.c.get(), n * n, buf_.bt16.get(), stream_));
    STALLSCOPE_CUDA(ToDouble(buf_.a.get(), n * n, buf_.ad.get(), stream_));
    STALLSCOPE_CUDA(ToDouble(buf_.b.get(), n * n, buf_.bd.get(), stream_));
    const double one = 1, zero = 0;
    const int ni = static_cast<int>(n);
    STALLSCOPE_CUBLAS(cublasDgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one,
                                  buf_.bd.get(), ni, buf_.ad.get(), ni, &zero, buf_.cd.get(), ni));
  }

  // Runs one version: k >= 0 a ladder rung, -1 cuBLAS SGEMM, -2 cuBLAS bf16.
  void Run(int k, int64_t n) {
    const int ni = static_cast<int>(n);
    const float one = 1, zero = 0;
    if (k == -1) {
      STALLSCOPE_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one,
                                    buf_.b.get(), ni, buf_.a.get(), ni, &zero, buf_.c.get(), ni));
    } else if (k == -2) {
      STALLSCOPE_CUBLAS(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one,
                                     buf_.b16.get(), CUDA_R_16BF, ni, buf_.a16.get(), CUDA_R_16BF,
                                     ni, &zero, buf_.c.get(), CUDA_R_32F, ni, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
    } else {
      const auto kernel = static_cast<GemmKernel>(k);
      const bool bf16 = GemmKernelIsBf16(kernel);
      const void* b = !bf16                                ? buf_.b.get()
                      : GemmKernelTakesTransposedB(kernel) ? buf_.bt16.get()
                                                           : buf_.b16.get();
      STALLSCOPE_CUDA(LaunchGemm(kernel, n, n, n, bf16 ? buf_.a16.get() : buf_.a.get(), b,
                                 buf_.c.get(), stream_));
    }
  }

  // ‖C − ref‖ / ‖ref‖ of one run on fresh inputs with C poisoned; NaN if any output is
  // not finite (unwritten or broken).
  double Validate(int k, int64_t n) {
    NewInputs(n);
    STALLSCOPE_CUDA(FillNaN(buf_.c.get(), n * n, stream_));
    Run(k, n);
    STALLSCOPE_CUDA(cudaMemsetAsync(buf_.sums.get(), 0, 3 * sizeof(double), stream_));
    STALLSCOPE_CUDA(ErrorSums(buf_.c.get(), buf_.cd.get(), n * n, buf_.sums.get(), stream_));
    double sums[3];
    STALLSCOPE_CUDA(
        cudaMemcpyAsync(sums, buf_.sums.get(), sizeof(sums), cudaMemcpyDeviceToHost, stream_));
    STALLSCOPE_CUDA(cudaStreamSynchronize(stream_));
    if (sums[2] > 0 || !(sums[1] > 0)) return std::nan("");
    return std::sqrt(sums[0] / sums[1]);
  }

  // Median milliseconds per run after warm-up, each run timed with its own event pair.
  double Time(int k, int64_t n) {
    Event a, b;
    Run(k, n);  // warm-up (module load, cuBLAS heuristics)
    STALLSCOPE_CUDA(cudaEventRecord(a.get(), stream_));
    Run(k, n);
    STALLSCOPE_CUDA(cudaEventRecord(b.get(), stream_));
    STALLSCOPE_CUDA(cudaEventSynchronize(b.get()));
    const double first = b.MillisecondsSince(a);
    const int reps = std::clamp(static_cast<int>(300.0 / std::max(first, 1e-3)), 3, 50);
    std::vector<double> times;
    for (int i = 0; i < reps; ++i) {
      STALLSCOPE_CUDA(cudaEventRecord(a.get(), stream_));
      Run(k, n);
      STALLSCOPE_CUDA(cudaEventRecord(b.get(), stream_));
      STALLSCOPE_CUDA(cudaEventSynchronize(b.get()));
      times.push_back(b.MillisecondsSince(a));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

  // Device-to-device copy of 1 GiB: bytes read + written per second, median of 10.
  double CopyBandwidth() {
    const uint64_t bytes = 1ULL << 30;
    DeviceBuffer<std::byte> src(bytes), dst(bytes);
    STALLSCOPE_CUDA(cudaMemsetAsync(src.get(), 1, bytes, stream_));
    Event a, b;
    std::vector<double> times;
    for (int i = 0; i < 11; ++i) {
      STALLSCOPE_CUDA(cudaEventRecord(a.get(), stream_));
      STALLSCOPE_CUDA(
          cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream_));
      STALLSCOPE_CUDA(cudaEventRecord(b.get(), stream_));
      STALLSCOPE_CUDA(cudaEventSynchronize(b.get()));
      if (i > 0) times.push_back(b.MillisecondsSince(a) / 1000.0);
    }
    std::sort(times.begin(), times.end());
    return 2.0 * static_cast<double>(bytes) / times[times.size() / 2];
  }

 private:
  Buffers buf_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  uint64_t seed_ = 0;
};

}  // namespace

LadderResult RunKernelLadder(const LadderOptions& o) {
  if (CudaDeviceCount() == 0) {
    throw DeviceError("no CUDA GPU is visible to this process (cudaGetDeviceCount found none)");
  }
  LadderResult result;
  cudaDeviceProp prop{};
  STALLSCOPE_CUDA(cudaSetDevice(0));
  STALLSCOPE_CUDA(cudaGetDeviceProperties(&prop, 0));
  result.device = prop.name;
  const int max_n = *std::max_element(o.sizes.begin(), o.sizes.end());
  Ladder ladder(max_n);
  result.copy_bandwidth = ladder.CopyBandwidth();
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  say(fmt::format("{}: device-to-device copy {:.0f} GB/s", result.device,
                  result.copy_bandwidth / 1e9));

  struct Version {
    int id;
    std::string name;
    bool bf16;
  };
  std::vector<Version> versions;
  for (int k = 0; k <= static_cast<int>(GemmKernel::kWgmmaBf16); ++k) {
    const auto g = static_cast<GemmKernel>(k);
    versions.push_back({k, GemmKernelName(g), GemmKernelIsBf16(g)});
  }
  versions.push_back({-1, "cuBLAS SGEMM", false});
  versions.push_back({-2, "cuBLAS bf16", true});

  for (int n : o.sizes) {
    const size_t first = result.rows.size();
    for (const Version& v : versions) {
      LadderRow row;
      row.size = n;
      row.kernel = v.name;
      row.precision = v.bf16 ? "bf16" : "fp32";
      row.error_bound = v.bf16 ? kBf16Bound : kFp32Bound;
      const bool slow = v.id >= 0 && v.id <= static_cast<int>(GemmKernel::kSharedTiled);
      if ((slow && n > o.slow_rung_max_size) ||
          (v.id >= 0 && !GemmKernelRunsHere(static_cast<GemmKernel>(v.id)))) {
        result.rows.push_back(row);
        continue;
      }
      if (v.id >= 0) {
        const std::string why = GemmShapeError(static_cast<GemmKernel>(v.id), n, n, n);
        if (!why.empty()) throw DeviceError(fmt::format("size {}: {}: {}", n, v.name, why));
      }
      row.relative_error = ladder.Validate(v.id, n);
      row.valid = row.relative_error <= row.error_bound;  // false for NaN
      row.ms = ladder.Time(v.id, n);
      row.tflops = 2.0 * n * static_cast<double>(n) * n / (row.ms * 1e-3) / 1e12;
      row.ran = true;
      say(fmt::format("  {:>5}³ {:<20} {:9.3f} ms {:8.1f} TFLOP/s  error {:.1e} {}", n, v.name,
                      row.ms, row.tflops, row.relative_error, row.valid ? "ok" : "INVALID"));
      result.rows.push_back(row);
    }
    double cublas32 = 0, cublas16 = 0;
    for (size_t i = first; i < result.rows.size(); ++i) {
      if (result.rows[i].kernel == "cuBLAS SGEMM") cublas32 = result.rows[i].tflops;
      if (result.rows[i].kernel == "cuBLAS bf16") cublas16 = result.rows[i].tflops;
    }
    result.peak_fp32 = std::max(result.peak_fp32, cublas32 * 1e12);
    result.peak_bf16 = std::max(result.peak_bf16, cublas16 * 1e12);
    for (size_t i = first; i < result.rows.size(); ++i) {
      LadderRow& r = result.rows[i];
      const double ref = r.precision == "bf16" ? cublas16 : cublas32;
      if (r.ran && ref > 0) r.percent_of_cublas = 100.0 * r.tflops / ref;
    }
  }
  // The roofline, from what was measured: intensity above peak / bandwidth = compute-bound.
  for (LadderRow& r : result.rows) {
    const double n = r.size;
    const double in_bytes = r.precision == "bf16" ? 2 : 4;
    const double intensity = 2 * n * n * n / (2 * n * n * in_bytes + n * n * 4);
    const double peak = r.precision == "bf16" ? result.peak_bf16 : result.peak_fp32;
    r.bound = intensity > peak / result.copy_bandwidth ? "compute-bound" : "memory-bound";
  }
  return result;
}

}  // namespace stallscope::gpu
