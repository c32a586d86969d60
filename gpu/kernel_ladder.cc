#include "gpu/kernel_ladder.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/kernels/gemm.h"
#include "gpu/kernels/training.h"

namespace stallscope::gpu {
namespace {

constexpr double kFp32Bound = 1e-4;  // fp32 accumulation over K ≤ 16k lands far below
constexpr double kBf16Bound = 1e-2;  // bf16-rounded inputs: about 3e-3 expected

// Room for the largest A (m×k), B (k×n) and C (m×n, also Bᵀ's scratch) of all shapes.
struct Buffers {
  Buffers(int64_t a_elems, int64_t b_elems, int64_t c_elems)
      : a(a_elems),
        b(b_elems),
        c(std::max(c_elems, b_elems)),
        a16(a_elems / 2),
        b16(b_elems / 2),
        bt16(b_elems / 2),
        ad(a_elems),
        bd(b_elems),
        cd(c_elems),
        sums(3) {}
  DeviceBuffer<float> a, b, c;
  DeviceBuffer<float> a16, b16, bt16;  // bf16 storage (two halves per float); bt16 = Bᵀ
  DeviceBuffer<double> ad, bd, cd, sums;
};

int64_t Elements(int64_t rows, int64_t cols) { return rows * cols; }

class Ladder {
 public:
  Ladder(int64_t a_elems, int64_t b_elems, int64_t c_elems) : buf_(a_elems, b_elems, c_elems) {
    STALLSCOPE_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    STALLSCOPE_CUBLAS(cublasCreate(&cublas_));
    STALLSCOPE_CUBLAS(cublasSetStream(cublas_, stream_));
  }
  ~Ladder() {
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }

  // Fresh random A and B (fp32, bf16 copies, float64 copies) and the float64 reference.
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLAS gets (n, m, k) and B before A.
  void NewInputs(const GemmShape& s) {
    ++seed_;
    const int64_t a_n = Elements(s.m, s.k), b_n = Elements(s.k, s.n);
    STALLSCOPE_CUDA(FillUniform(buf_.a.get(), a_n, seed_ * 2, stream_));
    STALLSCOPE_CUDA(FillUniform(buf_.b.get(), b_n, seed_ * 2 + 1, stream_));
    STALLSCOPE_CUDA(ToBf16(buf_.a.get(), a_n, buf_.a16.get(), stream_));
    STALLSCOPE_CUDA(ToBf16(buf_.b.get(), b_n, buf_.b16.get(), stream_));
    STALLSCOPE_CUDA(Transpose(buf_.b.get(), s.k, s.n, buf_.c.get(), stream_));
    STALLSCOPE_CUDA(ToBf16(buf_.c.get(), b_n, buf_.bt16.get(), stream_));
    STALLSCOPE_CUDA(ToDouble(buf_.a.get(), a_n, buf_.ad.get(), stream_));
    STALLSCOPE_CUDA(ToDouble(buf_.b.get(), b_n, buf_.bd.get(), stream_));
    const double one = 1, zero = 0;
    STALLSCOPE_CUBLAS(cublasDgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one,
                                  buf_.bd.get(), s.n, buf_.ad.get(), s.k, &zero, buf_.cd.get(),
                                  s.n));
  }

  // Runs one version: k >= 0 a ladder rung, -1 cuBLAS SGEMM, -2 cuBLAS bf16.
  void Run(int k, const GemmShape& s) {
    const float one = 1, zero = 0;
    if (k == -1) {
      STALLSCOPE_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one,
                                    buf_.b.get(), s.n, buf_.a.get(), s.k, &zero, buf_.c.get(),
                                    s.n));
    } else if (k == -2) {
      STALLSCOPE_CUBLAS(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one,
                                     buf_.b16.get(), CUDA_R_16BF, s.n, buf_.a16.get(), CUDA_R_16BF,
                                     s.k, &zero, buf_.c.get(), CUDA_R_32F, s.n, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
    } else {
      const auto kernel = static_cast<GemmKernel>(k);
      const bool bf16 = GemmKernelIsBf16(kernel);
      const void* b = !bf16                                ? buf_.b.get()
                      : GemmKernelTakesTransposedB(kernel) ? buf_.bt16.get()
                                                           : buf_.b16.get();
      STALLSCOPE_CUDA(LaunchGemm(kernel, s.m, s.n, s.k, bf16 ? buf_.a16.get() : buf_.a.get(), b,
                                 buf_.c.get(), stream_));
    }
  }

  // ‖C − ref‖ / ‖ref‖ of one run on fresh inputs with C poisoned; NaN if any output is
  // not finite (unwritten or broken).
  double Validate(int k, const GemmShape& s) {
    NewInputs(s);
    const int64_t c_n = Elements(s.m, s.n);
    STALLSCOPE_CUDA(FillNaN(buf_.c.get(), c_n, stream_));
    Run(k, s);
    STALLSCOPE_CUDA(cudaMemsetAsync(buf_.sums.get(), 0, 3 * sizeof(double), stream_));
    STALLSCOPE_CUDA(ErrorSums(buf_.c.get(), buf_.cd.get(), c_n, buf_.sums.get(), stream_));
    double sums[3];
    STALLSCOPE_CUDA(
        cudaMemcpyAsync(sums, buf_.sums.get(), sizeof(sums), cudaMemcpyDeviceToHost, stream_));
    STALLSCOPE_CUDA(cudaStreamSynchronize(stream_));
    if (sums[2] > 0 || !(sums[1] > 0)) return std::nan("");
    return std::sqrt(sums[0] / sums[1]);
  }

  // Milliseconds of one run, timed with its own event pair.
  double TimeOnce(int k, const GemmShape& s) {
    Event a, b;
    STALLSCOPE_CUDA(cudaEventRecord(a.get(), stream_));
    Run(k, s);
    STALLSCOPE_CUDA(cudaEventRecord(b.get(), stream_));
    STALLSCOPE_CUDA(cudaEventSynchronize(b.get()));
    return b.MillisecondsSince(a);
  }

  // Medians of `pairs` runs of k and of ref, alternated run by run, after a warm-up of each.
  std::pair<double, double> TimeAlternated(int k, int ref, const GemmShape& s, int pairs) {
    Run(k, s);
    Run(ref, s);
    std::vector<double> own, other;
    for (int i = 0; i < pairs; ++i) {
      own.push_back(TimeOnce(k, s));
      other.push_back(TimeOnce(ref, s));
    }
    return {Median(own), Median(other)};
  }

  // Median milliseconds per run after warm-up, each run timed with its own event pair.
  double Time(int k, const GemmShape& s) {
    Run(k, s);  // warm-up (module load, cuBLAS heuristics)
    const double first = TimeOnce(k, s);
    const int reps = std::clamp(static_cast<int>(300.0 / std::max(first, 1e-3)), 3, 50);
    std::vector<double> times;
    for (int i = 0; i < reps; ++i) times.push_back(TimeOnce(k, s));
    return Median(times);
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
    return 2.0 * static_cast<double>(bytes) / Median(times);
  }

 private:
  static double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

  Buffers buf_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  uint64_t seed_ = 0;
};

struct Version {
  int id;  // a rung, or -1 cuBLAS SGEMM, -2 cuBLAS bf16
  std::string name;
  bool bf16;
};

std::vector<Version> Versions() {
  std::vector<Version> versions;
  for (int k = 0; k <= static_cast<int>(kLastGemmKernel); ++k) {
    const auto g = static_cast<GemmKernel>(k);
    versions.push_back({k, GemmKernelName(g), GemmKernelIsBf16(g)});
  }
  versions.push_back({-1, "cuBLAS SGEMM", false});
  versions.push_back({-2, "cuBLAS bf16", true});
  return versions;
}

std::string ShapeText(const GemmShape& s) {
  if (s.m == s.n && s.n == s.k) return fmt::format("{}³", s.n);
  return fmt::format("{}×{}×{}", s.m, s.n, s.k);
}

// One shape: every version that runs here (square) or the bf16 tensor-core rungs and cuBLAS
// bf16 (an extra shape), validated, then timed; bf16 rungs alternately with cuBLAS bf16.
void RunShape(Ladder& ladder, const GemmShape& s, bool square, const LadderOptions& o,
              LadderResult& result) {
  const size_t first = result.rows.size();
  for (const Version& v : Versions()) {
    const bool own_bf16 = v.id >= 0 && v.bf16;
    if (!square && !own_bf16 && v.id != -2) continue;
    LadderRow row;
    row.size = square ? s.n : 0;
    row.shape = s;
    row.kernel = v.name;
    row.precision = v.bf16 ? "bf16" : "fp32";
    row.error_bound = v.bf16 ? kBf16Bound : kFp32Bound;
    const bool slow = v.id >= 0 && v.id <= static_cast<int>(GemmKernel::kSharedTiled);
    if ((slow && s.n > o.slow_rung_max_size) ||
        (v.id >= 0 && !GemmKernelRunsHere(static_cast<GemmKernel>(v.id)))) {
      result.rows.push_back(row);
      continue;
    }
    if (v.id >= 0) {
      const std::string why = GemmShapeError(static_cast<GemmKernel>(v.id), s.m, s.n, s.k);
      if (!why.empty()) throw DeviceError(fmt::format("{}: {}: {}", ShapeText(s), v.name, why));
    }
    row.relative_error = ladder.Validate(v.id, s);
    row.valid = row.relative_error <= row.error_bound;  // false for NaN
    if (own_bf16) {
      std::tie(row.ms, row.cublas_ms) = ladder.TimeAlternated(v.id, -2, s, kAlternatedPairs);
      row.alternated_pairs = kAlternatedPairs;
      row.percent_of_cublas = 100.0 * row.cublas_ms / row.ms;
    } else {
      row.ms = ladder.Time(v.id, s);
    }
    row.tflops = 2.0 * s.m * static_cast<double>(s.n) * s.k / (row.ms * 1e-3) / 1e12;
    row.ran = true;
    if (o.progress) {
      o.progress(fmt::format("  {:>15} {:<20} {:9.3f} ms {:8.1f} TFLOP/s  error {:.1e} {}",
                             ShapeText(s), v.name, row.ms, row.tflops, row.relative_error,
                             row.valid ? "ok" : "INVALID"));
    }
    result.rows.push_back(row);
  }
  double cublas32 = 0, cublas16 = 0;
  for (size_t i = first; i < result.rows.size(); ++i) {
    if (result.rows[i].kernel == "cuBLAS SGEMM") cublas32 = result.rows[i].tflops;
    if (result.rows[i].kernel == "cuBLAS bf16") cublas16 = result.rows[i].tflops;
  }
  if (square) {
    result.peak_fp32 = std::max(result.peak_fp32, cublas32 * 1e12);
    result.peak_bf16 = std::max(result.peak_bf16, cublas16 * 1e12);
  }
  for (size_t i = first; i < result.rows.size(); ++i) {
    LadderRow& r = result.rows[i];
    const double ref = r.precision == "bf16" ? cublas16 : cublas32;
    if (r.ran && ref > 0 && r.alternated_pairs == 0) r.percent_of_cublas = 100.0 * r.tflops / ref;
  }
}

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
  std::vector<std::pair<GemmShape, bool>> shapes;  // (shape, square)
  for (int n : o.sizes) shapes.push_back({{n, n, n}, true});
  for (const GemmShape& s : o.shapes) shapes.push_back({s, false});
  int64_t a_max = 0, b_max = 0, c_max = 0;
  for (const auto& [s, square] : shapes) {
    a_max = std::max(a_max, Elements(s.m, s.k));
    b_max = std::max(b_max, Elements(s.k, s.n));
    c_max = std::max(c_max, Elements(s.m, s.n));
  }
  Ladder ladder(a_max, b_max, c_max);
  result.copy_bandwidth = ladder.CopyBandwidth();
  if (o.progress) {
    o.progress(fmt::format("{}: device-to-device copy {:.0f} GB/s", result.device,
                           result.copy_bandwidth / 1e9));
  }
  for (const auto& [s, square] : shapes) RunShape(ladder, s, square, o, result);
  // The roofline, from what was measured: intensity above peak / bandwidth = compute-bound.
  for (LadderRow& r : result.rows) {
    const double m = r.shape.m, n = r.shape.n, k = r.shape.k;
    const double in_bytes = r.precision == "bf16" ? 2 : 4;
    const double intensity = 2 * m * n * k / ((m * k + k * n) * in_bytes + m * n * 4);
    const double peak = r.precision == "bf16" ? result.peak_bf16 : result.peak_fp32;
    r.bound = intensity > peak / result.copy_bandwidth ? "compute-bound" : "memory-bound";
  }
  return result;
}

}  // namespace stallscope::gpu
