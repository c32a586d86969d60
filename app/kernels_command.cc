// `stallscope kernels`: the GEMM kernel ladder against cuBLAS on this GPU (gpu/kernel_ladder.h).
#include <fmt/format.h>

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

// `stallscope kernels`: the GEMM ladder against cuBLAS on this GPU.
int KernelsCommand(const KernelsCommandOptions& options) {
  const std::string &sizes_text = options.sizes, &json_path = options.json;
  const bool quiet = options.quiet;
  std::vector<int> sizes;
  size_t pos = 0;
  while (pos <= sizes_text.size()) {
    const size_t comma = std::min(sizes_text.find(',', pos), sizes_text.size());
    const std::string item = sizes_text.substr(pos, comma - pos);
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
    pos = comma + 1;
  }
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
  if (!quiet)
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const gpu::LadderResult r = gpu::RunKernelLadder(o);
  std::string out = fmt::format(
      "GEMM ladder on {} (C = A·B, n×n×n) | device-to-device copy {:.0f} GB/s | cuBLAS peak "
      "fp32 {:.1f}, bf16 {:.1f} TFLOP/s\n\n",
      r.device, r.copy_bandwidth / 1e9, r.peak_fp32 / 1e12, r.peak_bf16 / 1e12);
  out += fmt::format("{:>6}  {:<20} {:<5} {:>10} {:>9} {:>9} {:>9}  {:<7} {}\n", "n", "kernel",
                     "prec", "ms", "TFLOP/s", "% cuBLAS", "rel.err", "valid", "bound");
  nlohmann::json rows = nlohmann::json::array();
  bool all_valid = true;
  for (const gpu::LadderRow& row : r.rows) {
    if (!row.ran) {
      out += fmt::format("{:>6}  {:<20} {:<5} {:>10}\n", row.size, row.kernel, row.precision,
                         "skipped (slow rung at this size)");
      continue;
    }
    all_valid = all_valid && row.valid;
    out +=
        fmt::format("{:>6}  {:<20} {:<5} {:>10.3f} {:>9.1f} {:>8.1f}% {:>9.1e}  {:<7} {}\n",
                    row.size, row.kernel, row.precision, row.ms, row.tflops, row.percent_of_cublas,
                    row.relative_error, row.valid ? "yes" : "NO", row.bound);
    rows.push_back({{"size", row.size},
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
  std::map<int, std::map<std::string, RungTiming> > timings;
  for (const gpu::LadderRow& row : r.rows) {
    if (row.ran) timings[row.size][row.kernel] = {row.ms, row.percent_of_cublas};
  }
  std::filesystem::create_directories(options.profile);
  std::ofstream(options.profile + "/ladder.txt") << out;
  return ProfileLadder(*ncu, std::filesystem::read_symlink("/proc/self/exe").string(),
                       options.profile, sizes, timings);
#endif
}

}  // namespace stallscope
