// `stallscope bench-checkpoint` as a user meets it: every rank's share written and read back,
// the files gone afterwards, the frequency advice that follows from the measured write time,
// and bad input refused before anything is written.
#include <fmt/format.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <vector>

#include "base/median.h"
#include "tests/cli_util.h"
#include "tests/mpirun.h"

namespace stallscope {
namespace {

using namespace cli;

constexpr uint64_t kMiB = 1 << 20;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

bool EmptyOrGone(const std::string& dir) {
  std::error_code ec;
  return !std::filesystem::exists(dir, ec) || std::filesystem::is_empty(dir, ec);
}

// tmpfs and ramfs keep files in the page cache: there, no eviction is possible.
bool PageCacheIsTheStorage(const std::string& dir) {
  struct statfs st;
  return statfs(dir.c_str(), &st) == 0 && (st.f_type == 0x01021994 || st.f_type == 0x858458f6);
}

TEST_F(Cli, BenchCheckpointWritesEveryRanksShareReadsItBackAndRemovesTheFiles) {
  const std::string ckpt = (dir_.path() / "ckpt").string();  // made by the command
  const std::string json = (dir_.path() / "bc.json").string();
  const Result r = Stallscope("bench-checkpoint " + ckpt +
                              " --size 64MiB --ranks 2 --runs 2 --quiet --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json doc = ReadJson(json);
  EXPECT_EQ(doc["path"], ckpt);
  EXPECT_EQ(doc["ranks"], 2);
  EXPECT_EQ(doc["bytes_per_rank"], 32 * kMiB);
  EXPECT_EQ(doc["bytes"], 64 * kMiB);
  ASSERT_EQ(doc["runs"].size(), 2u);
  for (const nlohmann::json& run : doc["runs"]) {
    ASSERT_EQ(run["ranks"].size(), 2u);
    double slowest_write = 0, slowest_read = 0;
    for (int k = 0; k < 2; ++k) {
      const nlohmann::json& rank = run["ranks"][k];
      EXPECT_EQ(rank["rank"], k);
      EXPECT_GT(rank["write_seconds"].get<double>(), 0);
      EXPECT_GT(rank["read_seconds"].get<double>(), 0);
      slowest_write = std::max(slowest_write, rank["write_seconds"].get<double>());
      slowest_read = std::max(slowest_read, rank["read_seconds"].get<double>());
    }
    // MLPerf's rule: the job's time is its slowest rank's, over all the job's bytes.
    EXPECT_DOUBLE_EQ(run["write_seconds"].get<double>(), slowest_write);
    EXPECT_DOUBLE_EQ(run["read_seconds"].get<double>(), slowest_read);
    EXPECT_NEAR(run["write_bytes_per_second"].get<double>(), 64.0 * kMiB / slowest_write, 1);
    EXPECT_NEAR(run["read_bytes_per_second"].get<double>(), 64.0 * kMiB / slowest_read, 1);
  }
  EXPECT_GT(doc["write_bytes_per_second"].get<double>(), 0);
  EXPECT_GT(doc["read_bytes_per_second"].get<double>(), 0);
  EXPECT_FALSE(doc.contains("max_frequency"));  // not asked for
  if (!PageCacheIsTheStorage(dir_.str())) {
    // The read-back came from the storage: the files had left the page cache.
    EXPECT_LT(doc["page_cache_resident_after_evict"].get<double>(), 0.01);
  }
  EXPECT_TRUE(EmptyOrGone(ckpt)) << "the checkpoint files are removed at the end";
}

TEST_F(Cli, BenchCheckpointRefusesAnUnknownModelNamingTheFlag) {
  const std::string ckpt = (dir_.path() / "ckpt").string();
  ExpectBadInput(Stallscope("bench-checkpoint " + ckpt + " --model nosuch"), "--model nosuch");
  ExpectBadInput(Stallscope("bench-checkpoint " + ckpt + " --size 1GiB --ranks 0"), "--ranks 0");
  EXPECT_FALSE(std::filesystem::exists(ckpt));
}

TEST_F(Cli, BenchCheckpointRefusesASizeBeyondTheFreeSpaceBeforeWritingAnything) {
  struct statvfs st;
  ASSERT_EQ(statvfs(dir_.str().c_str(), &st), 0);
  const uint64_t free = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  const std::string ckpt = (dir_.path() / "ckpt").string();
  // Four times the free space (and a TB more): also far beyond this host's memory, which is
  // checked after the disk.
  const std::string size = std::to_string(4 * free + 1'000'000'000'000ULL);
  const Result r = Stallscope("bench-checkpoint " + ckpt + " --size " + size + " --ranks 2");
  ExpectBadInput(r, "free space");
  EXPECT_NE(r.err.find("--size " + size), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ckpt)) << "nothing written, not even the directory";
}

TEST_F(Cli, BenchCheckpointRefusesToReplaceACheckpointAlreadyThere) {
  const std::string existing = Write("ckpt-000000000001-r00001.stck", "a user's checkpoint");
  ExpectBadInput(Stallscope("bench-checkpoint " + dir_.str() + " --size 1MiB --ranks 2"),
                 "holds a checkpoint");
  std::ifstream in(existing);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a user's checkpoint");
}

// --max-stall's frequency is the smallest N with W / (N × step + W) <= share, W the slowest
// rank's write time (the median run's) that the JSON reports: computed here from that
// definition alone.
TEST_F(Cli, BenchCheckpointMaxStallPrintsTheFrequencyThatFollowsFromTheWriteTime) {
  const std::string json = (dir_.path() / "bc.json").string();
  const Result r = Stallscope("bench-checkpoint " + (dir_.path() / "ckpt").string() +
                              " --size 16MiB --runs 3 --step-time 10ms --max-stall 5% --quiet "
                              "--json " +
                              json);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json doc = ReadJson(json);
  std::vector<double> writes;
  for (const nlohmann::json& run : doc["runs"]) writes.push_back(run["write_seconds"]);
  const double w = doc["slowest_rank_write_seconds"];
  EXPECT_DOUBLE_EQ(w, Median(writes));
  const double step = 0.010, share = 0.05;
  uint64_t n = 1;
  while (w / (static_cast<double>(n) * step + w) > share) ++n;
  const std::string line = fmt::format(
      "checkpoint at most every {} steps (every {:.2f} s) to keep the sync checkpoint stall "
      "under 5%",
      n, static_cast<double>(n) * step);
  EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  ASSERT_TRUE(doc.contains("max_frequency"));
  EXPECT_EQ(doc["max_frequency"]["every_steps"], n);
  EXPECT_LE(doc["max_frequency"]["stall_fraction"].get<double>(), share);
  // Async: the write must end within the interval.
  uint64_t m = 1;
  while (static_cast<double>(m) * step < w) ++m;
  EXPECT_EQ(doc["max_frequency"]["async_every_steps"], m);
}

// `mpirun -np 2`: each MPI rank writes its own share, rank 0 reports them all; a --ranks that
// disagrees with the job is refused once, by rank 0.
TEST_F(Cli, BenchCheckpointUnderMpirunWritesAShareOnEachRank) {
  const std::string ckpt = (dir_.path() / "ckpt").string();
  const std::string json = (dir_.path() / "bc.json").string();
  const Result r = Stallscope(
      "bench-checkpoint " + ckpt + " --size 16MiB --runs 1 --quiet --json " + json, Mpirun(2));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json doc = ReadJson(json);
  EXPECT_EQ(doc["ranks"], 2);
  EXPECT_EQ(doc["bytes_per_rank"], 8 * kMiB);
  ASSERT_EQ(doc["runs"].size(), 1u);
  ASSERT_EQ(doc["runs"][0]["ranks"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["ranks"][1]["rank"], 1);
  EXPECT_GT(doc["runs"][0]["ranks"][1]["read_seconds"].get<double>(), 0);
  EXPECT_TRUE(EmptyOrGone(ckpt));
  const Result bad = Stallscope("bench-checkpoint " + ckpt + " --size 16MiB --ranks 3", Mpirun(2));
  EXPECT_EQ(bad.code, 2) << bad.err;
  const size_t at = bad.err.find("--ranks 3");
  ASSERT_NE(at, std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("--ranks 3", at + 1), std::string::npos) << "one message: " << bad.err;
}

}  // namespace
}  // namespace stallscope
