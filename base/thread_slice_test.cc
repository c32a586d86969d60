#include "base/thread_slice.h"

#include <gtest/gtest.h>

#include <thread>

namespace stallscope {
namespace {

// Ground truth is the kernel's own report (sched_getattr) on a fresh thread.
TEST(ThreadSlice, ARequestedSliceIsWhatTheKernelReports) {
  double before = -1, after = -1, clamped = -1;
  int rc = -1, rc_small = -1;
  std::thread t([&] {
    before = ThreadSlice();
    rc = SetThreadSlice(300e-6);
    after = ThreadSlice();
    rc_small = SetThreadSlice(1e-6);  // below the kernel's bound: asks for 100 us
    clamped = ThreadSlice();
  });
  t.join();
  if (before == 0) GTEST_SKIP() << "this kernel reports no slice (before Linux 6.12)";
  ASSERT_EQ(rc, 0);
  EXPECT_DOUBLE_EQ(after, 300e-6);
  EXPECT_NE(before, 300e-6);  // the default was something else: the request changed it
  ASSERT_EQ(rc_small, 0);
  EXPECT_DOUBLE_EQ(clamped, kMinThreadSlice);
}

TEST(ThreadSlice, OnlyTheCallingThreadChanges) {
  double mine_before = ThreadSlice(), other = -1;
  std::thread t([&] { other = SetThreadSlice(200e-6) == 0 ? ThreadSlice() : -1; });
  t.join();
  if (mine_before == 0) GTEST_SKIP() << "this kernel reports no slice (before Linux 6.12)";
  EXPECT_DOUBLE_EQ(other, 200e-6);
  EXPECT_DOUBLE_EQ(ThreadSlice(), mine_before);
}

}  // namespace
}  // namespace stallscope
