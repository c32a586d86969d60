// CheckpointBench: how fast this host writes a training checkpoint and restores it
// (`stallscope bench-checkpoint`), measured the way MLPerf Storage v2.0 measures its checkpoint
// workloads: every rank writes its own share to its own file with fsync, the page cache is
// dropped before the read-back, and the slowest rank's time is the job's time.
//
// One CheckpointBench holds the ranks this process writes — all of a job's ranks as threads
// of one process, or one rank of an `mpirun` job — with a DirectoryCheckpointStore (io_uring,
// temporary name + fsync + rename, checksummed; storage/checkpoint_store.h) and a 4096-aligned
// snapshot buffer of non-constant content each. A run writes every rank's checkpoint (timed),
// evicts it from the page cache without root (POSIX_FADV_DONTNEED on the fsynced file; a file
// written without fsync is flushed first, untimed, so the read-back still comes from the
// storage), and reads it back (timed) through DirectoryCheckpointStore::Verify, or Read with
// plan.read_into_buffer; both check its checksum. The ranks of one process run on their own
// threads, released together for each timed phase.
//
// Thread-safety: one thread (main's) calls a CheckpointBench; it runs its ranks' threads
// itself.
#ifndef STALLSCOPE_APP_BENCH_CHECKPOINT_H_
#define STALLSCOPE_APP_BENCH_CHECKPOINT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/checkpoint_store.h"

namespace stallscope {

// What a benchmark writes: `ranks` files of `rank_bytes` in `path`, `runs` times.
struct CheckpointBenchPlan {
  std::string path;
  uint32_t ranks = 1;       // the job's ranks, each writing one file
  uint64_t rank_bytes = 0;  // each rank's share (CheckpointOptions::rank_bytes), 4096-multiple
  uint32_t runs = 5;        // MLPerf Storage's checkpoint runs
  bool fsync = true;
  bool direct = false;
  uint64_t block = 1 << 20;  // bytes per write and read (CheckpointOptions::block)
  uint32_t io_depth = 8;     // of each rank (CheckpointOptions::io_depth)
  // The read-back: false streams each file through io_depth recycled buffers of `block`
  // (DirectoryCheckpointStore::Verify, as a restore staged to a GPU and fio's read job do);
  // true reads it into the rank's snapshot buffer (Read, as a run's `restore: true` does).
  bool read_into_buffer = false;

  uint64_t total_bytes() const { return rank_bytes * ranks; }
};

// One rank's part of one run, from the common start of each phase to its own end.
struct RankTimes {
  uint32_t rank = 0;
  double write_seconds = 0;  // Write: create, write, fsync, rename, directory fsync
  double read_seconds = 0;   // Verify or Read: open, read, checksum
};

// One run of the whole job: every rank's times; the job's are the slowest rank's.
struct CheckpointBenchRun {
  std::vector<RankTimes> ranks;  // in rank order
  double write_seconds() const;
  double read_seconds() const;
};

// How often a job can afford a checkpoint whose slowest rank writes for `write_seconds`, with
// steps of `step_seconds`, keeping the checkpoint stall at most `max_stall` of the run.
struct CheckpointFrequency {
  // Sync (the GPUs wait for the whole write): the smallest N >= 1 with
  // write / (N × step + write) <= max_stall, and that share at N.
  uint64_t every_steps = 1;
  double stall_fraction = 0;
  // Async (the GPUs wait for the snapshot only): the smallest M >= 1 with M × step >= write,
  // so that each write ends before the next checkpoint starts.
  uint64_t async_every_steps = 1;
};
// REQUIRES: write_seconds >= 0, step_seconds > 0, 0 < max_stall < 1.
CheckpointFrequency MaxCheckpointFrequency(double write_seconds, double step_seconds,
                                           double max_stall);

// Raised on an `mpirun` rank when another rank's write or read failed (it says why).
struct PeerFailed {};

class CheckpointBench {
 public:
  // Called on main's thread before each timed phase (`failed`: this process's previous phase
  // failed); returns true when any rank of the job failed, so that all stop together. One
  // process: returns `failed`. An `mpirun` job: MpiJob::AnyRank, which is also the barrier
  // that starts the ranks together.
  using Agree = std::function<bool(bool failed)>;

  // The stores of ranks [first, first + count) in plan.path, which is created when missing.
  // Throws BadInput naming the directory when it cannot be made or written.
  CheckpointBench(const CheckpointBenchPlan& plan, uint32_t first, uint32_t count);
  // Removes the checkpoints written, and the directory when this made it and it is empty.
  ~CheckpointBench();
  CheckpointBench(const CheckpointBench&) = delete;
  CheckpointBench& operator=(const CheckpointBench&) = delete;

  // The directory's free bytes (statvfs; nullopt when unknown), and the bytes this process's
  // ranks occupy there (one checkpoint each, header and padding included: a run removes the
  // previous run's files before it writes).
  std::optional<uint64_t> FreeBytes() const;
  uint64_t DiskBytes() const;
  // Host memory this process's snapshot buffers take, with the read-back's buffers.
  uint64_t BufferBytes() const;
  // A checkpoint file of one of this process's ranks already in the directory (a run would
  // replace it); empty when there is none.
  std::string ExistingCheckpoint() const;

  // Allocates the snapshot buffers and fills them with each rank's content (untimed).
  // REQUIRES: called once, before Run.
  void Allocate();
  // Run `run` (1, 2, …): write, evict, read back. Throws CheckpointError (exit 1) when this
  // process's write or read failed, PeerFailed when another rank's did.
  std::vector<RankTimes> Run(uint32_t run, const Agree& agree);
  // The largest share of a checkpoint's pages still in the page cache after an eviction
  // (mincore): near 0 on a disk; near 1 on tmpfs, where the read-back comes from memory.
  double resident_after_evict() const { return resident_after_evict_; }
  // Removes the checkpoints written so far.
  void RemoveCheckpoints();
  // Removes the directory when this made it and it is empty. An `mpirun` job calls it after
  // every rank removed its checkpoints.
  void RemoveDirectoryIfMade();

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };
  // Constant after construction
  const CheckpointBenchPlan plan_;
  const uint32_t first_;
  const bool made_directory_;
  std::vector<std::unique_ptr<DirectoryCheckpointStore>> stores_;  // one per rank here
  // Written by Allocate, then by the ranks' threads (each its own)
  std::vector<std::unique_ptr<std::byte[], AlignedFree>> buffers_;
  uint32_t written_run_ = 0;  // the run whose files are in the directory; 0: none
  double resident_after_evict_ = 0;
};

}  // namespace stallscope

#endif  // STALLSCOPE_APP_BENCH_CHECKPOINT_H_
