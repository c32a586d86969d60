// `stallscope kernels`: the GEMM kernel ladder against cuBLAS on this GPU (gpu/kernel_ladder.h).
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "app/commands.h"
#include "app/errors.h"
#include "app/kernel_profile.h"
#include "app/make_device.h"
#ifdef STALLSCOPE_HAVE_CUDA
#include "gpu/kernel_ladder.h"
#endif

namespace stallscope {

namespace {

// "a,b,c" -> {"a", "b", "c"}; "" -> {""} (an empty item, which the callers refuse).
std::vector<std::string> CommaItems(const std::string& text) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    items.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return items;
}

// --shapes "MxNxK,…": each dimension a multiple of 256 from 256 to 32768 (what every bf16
// tensor-core rung takes), at most 2^31 elements per matrix.
bool ParseShapes(const std::string& text, std::vector<std::array<int, 3>>& shapes) {
  if (text.empty()) return true;
  for (const std::string& item : CommaItems(text)) {
    long dims[3] = {0, 0, 0};
    const char* p = item.c_str();
    bool ok = !item.empty();
    for (int i = 0; i < 3 && ok; ++i) {
      char* end = nullptr;
      dims[i] = std::strtol(p, &end, 10);
      ok = end != p && dims[i] >= 256 && dims[i] <= 32768 && dims[i] % 256 == 0 &&
           (i == 2 ? *end == '\0' : (*end == 'x' || *end == 'X'));
      p = end + 1;
    }
    if (ok)
      ok = dims[0] * dims[1] < (1L << 31) && dims[0] * dims[2] < (1L << 31) &&
           dims[2] * dims[1] < (1L << 31);
    if (!ok) {
      std::fprintf(stderr,
                   "stallscope kernels: --shapes: '%s' is not a shape; give MxNxK with each a "
                   "multiple of 256 from 256 to 32768 (under 2^31 elements per matrix), e.g. "
                   "--shapes 256x16384x4096\n",
                   item.c_str());
      return false;
    }
    shapes.push_back(
        {static_cast<int>(dims[0]), static_cast<int>(dims[1]), static_cast<int>(dims[2])});
  }
  return true;
}

}  // namespace

// `stallscope kernels`: the GEMM ladder against cuBLAS on this GPU.
int KernelsCommand(const KernelsCommandOptions& options) {
  const std::string &sizes_text = options.sizes, &json_path = options.json;
  const bool quiet = options.quiet;
  std::vector<int> sizes;
  for (const std::string& item : CommaItems(sizes_text)) {
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 256 || n > 16384 || n % 256 != 0) {
      std::fprintf(stderr,
                   "stallscope kernels: --sizes: '%s' is not a size; give multiples of 256 from "
                   "256 to 16384, e.g. --sizes 1024,4096,8192\n",
                   item.c_str());
      return kExitBadInput;
    }
    sizes.push_back(static_cast<int>(n));
  }
  std::vector<std::array<int, 3>> shapes;
  if (!ParseShapes(options.shapes, shapes)) return kExitBadInput;
  std::optional<std::string> ncu;
  if (!options.profile.empty()) {
    ncu = FindNcu();
    if (!ncu) {
      std::fprintf(stderr,
                   "stallscope kernels: --profile needs Nsight Compute's ncu (not found in $NCU, "
                   "on PATH or at /usr/local/cuda/bin/ncu)\n");
      return kExitBadInput;
    }
  }
#ifndef STALLSCOPE_HAVE_CUDA
  (void)json_path;
  (void)shapes;
  (void)quiet;
  std::fprintf(stderr, "stallscope kernels: this stallscope was built without CUDA (no nvcc)\n");
  return kExitBadInput;
#else
  if (!CudaGpuPresent()) {
    std::fprintf(stderr,
                 "stallscope kernels: no CUDA GPU is visible to this process; the ladder runs "
                 "only on a GPU host\n");
    return kExitBadInput;
  }
  gpu::LadderOptions o;
  o.sizes = sizes;
  for (const auto& [m, n, k] : shapes) o.shapes.push_back({m, n, k});
  if (!quiet)
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const gpu::LadderResult r = gpu::RunKernelLadder(o);
  std::string out = fmt::format(
      "GEMM ladder on {} (C = A·B, M×N×K) | device-to-device copy {:.0f} GB/s | cuBLAS peak "
      "fp32 {:.1f}, bf16 {:.1f} TFLOP/s\n"
      "bf16 rungs: timed alternately with cuBLAS bf16, {} pairs, % = ratio of the medians\n\n",
      r.device, r.copy_bandwidth / 1e9, r.peak_fp32 / 1e12, r.peak_bf16 / 1e12,
      gpu::kAlternatedPairs);
  out += fmt::format("{:>17}  {:<20} {:<5} {:>10} {:>9} {:>9} {:>9}  {:<7} {}\n", "M×N×K", "kernel",
                     "prec", "ms", "TFLOP/s", "% cuBLAS", "rel.err", "valid", "bound");
  nlohmann::json rows = nlohmann::json::array();
  bool all_valid = true;
  for (const gpu::LadderRow& row : r.rows) {
    const std::string shape = fmt::format("{}×{}×{}", row.shape.m, row.shape.n, row.shape.k);
    if (!row.ran) {
      out += fmt::format("{:>17}  {:<20} {:<5} {:>10}\n", shape, row.kernel, row.precision,
                         "skipped (slow rung at this size, or not this GPU's architecture)");
      continue;
    }
    all_valid = all_valid && row.valid;
    out += fmt::format("{:>17}  {:<20} {:<5} {:>10.3f} {:>9.1f} {:>8.1f}% {:>9.1e}  {:<7} {}\n",
                       shape, row.kernel, row.precision, row.ms, row.tflops, row.percent_of_cublas,
                       row.relative_error, row.valid ? "yes" : "NO", row.bound);
    rows.push_back({{"size", row.size},
                    {"m", row.shape.m},
                    {"n", row.shape.n},
                    {"k", row.shape.k},
                    {"alternated_pairs", row.alternated_pairs},
                    {"cublas_bf16_ms_alternated", row.cublas_ms},
                    {"kernel", row.kernel},
                    {"precision", row.precision},
                    {"ms", row.ms},
                    {"tflops", row.tflops},
                    {"percent_of_cublas", row.percent_of_cublas},
                    {"relative_error", row.relative_error},
                    {"error_bound", row.error_bound},
                    {"valid", row.valid},
                    {"bound", row.bound}});
  }
  std::fputs(out.c_str(), stdout);
  if (!json_path.empty()) {
    const nlohmann::json doc = {{"device", r.device},
                                {"copy_bytes_per_second", r.copy_bandwidth},
                                {"peak_flops", {{"fp32", r.peak_fp32}, {"bf16", r.peak_bf16}}},
                                {"rows", rows}};
    std::ofstream f(json_path);
    f << doc.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "stallscope kernels: cannot write %s\n", json_path.c_str());
      return kExitRunFailed;
    }
  }
  if (!all_valid) {
    std::fprintf(stderr, "stallscope kernels: a kernel failed validation (valid = NO above)\n");
    return kExitRunFailed;
  }
  if (!ncu) return 0;
  std::map<int, std::map<std::string, RungTiming>> timings;
  for (const gpu::LadderRow& row : r.rows) {
    if (row.ran && row.size > 0) timings[row.size][row.kernel] = {row.ms, row.percent_of_cublas};
  }
  std::filesystem::create_directories(options.profile);
  std::ofstream(options.profile + "/ladder.txt") << out;
  return ProfileLadder(*ncu, std::filesystem::read_symlink("/proc/self/exe").string(),
                       options.profile, sizes, timings);
#endif
}

}  // namespace stallscope
