// The write rate a checkpoint directory gives `ranks` ranks writing together, measured with the
// store alone as a run writes: O_DIRECT and fsync, each rank `bytes` a checkpoint, the
// checkpoints `apart` seconds apart (the steps between them; 0 = back to back). The rate of
// all ranks' bytes over the time the slowest rank took, for every checkpoint but the first
// (which starts from rest whatever `apart` is). For telling `simulate` a directory's rate
// (checkpoint.bandwidth) in tests that compare it with real runs.
#ifndef STALLSCOPE_TESTS_STORE_RATE_H_
#define STALLSCOPE_TESTS_STORE_RATE_H_

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "storage/checkpoint_store.h"

namespace stallscope::testing {

inline double StoreWriteRate(const std::string& path, uint64_t bytes, uint32_t ranks, double apart,
                             int checkpoints = 9) {
  std::unique_ptr<std::byte[], decltype(&std::free)> buf(
      static_cast<std::byte*>(std::aligned_alloc(4096, bytes)), &std::free);
  std::memset(buf.get(), 0x5a, bytes);
  std::vector<std::unique_ptr<DirectoryCheckpointStore>> stores;
  for (uint32_t r = 0; r < ranks; ++r) {
    stores.push_back(std::make_unique<DirectoryCheckpointStore>(DirectoryCheckpointOptions{
        .path = path, .rank = r, .fsync = true, .direct = true, .keep = 1}));
  }
  double writing = 0;
  for (int i = 0; i < checkpoints; ++i) {
    std::this_thread::sleep_for(std::chrono::duration<double>(apart));  // the steps between
    const double t0 = MonotonicSeconds();
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] { stores[r]->Write(i + 1, {buf.get(), bytes}); });
    }
    for (std::thread& t : threads) t.join();
    if (i > 0) writing += MonotonicSeconds() - t0;
  }
  stores.clear();
  std::filesystem::remove_all(path);
  return static_cast<double>(checkpoints - 1) * ranks * bytes / writing;
}

}  // namespace stallscope::testing

#endif  // STALLSCOPE_TESTS_STORE_RATE_H_
