// Checkpointer: the checkpoints of one run (checkpoint.*), taken on the device thread.
//
// After each step the Pipeline asks AfterStep(); when a checkpoint is due (CheckpointSchedule)
//   sync:  the device's state is written (from the device's host state, or from a snapshot
//          when it lives on a GPU) and the device waits for the whole write;
//   async: the device waits only for the snapshot (Device::Snapshot into one host buffer);
//          the write goes on, on the writer thread, beside the next steps. When the previous
//          write is still going at the next checkpoint, the device waits for it first (its
//          buffer holds the previous snapshot) and the span says so.
// The device's wait is the `checkpoint` stall (BatchRecord::checkpoint_done of the next step).
//
// A write that fails (CheckpointError: ENOSPC, EIO, ...) follows loader.on_error: retry
// writes it again up to loader.retries times, then fails the run; skip records the error on
// the span and goes on; fail fails the run at once. The first failure's message is kept.
//
// Thread-safety: AfterStep(), Restore() and Finish() from the device thread; the writer thread
// is internal.
#ifndef STALLSCOPE_PIPELINE_CHECKPOINTER_H_
#define STALLSCOPE_PIPELINE_CHECKPOINTER_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/device.h"
#include "pipeline/options.h"
#include "pipeline/pipeline.h"
#include "storage/checkpoint_store.h"

namespace stallscope {

class Checkpointer {
 public:
  // `bytes`: this rank's checkpoint. `fail(message)` stops the run (called from any thread).
  // Prepares the device's state and allocates the snapshot buffer (async, or a device whose
  // state is not in host memory).
  Checkpointer(const CheckpointOptions& options, uint64_t bytes, CheckpointStore& store,
               Device& device, const LoaderOptions& loader,
               std::function<void(const std::string&)> fail);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Reads checkpoint `step` (by default this rank's newest) back into the device
  // (checkpoint.restore). Throws CheckpointError when there is none or it does not verify.
  RestoreRecord Restore(std::optional<uint64_t> step = std::nullopt);
  void Start(double first_step_start) { schedule_.Start(first_step_start); }
  // Multi-rank jobs with an `interval` schedule: this rank's vote at step `step`'s barrier
  // (its interval has passed by `now`), and what the ranks agreed there (any rank's vote): a
  // checkpoint after that step on every rank, whatever each rank's own clock says.
  bool VotesBefore(double now) const { return schedule_.IntervalPassed(now); }
  void Agreed(uint64_t step, bool checkpoint) {
    if (!schedule_.by_interval()) return;
    agreed_ = true;
    agreed_step_ = checkpoint ? step : UINT64_MAX;
  }
  // After step `step` ended at `end`: takes a checkpoint if one is due and returns when the
  // device may go on; 0 when none was due.
  double AfterStep(uint64_t step, double end);
  // Waits for an async write still going (end of the run) and returns every checkpoint.
  std::vector<CheckpointSpan> Finish();
  const std::string& first_error() const { return first_error_; }
  // A stop: a write or restore in progress ends soon (the store's Cancel()); one cut short
  // is neither retried nor a failure of the run. Any thread.
  void Cancel() {
    cancelled_ = true;
    store_.Cancel();
  }

 private:
  // Writes `data` as step `step` under the on_error rules; returns errno of a skipped
  // failure, 0 when written. Calls fail_ when the run must stop.
  int WriteWithRules(uint64_t step, std::span<const std::byte> data);
  void WriterLoop();

  const CheckpointOptions options_;
  const uint64_t bytes_;
  CheckpointStore& store_;
  Device& device_;
  const OnError on_error_;
  const uint32_t retries_;
  std::function<void(const std::string&)> fail_;
  CheckpointSchedule schedule_;
  bool agreed_ = false;                // the ranks decide at the barrier (Agreed)
  uint64_t agreed_step_ = UINT64_MAX;  // the step they agreed to checkpoint after
  struct FreeBytes {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte[], FreeBytes> buffer_;  // the snapshot; nullptr when not needed
  std::vector<CheckpointSpan> spans_;

  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  bool pending_ = false;     // the writer has a checkpoint to write, or is writing one
  size_t pending_span_ = 0;  // its index in spans_
  bool stop_ = false;
  std::string first_error_;
  std::atomic<bool> cancelled_{false};
  std::thread writer_;  // async only
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_CHECKPOINTER_H_
