// RankLoop, the checkpoints (checkpoint.*): after the steps CheckpointSchedule names, every
// rank writes its share (CheckpointOptions::rank_bytes) into a storage model while the device
// waits, as the real Pipeline's Checkpointer does:
//   sync:  the device waits for a snapshot (a GPU's device-to-host copy at node.h2d; none on
//          the emulated device, whose state is host memory) and for every rank's writes;
//   async: the device waits for the snapshot only (node.snapshot, or node.h2d on a GPU); the
//          writes run beside the next steps; a checkpoint that comes while they still run
//          waits for them before its snapshot.
// Writes go to the scenario's storage model (storage.write.shared: one bandwidth and queue
// with the loader's reads, storage.write's latency), to a model of their own
// (storage.write.shared false), or for checkpoint.path to a model of checkpoint.bandwidth.
// Each rank's checkpoint is written in checkpoint.block requests, checkpoint.io_depth in
// flight, merged into at most kMaxRequests per rank so a 1,024-rank checkpoint of terabytes
// stays a few million events (per-write latency then counts kMaxRequests times per rank).
#include <algorithm>

#include "sim/rank_loop.h"

namespace stallscope {
namespace {

constexpr uint64_t kMaxRequests = 256;

}  // namespace

void RankLoop::SetupCheckpoints() {
  const CheckpointOptions& c = s_.checkpoint;
  if (!c.enabled()) return;
  ckpt_.enabled = true;
  ckpt_.async = c.mode == CheckpointMode::kAsync;
  const uint32_t R = static_cast<uint32_t>(ranks_.size());
  ckpt_.rank_bytes = c.rank_bytes(R);
  const uint64_t blocks = (ckpt_.rank_bytes + c.block - 1) / c.block;
  ckpt_.block = c.block * ((blocks + kMaxRequests - 1) / kMaxRequests);
  ckpt_.blocks = (ckpt_.rank_bytes + ckpt_.block - 1) / ckpt_.block;
  ckpt_.last = ckpt_.rank_bytes - (ckpt_.blocks - 1) * ckpt_.block;
  ckpt_.depth = c.io_depth;
  const bool emulated = s_.gpu.device != DeviceKind::kCuda;
  const double rate = emulated ? node_.snapshot : node_.h2d;
  // A sync checkpoint on the emulated device is written from its state: no snapshot.
  ckpt_.snapshot = ckpt_.async || !emulated ? static_cast<double>(ckpt_.rank_bytes) / rate : 0;
  const bool on_storage = c.path.empty() && s_.storage.kind == StorageKind::kSimulated;
  if (!on_storage || !s_.storage.model.write.shared) {
    SimulatedStorageOptions w;
    if (on_storage) {
      w = SeparateWriteModel(s_.storage.model);
    } else {
      w.bandwidth_bytes_per_second = c.bandwidth;
      w.max_inflight = std::max<uint32_t>(c.io_depth, 1) * R;
    }
    ckpt_.model = static_cast<int>(models_.size());
    models_.push_back({std::make_unique<StorageModel>(w, s_.seed ^ 0x636b7074ULL,
                                                      std::max(max_bytes_, ckpt_.block), 0.0),
                       kNever, -1});
  }
  ckpt_.left.assign(R, 0);
  ckpt_.inflight.assign(R, 0);
  ckpt_.rank_done.assign(R, 0);
  ckpt_.rank_released.assign(R, 0);
  ckpt_.schedule = std::make_unique<CheckpointSchedule>(c);
}

void RankLoop::MaybeCheckpoint(uint64_t b, double t) {
  if (!ckpt_.enabled) return;
  if (b == 0) ckpt_.schedule->Start(records_[0].step_start);
  if (!ckpt_.schedule->Due(b, t)) return;
  CheckpointSpan span;
  span.step = b;
  span.bytes = ckpt_.rank_bytes;
  span.start = t;
  ckpt_.blocking = true;
  ckpt_.next_step = b + 1;
  if (ckpt_.async && ckpt_.pending_ranks > 0) {
    span.waited_for_previous = true;  // the snapshot waits for the writes in flight
    ckpt_.snapshot_waits = true;
    ckpt_.spans.push_back(span);
    return;
  }
  ckpt_.spans.push_back(span);
  Push(t + ckpt_.snapshot, kSnapshotDone, 0, 0);
}

void RankLoop::OnSnapshotDone(double t) {
  ckpt_.writing = ckpt_.spans.size() - 1;
  CheckpointSpan& span = ckpt_.spans.back();
  span.write_start = t;
  ckpt_.pending_ranks = static_cast<uint32_t>(ranks_.size());
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    ckpt_.left[r] = ckpt_.blocks;
    FeedWrites(r, t);
  }
  Arm(ckpt_.model);
  if (ckpt_.async) {
    span.resumed = t;
    // A snapshot that waited for the writes in flight: each rank's own could start when its
    // own writes ended.
    for (uint32_t r = 0; r < ranks_.size(); ++r) {
      ckpt_.rank_released[r] =
          span.waited_for_previous ? std::min(t, ckpt_.rank_done[r] + ckpt_.snapshot) : t;
    }
    ReleaseDevice(t);
  }
}

void RankLoop::FeedWrites(uint32_t r, double t) {
  StorageModel& model = *models_[ckpt_.model].model;
  while (ckpt_.left[r] > 0 && ckpt_.inflight[r] < ckpt_.depth) {
    const uint64_t bytes = ckpt_.left[r] == 1 ? ckpt_.last : ckpt_.block;
    model.Submit(kCheckpointToken | r, bytes, t, true);
    --ckpt_.left[r];
    ++ckpt_.inflight[r];
  }
}

void RankLoop::OnCheckpointWrite(uint32_t r, double t) {
  --ckpt_.inflight[r];
  FeedWrites(r, t);
  Arm(ckpt_.model);
  if (ckpt_.left[r] > 0 || ckpt_.inflight[r] > 0) return;
  ckpt_.rank_done[r] = t;
  if (--ckpt_.pending_ranks > 0) return;
  CheckpointSpan& span = ckpt_.spans[ckpt_.writing];
  span.write_end = t;
  if (!ckpt_.async) {
    span.resumed = t;
    ckpt_.rank_released = ckpt_.rank_done;
    ReleaseDevice(t);
  } else if (ckpt_.snapshot_waits) {
    ckpt_.snapshot_waits = false;
    Push(t + ckpt_.snapshot, kSnapshotDone, 0, 0);
  }
}

void RankLoop::ReleaseDevice(double t) {
  ckpt_.blocking = false;
  ckpt_.released_step = ckpt_.next_step;
  if (ckpt_.next_step < total_) records_[ckpt_.next_step].checkpoint_done = t;
  TryStep(t);
}

}  // namespace stallscope
