// BenchDir: how fast this host reads a real dataset directory (`stallscope bench-dir`).
//
// Every regular file below the directory (DirectoryStorage's listing: recursive, sorted) is
// read exactly once through the same io_uring reader the pipeline uses, `io_depth` files in
// flight, each into its own block-aligned buffer. Measured: files/s, bytes/s, per-file
// latency (submission to completion) percentiles, a file-size histogram, and the process's
// CPU time per file.
//
// Thread-safety: one call at a time per directory.
#ifndef STALLSCOPE_APP_BENCH_DIR_H_
#define STALLSCOPE_APP_BENCH_DIR_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "storage/directory_storage.h"

namespace stallscope {

struct BenchDirResult {
  std::string path;
  uint64_t files = 0, bytes = 0, skipped = 0;
  double seconds = 0;
  double files_per_second = 0, bytes_per_second = 0;
  double latency_p50 = 0, latency_p99 = 0, latency_p999 = 0;
  double cpu_seconds_per_file = 0;
  bool io_uring = true, direct = false;
  // Files per power-of-two size bucket: bucket k holds sizes in [2^k, 2^(k+1)) (0: empty files).
  std::vector<uint64_t> size_histogram;
};

// Throws StorageError (a bad directory) before reading anything.
BenchDirResult BenchDirectory(const DirectoryStorageOptions& options);

nlohmann::json BenchDirToJson(const BenchDirResult& r);
std::string FormatBenchDir(const BenchDirResult& r);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_BENCH_DIR_H_
