// The start-up budget on hand-made plans: the staging it counts, and a refusal that names the
// key, the need and what is available; what fits is let through.
#include "app/budget.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <new>
#include <string>
#include <system_error>

#include "app/errors.h"
#include "base/errors.h"

namespace stallscope {
namespace {

// 5 slots of 100 samples, raw rows of 8 KiB and float rows of 32 KiB: 5 × 100 × 40 KiB;
// 10,000 steps (10^6 reads of 8 KiB: 7.6 GiB).
RunPlan Plan(uint64_t steps = 10000) {
  RunPlan p;
  p.slots = 5;
  p.batch_size = 100;
  p.raw_stride = 8192;
  p.staged_stride = 32768;
  p.normalize = true;
  p.staged = true;
  p.total_batches = steps;
  return p;
}

// The host memory Plan()'s step records take.
uint64_t Steps() { return 10000 * StepRecordBytes(); }

constexpr uint64_t kSamples = 1000000000, kMaxSample = 8192;

constexpr uint64_t kStaging = 5ull * 100 * (8192 + 32768);  // 20,480,000 B = 19.5 MiB

std::string Refusal(const Scenario& s, const RunPlan& plan, uint64_t available,
                    uint32_t ranks_on_host = 1) {
  try {
    CheckBudget(s, plan, kSamples, kMaxSample, available, ranks_on_host);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(Budget, CountsStagingRowsAndMemoryTiers) {
  Scenario s;
  s.cache_tiers = {{.kind = TierKind::kMemory, .capacity = 3u << 20},
                   {.kind = TierKind::kDisk, .path = "/tmp/x", .capacity = 7u << 20},
                   {.kind = TierKind::kMemory, .capacity = 5u << 20, .overcommit = true}};
  const RunBudget b = BudgetOf(s, Plan(), kSamples, kMaxSample);
  EXPECT_EQ(b.staging_bytes, kStaging);
  EXPECT_EQ(b.ram_tier_bytes, 3u << 20);  // not the disk tier, not the overcommitted one
  RunPlan raw = Plan();
  raw.normalize = false;  // rows handed over as read: no float rows
  raw.staged = false;
  EXPECT_EQ(BudgetOf(s, raw, kSamples, kMaxSample).staging_bytes, 5ull * 100 * 8192);
  RunPlan pixels = Plan();  // jpeg-decode normalized on the device: rows of pixels, not floats
  pixels.normalize = false;
  pixels.image_side = 64;
  pixels.staged_stride = 64 * 64 * 3;
  EXPECT_EQ(BudgetOf(s, pixels, kSamples, kMaxSample).staging_bytes,
            5ull * 100 * (8192 + 64 * 64 * 3));
}

TEST(Budget, RefusesStagingBeyondWhatIsAvailable) {
  Scenario s;
  s.file = "big.yaml";
  const std::string e = Refusal(s, Plan(), kStaging - 1);
  EXPECT_NE(e.find("big.yaml: loader.batch_size × (loader.prefetch + 1) staging needs 19.5 MiB"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("5 × 100 samples"), std::string::npos) << e;
  EXPECT_EQ(Refusal(s, Plan(), kStaging + Steps()), "");  // exactly enough fits
  EXPECT_NE(Refusal(s, Plan(), kStaging + Steps() - 1).find("and the step records"),
            std::string::npos);
}

// Four ranks on a host see the same memory free: each may take a quarter of it.
TEST(Budget, RanksOnOneHostShareItsMemory) {
  Scenario s;
  s.file = "ranks.yaml";
  const uint64_t one = kStaging + Steps();
  EXPECT_EQ(Refusal(s, Plan(), 4 * one, 4), "");  // a quarter each: exactly enough
  const std::string e = Refusal(s, Plan(), 4 * kStaging - 4, 4);
  EXPECT_NE(e.find("staging needs 19.5 MiB"), std::string::npos) << e;
  EXPECT_NE(e.find("(for each of the 4 ranks on this host)"), std::string::npos) << e;
  EXPECT_EQ(Refusal(s, Plan(), 4 * one - 4, 1), "");  // one rank alone would fit
}

TEST(Budget, RefusesAMemoryTierBeyondWhatIsAvailableUnlessOvercommitted) {
  Scenario s;
  s.file = "tier.yaml";
  s.cache_tiers = {{.kind = TierKind::kDisk, .path = "/tmp/x", .capacity = 1ull << 40},
                   {.kind = TierKind::kMemory, .capacity = 1ull << 40}};
  // 10^9 reads of 8 KiB: 7.45 TiB, more than the tier holds.
  const std::string e = Refusal(s, Plan(10000000), 16ull << 30);
  EXPECT_NE(e.find("tier.yaml: cache.tiers.1.capacity: a memory tier of 1.00 TiB would hold "
                   "1.00 TiB in this run; 16.00 GiB available"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("cache.tiers.1.overcommit: true"), std::string::npos) << e;
  s.cache_tiers[1].overcommit = true;
  EXPECT_EQ(Refusal(s, Plan(10000000), 16ull << 30), "");
}

TEST(Budget, AMemoryTierHoldsNoMoreThanTheSamplesTheRunReads) {
  // 10 steps of 100 samples of at most 8 KiB (stored in 256-byte blocks: 8 KiB each): a 1 TiB
  // tier holds at most 1000 x 8 KiB = 8,192,000 bytes; so does a dataset of 500 samples hold
  // 500 x 8 KiB.
  RunPlan p = Plan();
  p.total_batches = 10;
  const TierOptions tier{.kind = TierKind::kMemory, .capacity = 1ull << 40};
  EXPECT_EQ(MemoryTierNeed(tier, p, kSamples, kMaxSample), 1000u * 8192);
  EXPECT_EQ(MemoryTierNeed(tier, p, 500, kMaxSample), 500u * 8192);
  EXPECT_EQ(MemoryTierNeed({.kind = TierKind::kMemory, .capacity = 4096}, p, kSamples, kMaxSample),
            4096u);  // and never more than its capacity
  Scenario s;
  s.cache_tiers = {tier};
  EXPECT_EQ(Refusal(s, p, 16ull << 30), "");
}

TEST(Budget, RefusesStagingAndTiersTogetherBeyondWhatIsAvailable) {
  Scenario s;
  s.file = "both.yaml";
  s.cache_tiers = {{.kind = TierKind::kMemory, .capacity = 10u << 20}};
  // Each fits alone (19.5 MiB, 10 MiB), not both in 25 MiB.
  const std::string e = Refusal(s, Plan(), 25u << 20);
  EXPECT_NE(e.find("staging (19.5 MiB), the memory tiers (10.0 MiB) and the step records"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("25.0 MiB available"), std::string::npos) << e;
  EXPECT_EQ(Refusal(s, Plan(), kStaging + (10u << 20) + Steps()), "");
}

// A run's per-step records are counted: 10^10 steps of a tiny dataset cannot be held, and
// the refusal names run.epochs rather than ending in std::bad_alloc part-way (issue #21).
TEST(Budget, RefusesStepRecordsBeyondWhatIsAvailable) {
  Scenario s;
  s.file = "long.yaml";
  s.run.epochs = 1000000000;
  const std::string e = Refusal(s, Plan(10000000000ULL), 16ull << 30);
  EXPECT_NE(e.find("long.yaml: run.epochs: 10000000000 steps"), std::string::npos) << e;
  EXPECT_NE(e.find("lower run.epochs or set run.max_steps"), std::string::npos) << e;
}

// A synthetic dataset's sizes and shuffled orders (8 B each, four of them per sample), a
// belady tier's inverse orders (4 B per sample per epoch), memory storage's bytes.
TEST(Budget, CountsTheSyntheticDatasetBeforeItIsMade) {
  Scenario s;
  s.file = "data.yaml";
  s.dataset.samples = 1000;
  s.dataset.sample_size = 4096;
  s.run.epochs = 3;
  EXPECT_EQ(DatasetHostBytes(s), 1000u * 32);
  s.cache_tiers = {{.kind = TierKind::kMemory, .capacity = 1 << 20, .policy = PolicyKind::kBelady}};
  EXPECT_EQ(DatasetHostBytes(s), 1000u * 32 + 1000u * 4 * 3);
  s.cache_tiers.clear();
  s.storage.kind = StorageKind::kMemory;
  EXPECT_EQ(DatasetHostBytes(s), 1000u * (32 + 8 + 4096));
  s.storage.kind = StorageKind::kDirectory;
  EXPECT_EQ(DatasetHostBytes(s), 0u);  // a directory's listing is what it holds
  s.storage.kind = StorageKind::kSimulated;
  s.dataset.samples = ~0ULL;  // saturates rather than wraps
  EXPECT_EQ(DatasetHostBytes(s), ~0ULL);
  try {
    CheckDatasetFits(s, 16ull << 30);
    ADD_FAILURE() << "not refused";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("data.yaml: dataset.samples: 18446744073709551615 "
                                         "samples need 16.00 EiB"),
              std::string::npos)
        << e.what();
  }
}

TEST(Budget, ReadsThisHostsMemory) {
  const auto available = ReadHostMemory();
  ASSERT_TRUE(available.has_value()) << "neither /proc/meminfo nor the cgroup could be read";
  EXPECT_GT(*available, 16u << 20);  // a host that runs this test has more than 16 MiB free
}

// The files a run holds open: raised to what the run needs under the hard limit, refused above
// it, naming loader.io_depth (the limits are this process's own, restored after).
TEST(Budget, OpenFilesAreRaisedToTheNeedOrRefused) {
  Scenario s;
  s.file = "files.yaml";
  s.storage.kind = StorageKind::kDirectory;
  s.loader.io.io_depth = 512;
  s.loader.io.io_threads = 4;
  s.cache_tiers = {{.kind = TierKind::kDisk, .path = "/tmp/x", .capacity = 1 << 20}};
  EXPECT_EQ(OpenFilesNeed(s), 66u + 512 * 4 + 512 + 2);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  if (saved.rlim_max == RLIM_INFINITY || saved.rlim_max >= OpenFilesNeed(s)) {
    CheckOpenFiles(s);  // raised
    rlimit now{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
    EXPECT_GE(now.rlim_cur, OpenFilesNeed(s));
  }
  s.loader.io.io_depth = 4096;
  s.loader.io.io_threads = 256;  // a million files: beyond any default hard limit
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < OpenFilesNeed(s)) {
    try {
      CheckOpenFiles(s);
      ADD_FAILURE() << "not refused";
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("files.yaml: loader.io_depth: 4096 files in flight"),
                std::string::npos)
          << e.what();
    }
  }
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

// An exception that is not stallscope's own is named by the innermost step it unwound; one
// handled before a later step is forgotten.
TEST(Errors, AForeignExceptionIsNamedByWhatWasBeingDone) {
  const int code = RunGuarded([]() -> int {
    const SettingUp outer("making the cache tiers (variant a)");
    const SettingUp inner("allocating the staging buffers (variant a)");
    throw std::bad_alloc();
  });
  EXPECT_EQ(code, kExitRunFailed);
  try {
    const SettingUp doing("allocating the staging buffers (variant b)");
    throw std::bad_alloc();
  } catch (const std::bad_alloc& e) {
    EXPECT_EQ(ErrorMessage(e),
              "run failed: out of memory while allocating the staging buffers "
              "(variant b)");
  }
  const SettingUp later("running the steps (variant b)");  // the last one is handled: forgotten
  EXPECT_EQ(ErrorMessage(std::bad_alloc()), "run failed: out of memory");
  EXPECT_EQ(ErrorMessage(RunFailed("disk full")), "run failed: disk full");
  EXPECT_EQ(ErrorMessage(
                std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again))),
            "run failed: Resource temporarily unavailable");
}

}  // namespace
}  // namespace stallscope
