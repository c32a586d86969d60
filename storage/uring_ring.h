// UringRing: one io_uring owned by one thread, with its wake-up: an eventfd that other threads
// write (Wake) and that the ring itself polls, so the owning thread sleeps in one place whether
// it waits for I/O or for new work. Used by the dataset reader's I/O threads
// (storage/uring_reader.cc) and the disk tier's writer (cache/disk_tier.cc).
//
// Where io_uring is refused (seccomp, an old kernel, EPERM), ok() is false and the owner falls
// back to blocking syscalls; the eventfd exists either way, and WaitForWake() blocks on it.
//
// Usage, on the owning thread:
//   ring.ArmWake(); ring.Submit();
//   loop: queue SQEs (GetSqe) → ring.Wait() → ring.ForEachCompletion(...) → ring.Submit()
//
// Thread-safety: Wake() from any thread; everything else from the owning thread.
#ifndef STALLSCOPE_STORAGE_URING_RING_H_
#define STALLSCOPE_STORAGE_URING_RING_H_

#include <liburing.h>

#include <cstdint>

namespace stallscope {

class UringRing {
 public:
  // A ring with room for `entries` SQEs plus the wake-up poll (entries 0: no ring, only the
  // wake-up, for an owner that will not use io_uring); with `fixed_files` > 0, that many sparse
  // registered (direct) file slots are asked for (fixed_files() says whether the kernel gave
  // them). Throws StorageError when the eventfd cannot be made.
  UringRing(unsigned entries, unsigned fixed_files);
  ~UringRing();  // closes the ring (and its registered files) and the eventfd
  UringRing(const UringRing&) = delete;
  UringRing& operator=(const UringRing&) = delete;

  bool ok() const { return ok_; }
  int error() const { return error_; }  // errno of a refused io_uring_queue_init; 0 otherwise
  bool fixed_files() const { return fixed_files_; }
  unsigned features() const { return ring_.features; }

  // Any thread: wakes the owner (its poll completes, or WaitForWake returns).
  void Wake();

  // A free SQE; submits what is queued first when the ring is full. REQUIRES: ok().
  io_uring_sqe* GetSqe();
  // Submits what is queued when fewer than `n` SQEs are free (so `n` linked SQEs go to the
  // kernel in one submission).
  void Reserve(unsigned n);
  // Queues the wake-up poll (once at the start; ForEachCompletion re-arms it).
  void ArmWake();
  // Submits what is queued (nothing when nothing is).
  void Submit();
  // Submits what is queued and waits for a completion, at most `timeout_ns` when it is >= 0.
  // Returns io_uring's result (-ETIME on a timeout, -EINTR on a signal).
  int Wait(int64_t timeout_ns = -1);
  // Calls on_completion(tag, res) for every completion ready and marks them seen. The
  // wake-up's own completion is handled here: the eventfd is drained and the poll re-armed.
  template <typename F>
  void ForEachCompletion(F on_completion) {
    unsigned head, seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      const uint64_t tag = io_uring_cqe_get_data64(cqe);
      if (tag == kWakeTag) {
        DrainWake();
        ArmWake();
      } else {
        on_completion(tag, cqe->res);
      }
    }
    io_uring_cq_advance(&ring_, seen);
  }

  // Without a ring: blocks until Wake() (or returns at once when a wake-up is pending).
  void WaitForWake();

  // The wake-up poll's tag; owners must not use it.
  static constexpr uint64_t kWakeTag = ~0ULL;

 private:
  void DrainWake();

  io_uring ring_{};
  bool ok_ = false;
  bool fixed_files_ = false;
  int error_ = 0;
  int wake_fd_ = -1;
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_URING_RING_H_
