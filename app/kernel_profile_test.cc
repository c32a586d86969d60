// kernels --profile without a GPU: the parser against a real report (Nsight Compute 2025.3.1
// on the H200, 2026-12-02, docs/gpu/h200-2026-12-02-ncu-ladder-4096.csv, whose numbers were
// tabulated by hand in h200-2026-12-02-ncu-ladder.md), and the whole command path with a
// stand-in ncu that writes a known report.
#include "app/kernel_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/errors.h"

namespace stallscope {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const KernelProfile* Find(const std::vector<KernelProfile>& ks, const std::string& rung) {
  for (const KernelProfile& k : ks) {
    if (k.rung == rung) return &k;
  }
  return nullptr;
}

TEST(KernelProfile, NamesEveryRungAndCublasButNotTheReference) {
  EXPECT_EQ(RungOfKernel("stallscope::<unnamed>::GemmNaive(int, int, int, const float *, "
                         "const float *, float *)"),
            "1 naive");
  EXPECT_EQ(RungOfKernel("void stallscope::<unnamed>::GemmWgmma<256, 4, 1>(int, int, int, const "
                         "__nv_bfloat16 *, const __nv_bfloat16 *, float *)"),
            "8 wgmma bf16");
  EXPECT_EQ(RungOfKernel("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_"
                         "warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"),
            "cuBLAS SGEMM");
  EXPECT_EQ(RungOfKernel("nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), "cuBLAS bf16");
  EXPECT_EQ(RungOfKernel("sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize64x64x16"), "");
}

TEST(KernelProfile, ParsesARealReportAsTabulatedByHand) {
  const std::string file =
      std::string(STALLSCOPE_DOCS) + "/gpu/h200-2026-12-02-ncu-ladder-4096.csv";
  const std::vector<KernelProfile> ks = ParseNcuCsv(ReadAll(file), file);
  ASSERT_EQ(ks.size(), 9u);  // rungs 1-8 and cuBLAS SGEMM (its first launch of two)
  const KernelProfile* naive = Find(ks, "1 naive");
  ASSERT_NE(naive, nullptr);
  EXPECT_DOUBLE_EQ(naive->metrics.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 5.96);
  EXPECT_DOUBLE_EQ(naive->metrics.at("gpu__time_duration.sum"), 364110656);  // "364,110,656"
  const KernelProfile* shared = Find(ks, "3 shared-tiled");
  ASSERT_NE(shared, nullptr);
  EXPECT_DOUBLE_EQ(shared->metrics.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
                   16106902);
  const KernelProfile* wgmma = Find(ks, "8 wgmma bf16");
  ASSERT_NE(wgmma, nullptr);
  EXPECT_DOUBLE_EQ(wgmma->metrics.at("launch__registers_per_thread"), 187);
  EXPECT_DOUBLE_EQ(
      wgmma->metrics.at("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
      56.03);
  const KernelProfile* sgemm = Find(ks, "cuBLAS SGEMM");
  ASSERT_NE(sgemm, nullptr);
  EXPECT_DOUBLE_EQ(sgemm->metrics.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 88.01);
  EXPECT_THROW(ParseNcuCsv("no report here\n", "x.csv"), RunFailed);

  const std::string table = ProfileTable(4096, ks, {{"8 wgmma bf16", {0.544, 54.7}}});
  EXPECT_NE(table.find("| 8 wgmma bf16 | 0.544 | 54.7 | 0.353 | 53.6 |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| 1 naive | - | - | 364.111 | 6.0 |"), std::string::npos) << table;
}

// The command path with a stand-in ncu: it is given the metric set and the child command, and
// writes the real report to --log-file; profile.md and profile.json come from it. An ncu that
// fails is reported, exit 1.
TEST(KernelProfile, ProfileLadderRunsNcuPerSizeAndWritesTheTable) {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("stallscope-profile-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string report =
      std::string(STALLSCOPE_DOCS) + "/gpu/h200-2026-12-02-ncu-ladder-4096.csv";
  const std::string fake = dir + "/ncu";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "echo \"$@\" > "
                      << dir
                      << "/args\n"
                         "while [ \"$1\" != --log-file ]; do shift; done\n"
                         "cp "
                      << report << " \"$2\"\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const std::string out = dir + "/out";
  ASSERT_EQ(ProfileLadder(fake, "/bin/stallscope-self", out, {4096},
                          {{4096, {{"1 naive", {276.639, 1.2}}}}}),
            0);
  const std::string args = ReadAll(dir + "/args");
  EXPECT_NE(args.find("sm__pipe_fma_cycles_active"), std::string::npos) << args;
  EXPECT_NE(args.find("/bin/stallscope-self kernels --sizes 4096 --quiet"), std::string::npos)
      << args;
  const std::string md = ReadAll(out + "/profile.md");
  EXPECT_NE(md.find("### n = 4096"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 naive | 276.639 | 1.2 | 364.111 |"), std::string::npos) << md;
  EXPECT_NE(ReadAll(out + "/profile.json").find("\"8 wgmma bf16\""), std::string::npos);

  std::ofstream(fake) << "#!/bin/sh\nexit 3\n";
  EXPECT_EQ(ProfileLadder(fake, "/bin/true", out, {1024}, {}), 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stallscope
