// `stallscope kernels --profile DIR`: Nsight Compute (ncu) run on every rung of the GEMM
// ladder with one fixed metric set, and a summary table written beside the ladder's timings.
//
// For each size, ncu runs `stallscope kernels --sizes N --quiet` as its child and profiles the
// second launch of every GEMM kernel (the first is the validation run, whose caches are
// cold); its CSV is saved as DIR/ncu-N.csv, parsed, and each kernel is named by its rung
// (RungOfKernel). DIR/profile.md holds one table per size — the ladder's own CUDA-event
// timing and % of cuBLAS beside ncu's throughputs — and DIR/profile.json the same numbers.
// ncu locks the clocks to base while it profiles, so its durations are longer than the
// ladder's; the table keeps the ladder's milliseconds and ncu's percentages.
//
// Thread-safety: functions; ProfileLadder runs child processes.
#ifndef STALLSCOPE_APP_KERNEL_PROFILE_H_
#define STALLSCOPE_APP_KERNEL_PROFILE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

// One metric of the fixed set: ncu's name and the table's column title.
struct ProfileMetric {
  const char* ncu;
  const char* title;
};
extern const std::vector<ProfileMetric> kProfileMetrics;

// The ladder's row name ("1 naive" … "8 wgmma bf16", "cuBLAS SGEMM", "cuBLAS bf16") of a
// kernel by its demangled name; "" for kernels that are not a rung (the float64 reference).
std::string RungOfKernel(const std::string& kernel_name);

struct KernelProfile {
  std::string rung;                       // RungOfKernel
  std::string kernel;                     // the demangled name
  std::map<std::string, double> metrics;  // by ncu metric name
};

// The kernels of one ncu --csv --page raw report (one row per kernel launch and metric, or
// one per launch with a column per metric), in report order, rungs only. Throws RunFailed
// naming the file when it holds no CSV header.
std::vector<KernelProfile> ParseNcuCsv(const std::string& text, const std::string& file);

// The ladder's timing of one rung at one size (from the same command's own run).
struct RungTiming {
  double ms = 0, percent_of_cublas = 0;
};

// The markdown table of one size: a row per rung, the ladder's timing and every metric.
std::string ProfileTable(int size, const std::vector<KernelProfile>& kernels,
                         const std::map<std::string, RungTiming>& timings);

// The ncu to run: $NCU, else `ncu` on PATH, else /usr/local/cuda/bin/ncu; nullopt when none
// is executable.
std::optional<std::string> FindNcu();

// Profiles every size into `dir` (created), running `self` (this executable) under `ncu`;
// `timings[size][rung]` are the ladder's. Returns the exit code (0, or 1 when ncu failed,
// naming the log) and prints where the files are.
int ProfileLadder(const std::string& ncu, const std::string& self, const std::string& dir,
                  const std::vector<int>& sizes,
                  const std::map<int, std::map<std::string, RungTiming>>& timings);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_KERNEL_PROFILE_H_
