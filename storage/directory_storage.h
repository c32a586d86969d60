// DirectoryStorage: a real dataset directory read through io_uring.
//
// The dataset is every regular file below `path` (recursive, sorted by relative path), each
// once, by its real path: a symbolic link resolving inside `path` names something already
// listed (so link loops cannot repeat anything), one resolving outside is not read. Every file is
// opened once at construction to check it is readable, so a bad dataset fails before anything runs.
// Reads go through `io_threads` threads, each owning one io_uring of depth io_depth / io_threads: a
// thread opens the file, submits the read, requeues short reads and -EAGAIN, and closes the file
// when it is done. Where io_uring is refused (seccomp, old kernel, EPERM) the threads fall back to
// pread and one notice line is printed. A read past `read_timeout` is cancelled and fails with
// -ETIMEDOUT (UringFileReader's deadline). With `direct_io` files are opened with O_DIRECT and
// buffers are block-aligned; filesystems that refuse O_DIRECT (tmpfs) fall back to buffered reads,
// said once. With `cold`, BeginEpoch() drops the files from the page cache
// (posix_fadvise DONTNEED, no root needed).
//
// Datasets written by `stallscope gen` carry a manifest (kManifestName, not a sample) with
// the content seed: their samples can then be verified byte for byte.
//
// Thread-safety: as Storage. Completions are delivered on the I/O threads.
#ifndef STALLSCOPE_STORAGE_DIRECTORY_STORAGE_H_
#define STALLSCOPE_STORAGE_DIRECTORY_STORAGE_H_

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/storage.h"
#include "storage/storage_options.h"
#include "storage/uring_reader.h"

namespace stallscope {

struct DirectoryStorageOptions {
  DatasetOptions dataset;    // path; classes: labels are the top-level folder's index modulo it
  StorageOptions storage;    // direct_io, cold
  IoOptions io;              // io_threads, io_depth, read_timeout
  bool quiet = false;        // suppress the one-line notices
  bool use_io_uring = true;  // false: the pread fallback (tests, and kernels that refuse it)
  // > 0: read only the first this many bytes of each file (at least one block with direct_io):
  // `calibrate --dir`'s small-read probe, which times what a read costs apart from its bytes.
  uint64_t read_at_most = 0;
};

class DirectoryStorage final : public Storage, private FileReadSource {
 public:
  static constexpr const char* kManifestName = ".stallscope-gen.json";

  // Throws StorageError naming the path when the directory is missing, empty, or a file
  // cannot be opened.
  explicit DirectoryStorage(const DirectoryStorageOptions& options);
  ~DirectoryStorage() override;

  uint64_t num_samples() const override { return files_.size(); }
  uint64_t SampleBytes(uint64_t sample) const override { return files_[sample].bytes; }
  uint64_t max_sample_bytes() const override { return max_bytes_; }
  uint32_t Label(uint64_t sample) const override { return files_[sample].label; }
  bool can_verify() const override { return seed_.has_value(); }
  bool Verify(uint64_t sample, std::span<const std::byte> data) const override;
  void BeginEpoch(int epoch) override;
  // Drops files first, first + stride, … from the page cache (BeginEpoch with cold: every file).
  void DropFromPageCache(uint64_t first, uint64_t stride) const;
  bool needs_epoch_barrier() const override { return options_.storage.cold; }
  void Submit(std::span<const ReadRequest> requests, ReadCallback* callback) override;
  void CancelReads() override { reader_->CancelAll(); }
  std::string SampleName(uint64_t sample) const override { return files_[sample].full; }
  std::string Describe() const override;
  std::string Fingerprint() const override;

  const std::string& RelativePath(uint64_t sample) const { return files_[sample].relative; }
  // Symbolic links skipped because they led outside the directory (or nowhere), and those
  // leading inside it, to files or folders listed by their real paths (loops included).
  uint64_t skipped_links() const { return skipped_links_; }
  ListingSkips listing_skips() const override { return listing_skips_; }
  uint64_t duplicate_links() const { return duplicate_links_; }
  uint64_t total_bytes() const { return total_bytes_; }
  // True when the I/O threads use io_uring (false: pread fallback).
  bool uses_io_uring() const { return uring_ok_; }
  // True when files are opened with O_DIRECT (asked for, and allowed by the filesystem).
  bool direct_io() const { return direct_; }

 private:
  struct File {
    std::string relative;
    std::string full;  // the path opened: options.path + "/" + relative
    uint64_t bytes = 0;
    uint32_t label = 0;
  };
  // FileReadSource
  const char* PathOf(uint64_t sample, char* scratch) const override {
    return files_[sample].full.c_str();
  }
  uint64_t BytesOf(uint64_t sample) const override { return files_[sample].bytes; }
  void ListFiles(const std::filesystem::path& root);

  // Constant after construction.
  DirectoryStorageOptions options_;
  std::vector<File> files_;
  uint64_t max_bytes_ = 0;
  uint64_t total_bytes_ = 0;
  std::optional<uint64_t> seed_;
  bool direct_ = false;
  bool uring_ok_ = true;
  std::unique_ptr<UringFileReader> reader_;
  uint64_t skipped_links_ = 0, duplicate_links_ = 0;
  ListingSkips listing_skips_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_DIRECTORY_STORAGE_H_
