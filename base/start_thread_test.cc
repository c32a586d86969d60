#include "base/start_thread.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

namespace stallscope {
namespace {

// A body that lets an exception escape ends the process with one message naming the thread
// and exit 1 — not std::terminate's abort (exit 134), which it was before 2026-12-02.
TEST(StartThreadDeathTest, AnExceptionEscapingTheBodyExitsOneWithAMessage) {
  EXPECT_EXIT(
      {
        std::thread t = StartThread("the test's worker", [] { throw std::bad_alloc(); });
        t.join();
      },
      ::testing::ExitedWithCode(1),
      "stallscope: run failed: the test's worker stopped on an error it could not handle: out "
      "of memory");
  EXPECT_EXIT(
      {
        std::thread t =
            StartThread("another worker", [] { throw std::runtime_error("the disk is gone"); });
        t.join();
      },
      ::testing::ExitedWithCode(1), "another worker stopped .*: the disk is gone");
}

TEST(StartThread, ABodyThatReturnsRunsAsAPlainThread) {
  int ran = 0;
  std::thread t = StartThread("a worker", [&ran] { ran = 7; });
  t.join();
  EXPECT_EQ(ran, 7);
}

}  // namespace
}  // namespace stallscope
