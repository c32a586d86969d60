#include "gpu/emulated_device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace stallscope {
namespace {

TEST(EmulatedDevice, StepsAreExactlyStepTimeOnAbsoluteDeadlines) {
  EmulatedDevice d(0.010);
  d.Prepare(1024, 4);
  DeviceBatch b;
  const double t0 = MonotonicSeconds();
  // Ten steps fed back to back: each starts where the previous one ended, so the logical
  // timeline is exactly 10 x 10 ms however late the thread wakes up.
  double start = t0;
  for (int i = 0; i < 10; ++i) {
    const StepTiming t = d.Step(i % 2, b, start);
    EXPECT_DOUBLE_EQ(t.start, start);
    EXPECT_DOUBLE_EQ(t.busy, 0.010);
    // Timestamps are seconds since boot: a long uptime leaves ~1e-11 s of double rounding.
    EXPECT_NEAR(t.end - t.start, 0.010, 1e-9);
    start = t.end;
    EXPECT_GE(MonotonicSeconds(), t.end);  // the step really took its time
  }
  EXPECT_NEAR(start - t0, 0.100, 1e-9);
  // Wall time: close to 100 ms, with overshoot not accumulated over the ten sleeps.
  EXPECT_LT(MonotonicSeconds() - t0, 0.100 + 0.020);
}

TEST(EmulatedDevice, LateThreadDoesNotStretchTheTimeline) {
  EmulatedDevice d(0.005);
  d.Prepare(16, 1);
  DeviceBatch b;
  const double t0 = MonotonicSeconds();
  const StepTiming a = d.Step(0, b, t0);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the thread is late
  const StepTiming c = d.Step(1, b, a.end);                   // batch was ready at a.end
  EXPECT_DOUBLE_EQ(c.start, a.end);
  EXPECT_DOUBLE_EQ(c.end, a.end + 0.005);
}

TEST(EmulatedDevice, CopyInTimesTheCopyAndRefusesOversizedBatches) {
  EmulatedDevice d(0);
  d.Prepare(4096, 8);
  std::vector<std::byte> host(4096, std::byte{7});
  std::vector<uint32_t> labels = {1, 2, 3, 4};
  DeviceBatch b{
      .step = 0, .samples = 4, .data = host.data(), .row_bytes = 1024, .labels = labels.data()};
  EXPECT_GE(d.CopyIn(0, b), 0.0);
  std::vector<std::byte> big(8192);
  DeviceBatch too_big{.samples = 8, .data = big.data(), .row_bytes = 1024};
  EXPECT_THROW(d.CopyIn(1, too_big), DeviceError);
}

}  // namespace
}  // namespace stallscope
