// StorageModel: the simulated storage's behaviour on any clock.
//
// One model answers "when does each read complete, and how" for SimulatedStorage (real time:
// its Boost.Asio thread feeds it steady-clock seconds and sleeps until NextEventTime()) and
// for the simulator (pipeline/simulator.h: a simulated clock that jumps from event to event).
// Because both run this same code, a simulated run and a real run of one scenario draw
// latencies from the same distribution and share bandwidth by the same rule.
//
// Each read goes through: queue (max_inflight) → IOPS bucket → latency → bandwidth bucket →
// completion.
//   - latency: lognormal, fitted so its median is p50 and its 99th percentile p99;
//   - bandwidth: a token bucket of `bandwidth` bytes/s shared by every read in flight (a
//     read's bytes flow after its latency, at the rate left to it); depth 1 ms of bandwidth,
//     at least one largest sample;
//   - iops: a token bucket of `iops` operations/s;
//   - faults (storage.faults): per read an error (-EIO after its latency), a timeout (held
//     `timeout`, then -ETIMEDOUT), a truncated read (half the bytes), a latency spike; and
//     whole-storage stalls (from `stall_every` after the start, every `stall_every`, nothing
//     completes for `stall_for`).
// Times are seconds on the caller's clock; `start` is the clock's reading at construction.
//
// Shared (Share()): the ranks of a multi-rank run on one host each drive their own model, and
// all of them take the bandwidth and IOPS tokens and the max_inflight slots from one
// SharedStorageBudget in shared memory, so the host's ranks see one storage as the simulator's
// ranks do. The buckets become virtual times (GCRA: the time at which the bucket was last
// empty, advanced by compare-and-swap), on CLOCK_MONOTONIC, which every process of the host
// reads alike. The max_inflight queue stays one FIFO: every read takes a ticket when it is
// submitted, and ticket k may start once k < (reads completed) + max_inflight, in whichever
// process it waits (a read not yet admissible looks again every kSharedPoll).
//
// Thread-safety: none; one thread drives a model. A SharedStorageBudget is lock-free atomics,
// shared between processes.
#ifndef STALLSCOPE_STORAGE_STORAGE_MODEL_H_
#define STALLSCOPE_STORAGE_STORAGE_MODEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "storage/storage_options.h"

namespace stallscope {

// One storage's budget shared by the processes of one host (multi-rank runs), placed in
// shared memory by its owner; zero-initialized = nothing taken yet.
struct SharedStorageBudget {
  std::atomic<double> bandwidth_empty{0};  // GCRA: when the bandwidth bucket was last empty
  std::atomic<double> iops_empty{0};
  std::atomic<int64_t> tickets{0};   // reads submitted, over all processes
  std::atomic<int64_t> released{0};  // reads completed (their max_inflight slot released)
};
static_assert(std::atomic<double>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "SharedStorageBudget is used across processes: its atomics must be lock-free");

// The options of a separate model for writes (storage.write.shared false): storage.write's
// bandwidth (storage.bandwidth when 0) and latency (the reads' when 0), no IOPS limit, no
// faults, the same max_inflight.
SimulatedStorageOptions SeparateWriteModel(const SimulatedStorageOptions& o);

class StorageModel {
 public:
  static constexpr double kSharedPoll = 50e-6;  // seconds between retries for a shared slot

  static constexpr double kNever = std::numeric_limits<double>::infinity();

  struct Completion {
    uint64_t token = 0;  // the submitter's
    int64_t result = 0;  // bytes delivered (bytes, or half of them when truncated) or -errno
    double time = 0;     // when it completed
  };

  // `max_sample_bytes` sizes the bandwidth bucket's depth; `seed` drives latency and faults.
  StorageModel(const SimulatedStorageOptions& options, uint64_t seed, uint64_t max_sample_bytes,
               double start);

  // From now on, take tokens and slots from `budget` (shared with other processes); `offset`
  // turns this model's clock into CLOCK_MONOTONIC seconds (the shared clock).
  void Share(SharedStorageBudget* budget, double offset) {
    shared_ = budget;
    offset_ = offset;
  }

  // The simulator's host (sim/rank_loop.h): each read, as it starts, also waits this long for
  // its CPU part (the host's cores shared by more busy threads than they hold). Writes do not.
  void SetHostDelay(std::function<double(uint64_t token)> delay) { host_delay_ = std::move(delay); }

  // Queues a read of `bytes` at `now`; it starts at once if fewer than max_inflight are out.
  // `write`: a write (a checkpoint's) instead: its latency is storage.write's, it meets no
  // fault, and it shares the queue and the bandwidth with the reads (storage.write.shared).
  void Submit(uint64_t token, uint64_t bytes, double now, bool write = false);
  // The earliest time at which Advance() has something to do; kNever when idle.
  double NextEventTime() const {
    const double a = heap_.empty() ? kNever : heap_.front().due;
    const double b = flowing_.empty() ? kNever : flowing_.front().due;
    const double c = waiting_.empty() ? kNever : retry_at_;
    return std::min(std::min(a, b), c);
  }
  // Processes everything due at or before `now`, appending completed reads to `done` in
  // completion order.
  void Advance(double now, std::vector<Completion>& done);

  uint32_t inflight() const { return inflight_; }
  size_t queued() const { return waiting_.size(); }
  // Internal events processed so far (a read takes one to three).
  uint64_t events() const { return events_; }

 private:
  enum Fault : uint8_t { kNone = 0, kError, kTimeout, kTruncate };
  // A read's state lives in reads_[index]; the heap holds only (due, index), 16 bytes, so a
  // sift moves little memory (the simulator pushes and pops millions of these).
  struct Read {
    uint64_t token = 0;
    uint64_t bytes = 0;
    Fault fault = kNone;
    bool write = false;
    int64_t ticket = 0;  // shared: its place in the host's one FIFO queue
  };
  struct Pending {
    double due = 0;
    uint32_t index = 0;
  };
  void Admit(double now);
  void Push(double due, uint32_t index);
  Pending PopMin();
  // The end of the whole-storage stall that `t` falls in, or `t` when none does.
  double AfterStall(double t) const;
  // Token bucket with debt: refills at `rate` up to `depth`; taking more than is there leaves
  // a debt that delays the taker until it is paid. Returns when `amount` is granted.
  static double Take(double& tokens, double amount, double rate, double depth, double& last,
                     double t);
  // The same bucket shared: `empty` is when it was last empty, on the shared clock.
  double SharedTake(std::atomic<double>& empty, double amount, double rate, double depth,
                    double t) const;
  // A max_inflight slot for the read at the front of the queue (shared: by its ticket).
  bool TakeSlot(const Read& front, double now);
  void ReleaseSlot();

  // Constant after construction.
  const SimulatedStorageOptions options_;
  const double start_;
  bool has_latency_ = false;
  double mu_ = 0, sigma_ = 0;  // of the latency's logarithm
  bool has_write_latency_ = false;
  double write_mu_ = 0, write_sigma_ = 0;  // storage.write.latency's
  double bw_depth_ = 0;
  std::function<double(uint64_t)> host_delay_;  // SetHostDelay; empty: none

  // xoshiro256** (Blackman & Vigna): a few instructions per draw, where mt19937_64 and
  // std::lognormal_distribution cost ~100 per read (the simulator draws one per read).
  uint64_t rng_[4] = {};
  double spare_normal_ = 0;  // Box–Muller makes two normals; the second waits here
  bool has_spare_ = false;
  uint64_t Next();
  double Uniform();          // [0, 1)
  double Normal();           // standard
  std::vector<Read> reads_;  // by index; free ones listed in free_
  std::vector<uint32_t> free_;
  std::deque<uint32_t> waiting_;  // indexes of reads queued behind max_inflight
  std::vector<Pending> heap_;     // 4-ary min-heap on `due`: reads in their latency (or fault)
  // Reads whose bytes flow through the bandwidth bucket. The bucket serves them in the order
  // their latency ended and its grant times never decrease (a FIFO server), so a queue
  // ordered by arrival is also ordered by `due`: no heap needed.
  std::deque<Pending> flowing_;
  uint32_t inflight_ = 0;
  double bw_tokens_ = 0, bw_last_ = 0;
  double iops_tokens_ = 1.0, iops_last_ = 0;
  uint64_t events_ = 0;
  SharedStorageBudget* shared_ = nullptr;
  double offset_ = 0;
  double retry_at_ = kNever;  // shared: when to try again for a slot other ranks hold
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_STORAGE_MODEL_H_
