#include "base/units.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

TEST(Units, SizesUseDecimalAndBinaryPrefixesExactly) {
  EXPECT_EQ(*ParseSize("4096"), 4096);
  EXPECT_EQ(*ParseSize("4KiB"), 4096);
  EXPECT_EQ(*ParseSize("4kB"), 4000);
  EXPECT_EQ(*ParseSize("1MB"), 1e6);
  EXPECT_EQ(*ParseSize("1.5GiB"), 1.5 * 1073741824.0);
  EXPECT_EQ(*ParseSize("2 MiB"), 2 * 1048576.0);
  EXPECT_EQ(*ParseSize("-1KiB"), -1024);  // parsed; the scenario loader refuses negatives
  EXPECT_FALSE(ParseSize("4KiBs"));
  EXPECT_FALSE(ParseSize("4 kib"));
  EXPECT_FALSE(ParseSize("KiB"));
  EXPECT_FALSE(ParseSize(""));
}

TEST(Units, DurationsNeedAUnitExceptZero) {
  EXPECT_DOUBLE_EQ(*ParseDuration("200us"), 200e-6);
  EXPECT_DOUBLE_EQ(*ParseDuration("5ms"), 5e-3);
  EXPECT_DOUBLE_EQ(*ParseDuration("1.5s"), 1.5);
  EXPECT_DOUBLE_EQ(*ParseDuration("2m"), 120);
  EXPECT_DOUBLE_EQ(*ParseDuration("0"), 0);
  EXPECT_FALSE(ParseDuration("5"));
  EXPECT_FALSE(ParseDuration("5 sec"));
}

TEST(Units, RatesAreSizesPerSecond) {
  EXPECT_DOUBLE_EQ(*ParseRate("400MB/s"), 400e6);
  EXPECT_DOUBLE_EQ(*ParseRate("2GiB/s"), 2 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*ParseRate("0"), 0);
  EXPECT_FALSE(ParseRate("400MB"));
  EXPECT_FALSE(ParseRate("400/s"));
  EXPECT_FALSE(ParseRate("400Mb/s"));
}

TEST(Units, FormattingSaysWhichUnit) {
  EXPECT_EQ(FormatBytes(1.5e6), "1.5 MB");
  EXPECT_EQ(FormatBinaryBytes(1.5 * 1048576), "1.5 MiB");
  EXPECT_EQ(FormatDuration(0.0123), "12.30 ms");
}

// What advise prints for pasting: short, and read back to the very same number.
TEST(Units, ExactValuesParseBackToThemselves) {
  EXPECT_EQ(ExactSize(58720256), "56MiB");
  EXPECT_EQ(ExactSize(32ULL << 30), "32GiB");
  EXPECT_EQ(ExactSize(4097), "4097B");
  EXPECT_EQ(ExactSize(0), "0B");
  EXPECT_EQ(ExactRate(1866000000.0), "1866MB/s");
  EXPECT_EQ(ExactRate(200e9), "200GB/s");
  EXPECT_EQ(ExactRate(1234567.4), "1234567B/s");
  for (uint64_t b : {1ULL, 1023ULL, 1024ULL, 3ULL << 20, (5ULL << 40) + 1, 8ULL << 60}) {
    EXPECT_EQ(*ParseSize(ExactSize(b)), static_cast<double>(b)) << ExactSize(b);
  }
  for (double r : {1.0, 999.0, 30e6, 1.866e9, 2.5e9, 1e15, 123456789012.0, 3.2e19}) {
    EXPECT_EQ(*ParseRate(ExactRate(r)), r) << ExactRate(r);
  }
}

}  // namespace
}  // namespace stallscope
