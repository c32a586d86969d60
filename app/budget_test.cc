// The start-up budget on hand-made plans: the staging it counts, and a refusal that names the
// key, the need and what is available; what fits is let through.
#include "app/budget.h"

#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"

namespace stallscope {
namespace {

// 5 slots of 100 samples, raw rows of 8 KiB and float rows of 32 KiB: 5 × 100 × 40 KiB.
RunPlan Plan() {
  RunPlan p;
  p.slots = 5;
  p.batch_size = 100;
  p.raw_stride = 8192;
  p.staged_stride = 32768;
  p.normalize = true;
  return p;
}

constexpr uint64_t kStaging = 5ull * 100 * (8192 + 32768);  // 20,480,000 B = 19.5 MiB

std::string Refusal(const Scenario& s, const RunPlan& plan, uint64_t available) {
  try {
    CheckBudget(s, plan, available);
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
  const RunBudget b = BudgetOf(s, Plan());
  EXPECT_EQ(b.staging_bytes, kStaging);
  EXPECT_EQ(b.ram_tier_bytes, 3u << 20);  // not the disk tier, not the overcommitted one
  RunPlan raw = Plan();
  raw.normalize = false;  // rows handed over as read: no float rows
  EXPECT_EQ(BudgetOf(s, raw).staging_bytes, 5ull * 100 * 8192);
}

TEST(Budget, RefusesStagingBeyondWhatIsAvailable) {
  Scenario s;
  s.file = "big.yaml";
  const std::string e = Refusal(s, Plan(), kStaging - 1);
  EXPECT_NE(e.find("big.yaml: loader.batch_size × (loader.prefetch + 1) staging needs 19.5 MiB"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("5 × 100 samples"), std::string::npos) << e;
  EXPECT_EQ(Refusal(s, Plan(), kStaging), "");  // exactly enough fits
}

TEST(Budget, RefusesAMemoryTierBeyondWhatIsAvailableUnlessOvercommitted) {
  Scenario s;
  s.file = "tier.yaml";
  s.cache_tiers = {{.kind = TierKind::kDisk, .path = "/tmp/x", .capacity = 1ull << 40},
                   {.kind = TierKind::kMemory, .capacity = 1ull << 40}};
  const std::string e = Refusal(s, Plan(), 16ull << 30);
  EXPECT_NE(e.find("tier.yaml: cache.tiers.1.capacity: a memory tier of 1024.00 GiB; 16.00 GiB "
                   "available"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("cache.tiers.1.overcommit: true"), std::string::npos) << e;
  s.cache_tiers[1].overcommit = true;
  EXPECT_EQ(Refusal(s, Plan(), 16ull << 30), "");
}

TEST(Budget, RefusesStagingAndTiersTogetherBeyondWhatIsAvailable) {
  Scenario s;
  s.file = "both.yaml";
  s.cache_tiers = {{.kind = TierKind::kMemory, .capacity = 10u << 20}};
  // Each fits alone (19.5 MiB, 10 MiB), not both in 25 MiB.
  const std::string e = Refusal(s, Plan(), 25u << 20);
  EXPECT_NE(e.find("staging (19.5 MiB) and the memory tiers (10.0 MiB) need 29.5 MiB; 25.0 MiB "
                   "available"),
            std::string::npos)
      << e;
  EXPECT_EQ(Refusal(s, Plan(), 30u << 20), "");
}

TEST(Budget, ReadsThisHostsMemory) {
  const auto available = ReadHostMemory();
  ASSERT_TRUE(available.has_value()) << "neither /proc/meminfo nor the cgroup could be read";
  EXPECT_GT(*available, 16u << 20);  // a host that runs this test has more than 16 MiB free
}

}  // namespace
}  // namespace stallscope
