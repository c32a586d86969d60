#include "cache/cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "storage/content.h"

namespace stallscope {
namespace {

std::vector<std::byte> SampleBytes(uint64_t id, size_t n) {
  std::vector<std::byte> v(n);
  FillContent(ContentKey(1, id), v);
  return v;
}

TEST(FillOnceMemoryTier, HitRatioIsCapacityOverDatasetAfterFirstEpoch) {
  // 1000 samples of 1000 B, capacity 400 kB: after a full epoch, 40% of any epoch hits.
  Cache cache({{.kind = "memory", .capacity = 400000, .policy = "fill-once"}}, 1000);
  std::vector<std::byte> dst(1000);
  std::vector<uint64_t> order(1000);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(3);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    int hits = 0;
    for (uint64_t id : order) {
      if (cache.Lookup(id, dst.data()) >= 0) {
        ++hits;
        EXPECT_TRUE(MatchesContent(ContentKey(1, id), dst));
      } else {
        cache.Admit(id, SampleBytes(id, 1000));
      }
    }
    EXPECT_EQ(hits, epoch == 0 ? 0 : 400) << "epoch " << epoch;
  }
  const TierStats s = cache.Stats()[0];
  EXPECT_EQ(s.bytes_held, 400000u);
  EXPECT_LE(s.bytes_held, s.capacity);
  EXPECT_EQ(s.hits, 800u);
  EXPECT_EQ(s.misses, 2200u);
}

TEST(FillOnceMemoryTier, ConcurrentAdmitsNeverExceedCapacityOrCorrupt) {
  const uint64_t n = 4000;
  Cache cache({{.kind = "memory", .capacity = 1000 * 777, .policy = "fill-once"}}, n);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::byte> dst(777);
      for (uint64_t id = t; id < n; id += 2) {  // overlapping ids across threads
        if (cache.Lookup(id, dst.data()) >= 0) {
          EXPECT_TRUE(MatchesContent(ContentKey(1, id), dst));
        } else {
          cache.Admit(id, SampleBytes(id, 777));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(cache.Stats()[0].bytes_held, 1000u * 777);
  EXPECT_GE(cache.Stats()[0].bytes_held, 999u * 777);
}

TEST(Cache, UnsupportedTiersAreNamedErrors) {
  EXPECT_THROW(Cache({{.kind = "disk", .path = "/tmp/x", .capacity = 1}}, 10), CacheError);
  EXPECT_THROW(Cache({{.kind = "memory", .capacity = 1, .policy = "lru"}}, 10), CacheError);
}

}  // namespace
}  // namespace stallscope
