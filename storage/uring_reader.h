// UringFileReader: reads whole files, named by key, through io_uring I/O threads.
//
// Each of `threads` I/O threads (at most `depth` of them) owns one ring of `depth / threads`
// files in flight. A file
// costs two linked SQEs: OPENAT into a registered (direct) file slot, then READ from that
// slot; the next open into the slot replaces the file, so there is no close syscall, and a
// whole batch of opens and reads reaches the kernel in one io_uring_enter. Short reads and
// -EAGAIN are requeued; a file that ends early is -ENODATA. Kernels without direct
// descriptors get open()/close() around the ring read; where io_uring is refused entirely
// the threads read with pread. With `direct`, files are opened O_DIRECT and reads are
// rounded up to 4096-byte blocks (the destination must be block-aligned and that large).
//
// With a `deadline`, a file whose open and read are not done that long after they went to
// the kernel is cancelled and completes with -ETIMEDOUT once the kernel has let go of its
// buffer (a read the kernel cannot interrupt ends when it ends). CancelAll() ends every file
// queued or in flight the same way with -ECANCELED. Neither applies to the pread fallback's
// read in progress, nor, on kernels older than 5.11, the deadline at all.
//
// Used by DirectoryStorage (dataset files) and the disk cache tier (entry files).
//
// Thread-safety: Submit() may be called from any thread; completions arrive on the I/O
// threads. The FileReadSource must outlive the reader.
#ifndef STALLSCOPE_STORAGE_URING_READER_H_
#define STALLSCOPE_STORAGE_URING_READER_H_

#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "storage/storage.h"
#include "storage/storage_options.h"

namespace stallscope {

// Longest path a FileReadSource may build in its scratch buffer, including the NUL.
constexpr size_t kMaxPath = 4096;

class FileReadSource {
 public:
  // The path of file `key`: either a stable string of the source's, or one written into
  // `scratch` (kMaxPath bytes).
  virtual const char* PathOf(uint64_t key, char* scratch) const = 0;
  // How many bytes to read from it.
  virtual uint64_t BytesOf(uint64_t key) const = 0;

 protected:
  ~FileReadSource() = default;
};

class UringFileReader {
 public:
  struct Options {
    uint32_t threads = 1;
    uint32_t depth = IoOptions{}.io_depth;  // files in flight over all threads
    bool direct = false;
    bool use_io_uring = true;
    double deadline = 0;  // seconds per file from its submission to the kernel; 0: none
    double slice =
        0;  // seconds: each I/O thread's scheduler slice (SetThreadSlice); 0: the kernel's
  };
  UringFileReader(const FileReadSource& source, const Options& options);
  ~UringFileReader();

  // ReadRequest::sample is the key. Results are byte counts or -errno.
  void Submit(std::span<const ReadRequest> requests, ReadCallback* callback);
  // Ends every read queued or in flight now with -ECANCELED (reads submitted later run).
  void CancelAll();
  bool uses_io_uring() const { return uring_ok_; }
  int uring_error() const { return uring_error_; }

 private:
  class IoThread;
  std::vector<std::unique_ptr<IoThread>> threads_;
  std::atomic<uint64_t> next_thread_{0};
  uint32_t depth_per_thread_ = 1;
  bool uring_ok_ = false;
  int uring_error_ = 0;
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_URING_READER_H_
