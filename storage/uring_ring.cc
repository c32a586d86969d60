#include "storage/uring_ring.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "storage/storage.h"

namespace stallscope {

UringRing::UringRing(unsigned entries, unsigned fixed_files) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) throw StorageError(std::string("eventfd: ") + std::strerror(errno));
  if (entries == 0) return;
  const int rc = io_uring_queue_init(entries + 1, &ring_, 0);  // + the wake-up poll
  ok_ = rc == 0;
  error_ = rc < 0 ? -rc : 0;
  if (ok_ && fixed_files > 0) {
    fixed_files_ = io_uring_register_files_sparse(&ring_, fixed_files) == 0;
  }
}

UringRing::~UringRing() {
  if (ok_) io_uring_queue_exit(&ring_);  // also closes the registered files
  close(wake_fd_);
}

void UringRing::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void UringRing::DrainWake() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof count);
}

void UringRing::WaitForWake() { DrainWake(); }  // blocks until the counter is non-zero

io_uring_sqe* UringRing::GetSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  while (sqe == nullptr) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

void UringRing::Reserve(unsigned n) {
  if (io_uring_sq_space_left(&ring_) < n) io_uring_submit(&ring_);
}

void UringRing::ArmWake() {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_poll_add(sqe, wake_fd_, POLLIN);
  io_uring_sqe_set_data64(sqe, kWakeTag);
}

void UringRing::Submit() {
  if (io_uring_sq_ready(&ring_) > 0) io_uring_submit(&ring_);
}

int UringRing::Wait(int64_t timeout_ns) {
  io_uring_cqe* cqe = nullptr;
  if (timeout_ns >= 0) {
    __kernel_timespec ts{timeout_ns / 1000000000, timeout_ns % 1000000000};
    return io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
  }
  return io_uring_sq_ready(&ring_) > 0 ? io_uring_submit_and_wait(&ring_, 1)
                                       : io_uring_wait_cqe(&ring_, &cqe);
}

}  // namespace stallscope
