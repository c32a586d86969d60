#include "app/kernel_profile.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/errors.h"

namespace stallscope {

const std::vector<ProfileMetric> kProfileMetrics = {
    {"gpu__time_duration.sum", "ncu ms"},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %"},
    {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe %"},
    {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor pipe %"},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %"},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %"},
    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "smem bank conflicts"},
    {"launch__registers_per_thread", "regs/thread"},
    {"smsp__sass_inst_executed_op_local_ld.sum", "local loads"},
    {"smsp__sass_inst_executed_op_local_st.sum", "local stores"},
};

namespace {

bool Has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// One CSV line's fields (double quotes around fields, "" inside one).
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

// "364,110,656" and "0.49" as numbers; nullopt for "n/a" and the like.
std::optional<double> NcuNumber(std::string text) {
  std::erase(text, ',');
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

int Column(const std::vector<std::string>& header, const char* name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Cell(const KernelProfile& k, const ProfileMetric& m) {
  const auto it = k.metrics.find(m.ncu);
  if (it == k.metrics.end()) return "-";
  const std::string title = m.title;
  if (title == "ncu ms") return fmt::format("{:.3f}", it->second / 1e6);  // ncu gives ns
  if (title.find('%') != std::string::npos) return fmt::format("{:.1f}", it->second);
  return fmt::format("{:.0f}", it->second);
}

}  // namespace

std::string RungOfKernel(const std::string& n) {
  static const std::pair<const char*, const char*> kOwn[] = {
      {"GemmNaive", "1 naive"},
      {"GemmCoalesced", "2 coalesced"},
      {"GemmSharedTiled", "3 shared-tiled"},
      {"GemmRegister2D", "4 register-2d"},
      {"GemmVectorized", "5 vectorized"},
      {"GemmDoubleBuffered", "6 double-buffered"},
      {"GemmTensorCore", "7 tensor-core bf16"},
      {"GemmWgmma", "8 wgmma bf16"},
  };
  for (const auto& [kernel, rung] : kOwn) {
    if (Has(n, kernel)) return rung;
  }
  // cuBLAS: its kernels name their types (sm80_xmma_gemm_f32f32_..., nvjet_..._bf16...).
  if (Has(n, "f64") || Has(n, "dgemm") || Has(n, "double")) return "";  // the reference
  if (Has(n, "bf16") || Has(n, "nvjet")) return "cuBLAS bf16";
  if (Has(n, "f32f32") || Has(n, "sgemm") || Has(n, "Sgemm")) return "cuBLAS SGEMM";
  return "";
}

std::vector<KernelProfile> ParseNcuCsv(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    if (line.rfind("\"ID\"", 0) == 0) {
      header = SplitCsv(line);
      break;
    }
  }
  const int kernel_col = Column(header, "Kernel Name"), id_col = Column(header, "ID");
  if (kernel_col < 0 || id_col < 0) {
    throw RunFailed(file + ": no ncu CSV report in it (a header with \"ID\" and \"Kernel Name\")");
  }
  const int name_col = Column(header, "Metric Name"), value_col = Column(header, "Metric Value");
  std::vector<std::pair<std::string, int>> metric_cols;  // the wide layout's metric columns
  for (const ProfileMetric& m : kProfileMetrics) {
    if (const int c = Column(header, m.ncu); c >= 0) metric_cols.emplace_back(m.ncu, c);
  }
  std::vector<KernelProfile> out;
  std::map<std::string, size_t> by_id;  // launch ID → index in out (-1 not a rung)
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;
    const std::vector<std::string> f = SplitCsv(line);
    if (f.size() != header.size()) continue;
    const std::string& id = f[id_col];
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      const std::string rung = RungOfKernel(f[kernel_col]);
      bool seen = false;  // a second launch of the same rung: the first is kept
      for (const KernelProfile& k : out) seen = seen || k.rung == rung;
      size_t index = SIZE_MAX;
      if (!rung.empty() && !seen) {
        out.push_back({rung, f[kernel_col], {}});
        index = out.size() - 1;
      }
      it = by_id.emplace(id, index).first;
    }
    if (it->second == SIZE_MAX) continue;
    KernelProfile& k = out[it->second];
    if (name_col >= 0 && value_col >= 0) {  // one row per metric
      if (const auto v = NcuNumber(f[value_col])) k.metrics[f[name_col]] = *v;
      continue;
    }
    for (const auto& [metric, c] : metric_cols) {  // one column per metric
      if (const auto v = NcuNumber(f[c])) k.metrics[metric] = *v;
    }
  }
  return out;
}

std::string ProfileTable(int size, const std::vector<KernelProfile>& kernels,
                         const std::map<std::string, RungTiming>& timings) {
  std::string out = fmt::format("### n = {}\n\n| rung | ladder ms | % cuBLAS |", size);
  std::string rule = "|---|---|---|";
  for (const ProfileMetric& m : kProfileMetrics) {
    out += fmt::format(" {} |", m.title);
    rule += "---|";
  }
  out += "\n" + rule + "\n";
  for (const KernelProfile& k : kernels) {
    const auto t = timings.find(k.rung);
    out += fmt::format(
        "| {} | {} | {} |", k.rung, t == timings.end() ? "-" : fmt::format("{:.3f}", t->second.ms),
        t == timings.end() ? "-" : fmt::format("{:.1f}", t->second.percent_of_cublas));
    for (const ProfileMetric& m : kProfileMetrics) out += " " + Cell(k, m) + " |";
    out += "\n";
  }
  return out + "\n";
}

std::optional<std::string> FindNcu() {
  if (const char* env = std::getenv("NCU"); env && *env) {
    return access(env, X_OK) == 0 ? std::optional<std::string>(env) : std::nullopt;
  }
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');) candidates.push_back(d + "/ncu");
  }
  candidates.push_back("/usr/local/cuda/bin/ncu");
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return std::nullopt;
}

int ProfileLadder(const std::string& ncu, const std::string& self, const std::string& dir,
                  const std::vector<int>& sizes,
                  const std::map<int, std::map<std::string, RungTiming>>& timings) {
  std::filesystem::create_directories(dir);
  std::string metrics;
  for (const ProfileMetric& m : kProfileMetrics)
    metrics += (metrics.empty() ? "" : ",") + std::string(m.ncu);
  std::string md =
      "# GEMM ladder profile (ncu)\n\nThe ladder's own timing (CUDA events, clocks "
      "free) beside Nsight Compute's metrics of each rung's second launch (clocks "
      "locked to base while profiled: use its percentages, not its milliseconds).\n\n";
  nlohmann::json doc = nlohmann::json::object();
  for (const int size : sizes) {
    const std::string csv = fmt::format("{}/ncu-{}.csv", dir, size);
    const std::string log = fmt::format("{}/ncu-{}.log", dir, size);
    const std::vector<std::string> args = {ncu,
                                           "--kernel-name-base",
                                           "demangled",
                                           "--kernel-id",
                                           "::regex:Gemm|gemm|nvjet|xmma|cutlass:2",
                                           "--metrics",
                                           metrics,
                                           "--csv",
                                           "--log-file",
                                           csv,
                                           self,
                                           "kernels",
                                           "--sizes",
                                           std::to_string(size),
                                           "--quiet"};
    std::fprintf(stderr, "profiling n = %d under %s (minutes) ...\n", size, ncu.c_str());
    const pid_t pid = fork();
    if (pid == 0) {
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      if (FILE* out = std::freopen(log.c_str(), "w", stdout)) (void)out;
      dup2(STDOUT_FILENO, STDERR_FILENO);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "stallscope kernels: ncu failed at n = %d (see %s)\n", size,
                   log.c_str());
      return 1;
    }
    std::ifstream in(csv);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::vector<KernelProfile> kernels = ParseNcuCsv(text, csv);
    const auto t = timings.find(size);
    md += ProfileTable(size, kernels,
                       t == timings.end() ? std::map<std::string, RungTiming>{} : t->second);
    nlohmann::json rows = nlohmann::json::array();
    for (const KernelProfile& k : kernels) {
      rows.push_back({{"rung", k.rung}, {"kernel", k.kernel}, {"metrics", k.metrics}});
    }
    doc[std::to_string(size)] = rows;
  }
  std::ofstream(dir + "/profile.md") << md;
  std::ofstream(dir + "/profile.json") << doc.dump(2) << "\n";
  std::fprintf(stderr, "wrote %s/profile.md, profile.json and ncu-N.csv\n", dir.c_str());
  return 0;
}

}  // namespace stallscope
