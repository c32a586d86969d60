// loader.io_slice: the I/O threads ask the scheduler for that slice (base/thread_slice.h). The
// ground truth is what the kernel reports for the thread that runs the read's callback.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_slice.h"
#include "storage/directory_storage.h"
#include "storage/generate.h"

namespace stallscope {
namespace {

// Records, per completed read, the slice of the thread that ran its callback.
class SliceSeen final : public ReadCallback {
 public:
  void OnReadComplete(const ReadRequest&, int64_t result) override {
    std::lock_guard lock(mu_);
    results_.push_back(result);
    slices_.push_back(ThreadSlice());
  }
  std::vector<double> Wait(size_t n) {
    for (int k = 0; k < 5000; ++k) {
      {
        std::lock_guard lock(mu_);
        if (results_.size() >= n) return slices_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return {};
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> results_;
  std::vector<double> slices_;
};

// The kernel's default slice for a new thread; 0 where it reports none (before Linux 6.12).
double DefaultSlice() {
  double s = 0;
  std::thread([&] { s = ThreadSlice(); }).join();
  return s;
}

TEST(IoSlice, EveryIoThreadRunsWithTheAskedSlice) {
  const double kernel = DefaultSlice();
  if (kernel == 0) GTEST_SKIP() << "this kernel reports no slice (before Linux 6.12)";
  ASSERT_NE(kernel, 300e-6) << "pick another slice for this test: 300us is this kernel's default";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("stallscope-io-slice-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  GenerateDataset({.dir = dir.string(), .samples = 16, .size_mean = 4096, .classes = 1});
  for (const bool uring : {true, false}) {
    for (const double asked : {300e-6, 0.0}) {
      DirectoryStorage s({.dataset = {.path = dir.string()},
                          .io = {.io_depth = 4, .io_threads = 2, .io_slice = asked},
                          .quiet = true,
                          .use_io_uring = uring});
      std::vector<std::byte> buf(16 * 8192);
      std::vector<ReadRequest> reqs;
      for (uint64_t i = 0; i < 16; ++i) reqs.push_back({i, buf.data() + i * 8192, i});
      SliceSeen seen;
      s.Submit(reqs, &seen);
      const std::vector<double> slices = seen.Wait(16);
      ASSERT_EQ(slices.size(), 16u) << "uring " << uring;
      for (double v : slices) {
        EXPECT_DOUBLE_EQ(v, asked > 0 ? asked : kernel) << "uring " << uring << " asked " << asked;
      }
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stallscope
