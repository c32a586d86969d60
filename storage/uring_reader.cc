#include "storage/uring_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "base/align.h"
#include "base/start_thread.h"
#include "base/thread_slice.h"
#include "storage/uring_ring.h"

namespace stallscope {

namespace {

constexpr uint64_t kCancelTag = ~1ULL;  // the completions of cancel requests: ignored
static_assert(kCancelTag != UringRing::kWakeTag);

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string ErrnoText(int err) { return std::strerror(err); }

// The I/O thread running on this thread, if any: a Submit() from inside a completion callback
// goes straight to that thread's own queue (no lock, no wake-up).
thread_local const void* tls_io_thread = nullptr;

}  // namespace

// One I/O thread: its own ring (or pread when io_uring is refused), its own queue.
//
// With io_uring each file costs two linked SQEs: OPENAT into a registered (direct) file slot,
// then READ from that slot; the next open into the slot replaces the file, so there is no
// close syscall, and a whole batch of opens and reads goes to the kernel in one
// io_uring_enter. Kernels without direct descriptors get a plain open() and close() around
// the ring read.
//
// A file whose open and read have not finished `deadline` after they went to the kernel is
// cancelled (IORING_OP_ASYNC_CANCEL on its open and read) and completes with -ETIMEDOUT once
// the kernel hands the buffer back; CancelAll() does the same for every file in flight, with
// -ECANCELED. The pread fallback has no deadline.
class UringFileReader::IoThread {
 public:
  IoThread(const FileReadSource* source, uint32_t depth, bool try_uring, bool direct,
           double deadline, double slice)
      : source_(source),
        depth_(std::max<uint32_t>(depth, 1)),
        direct_(direct),
        // Per file: open + read, and a cancel for each of them.
        ring_(try_uring ? 4 * depth_ : 0, try_uring ? depth_ : 0) {
    uring_ = try_uring && ring_.ok();
    fixed_files_ = uring_ && ring_.fixed_files();
    // Waiting with a timeout needs IORING_FEAT_EXT_ARG (Linux 5.11); older kernels have no
    // deadline.
    if (uring_ && deadline > 0 && (ring_.features() & IORING_FEAT_EXT_ARG)) {
      deadline_ns_ = static_cast<int64_t>(deadline * 1e9);
    }
    slots_.resize(depth_);
    for (uint32_t i = 0; i < depth_; ++i) free_slots_.push_back(depth_ - 1 - i);
    thread_ = StartThread("an I/O thread", [this, slice] {
      tls_io_thread = this;
      // Where the kernel takes the request: a kernel that ignores it reads as before.
      if (slice > 0) SetThreadSlice(slice);
      uring_ ? RunUring() : RunPread();
    });
  }

  ~IoThread() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    ring_.Wake();
    thread_.join();
  }

  bool uring() const { return uring_; }
  int uring_error() const { return ring_.error(); }

  // True when called from this I/O thread itself (inside a completion callback).
  bool IsCurrent() const { return tls_io_thread == this; }

  // From this I/O thread only: queues without the lock; the loop takes it before it sleeps.
  void SubmitFromCallback(std::span<const ReadRequest> requests, ReadCallback* cb) {
    for (const ReadRequest& r : requests) local_.push_back({r, cb});
  }

  void Submit(std::span<const ReadRequest> requests, ReadCallback* cb) {
    {
      std::lock_guard lock(mu_);
      for (const ReadRequest& r : requests) incoming_.push_back({r, cb});
    }
    ring_.Wake();
  }

  void CancelAll() {
    {
      std::lock_guard lock(mu_);
      cancel_ = true;
      // What is queued now is cancelled; what arrives after this runs.
      for (const Item& it : incoming_) cancelled_.push_back(it);
      incoming_.clear();
    }
    ring_.Wake();
  }

 private:
  struct Item {
    ReadRequest request;
    ReadCallback* callback;
  };
  // One file in flight. Its completions carry the slot index, whether it is the open, and the
  // slot's generation (so a late cancel never matches the slot's next file).
  struct Slot {
    Item item;
    bool busy = false;
    uint32_t generation = 0;
    int fd = -1;  // plain descriptor when the ring has no fixed files
    uint64_t done = 0;
    uint64_t size = 0;
    uint32_t pending = 0;   // completions still to come (open, read)
    int open_error = 0;     // -errno of a failed ring open
    int read_error = 0;     // -errno of a failed read (-ECANCELED: the open failed first)
    bool eof = false;       // the file ended before `size`
    int cancel_reason = 0;  // ETIMEDOUT (deadline) or ECANCELED (CancelAll); 0: none
    int64_t started_ns = 0;
    char path[kMaxPath];  // PathOf's scratch: must outlive the submission of the open
  };
  static constexpr uint64_t kOpenTag = 1ULL << 32;
  static constexpr int kGenerationShift = 33;
  static constexpr uint32_t kGenerationMask = (1U << 30) - 1;  // bit 63 stays clear

  uint64_t TagOf(uint32_t slot_index) const {
    return static_cast<uint64_t>(slots_[slot_index].generation) << kGenerationShift | slot_index;
  }

  // Moves submitted items to the local queue. Returns false when stopping with nothing left.
  // After CancelAll() the queued files complete with -ECANCELED and those in flight are
  // cancelled.
  bool TakeIncoming() {
    bool cancel = false;
    std::vector<Item>& incoming = taken_;  // swapped, so both vectors keep their capacity
    std::vector<Item> cancelled;
    {
      std::lock_guard lock(mu_);
      incoming.swap(incoming_);
      cancelled.swap(cancelled_);
      std::swap(cancel, cancel_);
    }
    if (cancel) {  // everything taken before the cancel; `incoming` came after it
      for (const Item& it : local_) finished_.emplace_back(it, -ECANCELED);
      for (const Item& it : cancelled) finished_.emplace_back(it, -ECANCELED);
      local_.clear();
      for (uint32_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].busy && uring_) Cancel(i, ECANCELED);
      }
    }
    for (const Item& it : incoming) local_.push_back(it);
    incoming.clear();
    std::lock_guard lock(mu_);
    return !(stop_ && local_.empty());
  }

  // Asks the kernel to cancel a file's open and read; they complete with -ECANCELED (or
  // -EINTR) or, when too late, with their own result.
  void Cancel(uint32_t slot_index, int reason) {
    Slot& s = slots_[slot_index];
    if (s.cancel_reason != 0) return;
    s.cancel_reason = reason;
    for (const uint64_t tag : {TagOf(slot_index) | kOpenTag, TagOf(slot_index)}) {
      io_uring_sqe* sqe = ring_.GetSqe();
      io_uring_prep_cancel64(sqe, tag, 0);
      io_uring_sqe_set_data64(sqe, kCancelTag);
    }
  }

  // Cancels the files past their deadline; returns the time to the next deadline (-1: none).
  int64_t ExpireDeadlines() {
    if (deadline_ns_ <= 0) return -1;
    const int64_t now = NowNs();
    int64_t next = -1;
    for (uint32_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (!s.busy || s.cancel_reason != 0) continue;
      const int64_t left = s.started_ns + deadline_ns_ - now;
      if (left <= 0) {
        Cancel(i, ETIMEDOUT);
      } else if (next < 0 || left < next) {
        next = left;
      }
    }
    return next;
  }

  int OpenFlags() const { return O_RDONLY | O_CLOEXEC | (direct_ ? O_DIRECT : 0); }

  void Complete(const Item& it, int64_t result) { it.callback->OnReadComplete(it.request, result); }

  void QueueRead(uint32_t slot_index) {
    Slot& s = slots_[slot_index];
    io_uring_sqe* sqe = ring_.GetSqe();
    uint64_t len = s.size - s.done;
    if (direct_) len = RoundUp(len, kBlockBytes);
    io_uring_prep_read(sqe, fixed_files_ ? static_cast<int>(slot_index) : s.fd,
                       s.item.request.dst + s.done, static_cast<unsigned>(len), s.done);
    if (fixed_files_) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, TagOf(slot_index));
    ++s.pending;
  }

  // Starts one file: open (through the ring when it has fixed files) and read.
  bool StartRead(const Item& it) {
    const uint32_t idx = free_slots_.back();
    Slot& s = slots_[idx];
    s.item = it;
    s.fd = -1;
    s.done = 0;
    s.size = source_->BytesOf(it.request.sample);
    s.pending = 0;
    s.open_error = 0;
    s.read_error = 0;
    s.eof = false;
    s.cancel_reason = 0;
    if (s.size == 0) {
      Complete(it, 0);
      return false;
    }
    free_slots_.pop_back();
    s.busy = true;
    s.generation = (s.generation + 1) & kGenerationMask;
    s.started_ns = deadline_ns_ > 0 ? NowNs() : 0;
    if (fixed_files_) {
      // The open and its linked read must go to the kernel in one submission.
      ring_.Reserve(2);
      io_uring_sqe* sqe = ring_.GetSqe();
      // O_CLOEXEC does not apply to direct descriptors (the kernel refuses it).
      io_uring_prep_openat_direct(sqe, AT_FDCWD, source_->PathOf(it.request.sample, s.path),
                                  OpenFlags() & ~O_CLOEXEC, 0, idx);
      sqe->flags |= IOSQE_IO_LINK;
      io_uring_sqe_set_data64(sqe, TagOf(idx) | kOpenTag);
      ++s.pending;
    } else {
      s.fd = open(source_->PathOf(it.request.sample, s.path), OpenFlags());
      if (s.fd < 0) {
        const int err = errno;
        s.busy = false;
        free_slots_.push_back(idx);
        Complete(it, -err);
        return false;
      }
    }
    QueueRead(idx);
    return true;
  }

  // The file's result once nothing of it is left in the kernel.
  static int64_t ResultOf(const Slot& s) {
    int64_t r = s.open_error < 0 ? s.open_error : s.read_error;
    if (r == 0) {
      if (s.done >= s.size) return static_cast<int64_t>(s.size);
      r = s.eof ? -ENODATA : -ECANCELED;  // not eof: stopped by a cancel
    }
    if (s.cancel_reason != 0 && (r == -ECANCELED || r == -EINTR)) r = -s.cancel_reason;
    return r;
  }

  // Frees the slot; the callback runs later (RunUring: after the ring is refilled).
  void Finish(uint32_t slot_index) {
    Slot& s = slots_[slot_index];
    if (s.fd >= 0) close(s.fd);
    s.fd = -1;
    s.busy = false;
    free_slots_.push_back(slot_index);
    finished_.emplace_back(s.item, ResultOf(s));
  }

  void RunCallbacks() {
    for (const auto& [item, result] : finished_) Complete(item, result);
    finished_.clear();
  }

  // Starts as many queued reads as there are free slots; returns how many started.
  uint32_t Refill() {
    uint32_t started = 0;
    while (!free_slots_.empty() && !local_.empty()) {
      const Item it = local_.front();
      local_.pop_front();
      started += StartRead(it);
    }
    return started;
  }

  // Handles one completion of a file's open or read; returns true when the file is done.
  bool OnCompletion(uint64_t tag, int res) {
    const uint32_t idx = static_cast<uint32_t>(tag & 0xffffffffu);
    Slot& s = slots_[idx];
    --s.pending;
    if (tag & kOpenTag) {
      if (res < 0) s.open_error = res;  // the linked read comes back -ECANCELED
    } else if (s.open_error < 0 || res == -ECANCELED) {
      // The open failed (its error wins) or the read was cancelled: the file is over.
      if (res < 0 && s.read_error == 0) s.read_error = res;
    } else if ((res == -EAGAIN || res == -EINTR) && s.cancel_reason == 0) {
      QueueRead(idx);  // transient: try the same range again
    } else if (res < 0) {
      s.read_error = res;
    } else if (res == 0) {
      s.eof = s.done < s.size;  // the file shrank since it was listed
    } else {
      s.done += static_cast<uint64_t>(res);
      if (s.done < s.size && s.cancel_reason == 0) QueueRead(idx);  // short read: the rest
    }
    if (s.pending > 0) return false;
    Finish(idx);
    return true;
  }

  void RunUring() {
    ring_.ArmWake();
    ring_.Submit();
    uint32_t inflight = 0;
    while (true) {
      if (!TakeIncoming() && inflight == 0) break;
      inflight += Refill();
      RunCallbacks();  // failed opens of the plain-descriptor path land here
      // A callback may have queued more (SubmitFromCallback): start it before sleeping.
      if (!local_.empty() && !free_slots_.empty()) continue;
      const int rc = ring_.Wait(inflight > 0 ? ExpireDeadlines() : -1);
      if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && rc != -ETIME) {
        std::fprintf(stderr, "stallscope: io_uring wait failed: %s\n", ErrnoText(-rc).c_str());
      }
      ring_.ForEachCompletion([&](uint64_t tag, int res) {
        // A cancel's own completion (-ENOENT or -EALREADY when the file finished first): nothing
        // to do.
        if (tag != kCancelTag && OnCompletion(tag, res)) --inflight;
      });
      // Refill the ring before running the callbacks, so the device stays busy while they
      // work (a cache tier verifies a checksum in its callback).
      TakeIncoming();
      inflight += Refill();
      ring_.Submit();
      RunCallbacks();
    }
  }

  void RunPread() {
    while (true) {
      const bool more = TakeIncoming();
      RunCallbacks();  // files cancelled by CancelAll() before they started
      if (!more) break;
      if (local_.empty()) {
        ring_.WaitForWake();
        continue;
      }
      Item it = local_.front();
      local_.pop_front();
      char path[kMaxPath];
      const int fd = open(source_->PathOf(it.request.sample, path), OpenFlags());
      if (fd < 0) {
        Complete(it, -errno);
        continue;
      }
      const uint64_t size = source_->BytesOf(it.request.sample);
      uint64_t done = 0;
      int64_t result = static_cast<int64_t>(size);
      while (done < size) {
        uint64_t len = size - done;
        if (direct_) len = RoundUp(len, kBlockBytes);
        ssize_t n = pread(fd, it.request.dst + done, len, static_cast<off_t>(done));
        if (n < 0 && errno == ESPIPE) n = read(fd, it.request.dst + done, len);  // a stream
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) {
          result = -errno;
          break;
        }
        if (n == 0) {
          result = -ENODATA;
          break;
        }
        done += static_cast<uint64_t>(n);
      }
      close(fd);
      Complete(it, result);
    }
  }

  const FileReadSource* const source_;
  const uint32_t depth_;
  const bool direct_;
  UringRing ring_;
  bool uring_ = false;
  bool fixed_files_ = false;
  int64_t deadline_ns_ = 0;  // 0: none

  std::mutex mu_;
  // Guarded by mu_.
  std::vector<Item> incoming_;
  std::vector<Item> cancelled_;  // queued when CancelAll() came: to complete with -ECANCELED
  bool stop_ = false;
  bool cancel_ = false;  // CancelAll() asked

  // I/O thread only.
  std::vector<Item> taken_;  // TakeIncoming's scratch
  std::deque<Item> local_;
  std::vector<std::pair<Item, int64_t>> finished_;  // completions whose callbacks are due
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;

  std::thread thread_;
};

UringFileReader::UringFileReader(const FileReadSource& source, const Options& o) {
  // Never more threads than files in flight: io_depth 1 means one read at a time, whatever
  // the (per-core) thread default.
  const uint32_t n = std::clamp<uint32_t>(o.threads, 1, std::max<uint32_t>(o.depth, 1));
  const uint32_t depth = std::max<uint32_t>(o.depth / n, 1);
  depth_per_thread_ = depth;
  for (uint32_t i = 0; i < n; ++i) {
    threads_.push_back(
        std::make_unique<IoThread>(&source, depth, o.use_io_uring, o.direct, o.deadline, o.slice));
  }
  uring_ok_ = threads_.front()->uring();
  uring_error_ = threads_.front()->uring_error();
}

UringFileReader::~UringFileReader() = default;

void UringFileReader::Submit(std::span<const ReadRequest> requests, ReadCallback* callback) {
  // A read submitted by a completion callback stays on the callback's I/O thread: it is queued
  // without a lock or a wake-up, and the thread's loop starts it before it next sleeps.
  for (auto& t : threads_) {
    if (t->IsCurrent()) {
      t->SubmitFromCallback(requests, callback);
      return;
    }
  }
  // Otherwise a batch large enough to fill more than one thread is dealt out in equal parts,
  // so every ring works on it; smaller submissions go round-robin whole.
  const size_t n = threads_.size();
  const size_t parts = std::min(n, std::max<size_t>(1, requests.size() / depth_per_thread_));
  const uint64_t first = next_thread_.fetch_add(parts, std::memory_order_relaxed);
  for (size_t k = 0; k < parts; ++k) {
    const size_t begin = requests.size() * k / parts, end = requests.size() * (k + 1) / parts;
    threads_[(first + k) % n]->Submit(requests.subspan(begin, end - begin), callback);
  }
}

void UringFileReader::CancelAll() {
  for (auto& t : threads_) t->CancelAll();
}

}  // namespace stallscope
