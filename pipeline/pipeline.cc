#include "pipeline/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "base/align.h"
#include "base/start_thread.h"
#include "pipeline/checkpointer.h"
#include "pipeline/nvtx.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/preprocess.h"

namespace stallscope {
using namespace pipeline_internal;

Pipeline::Pipeline(const PipelineOptions& options, Storage& storage, Cache& cache, Device& device)
    : options_(options),
      storage_(storage),
      cache_(cache),
      device_(device),
      buffers_(std::max(device.input_buffers(), 2)),
      sampler_(storage.num_samples(), options.seed),
      plan_(PlanFor(options, storage)) {
  if (cache.num_tiers() > kMaxCacheTiers) {
    throw BadInput(fmt::format("cache.tiers: at most {} tiers", kMaxCacheTiers));
  }
  const uint32_t batch = plan_.batch_size;
  const uint32_t num_slots = plan_.slots;
  for (uint32_t s = 0; s < num_slots; ++s) {
    auto slot = std::make_unique<Slot>();
    slot->index = static_cast<int>(s);
    slot->raw = AllocateStaging(plan_.raw_stride * batch);
    if (plan_.staged) slot->staged = AllocateStaging(plan_.staged_stride * batch);
    slot->ids.resize(batch);
    slot->bytes.resize(batch);
    slot->labels.resize(batch);
    slot->attempts.resize(batch);
    slot->skipped.resize(batch);
    slot->access.resize(batch);
    if (options.trace) slot->spans.resize(batch);
    slot->requests.reserve(batch);
    for (auto& r : slot->tier_requests) r.reserve(batch);
    slots_.push_back(std::move(slot));
  }
  device_.Prepare(plan_.staged_stride * batch, batch);
  if (options.checkpoint_store) {
    checkpointer_ = std::make_unique<Checkpointer>(
        options.checkpoint, options.checkpoint_bytes, *options.checkpoint_store, device_,
        options.loader, [this](const std::string& message) { Fail(message); });
  }
  // What the copy stage reads is offered to the device for pinning (DMA without a bounce).
  for (auto& slot : slots_) {
    device_.PinHost(CopySource(*slot),
                    RoundUp(std::max<uint64_t>(plan_.staged_stride * batch, 1), kBlockBytes));
  }
}

RunPlan Pipeline::PlanFor(const PipelineOptions& options, const Storage& storage) {
  return MakeRunPlan(options.loader, options.run,
                     {.samples = options.shard.samples(storage.num_samples()),
                      .max_sample_bytes = storage.max_sample_bytes(),
                      .can_verify = storage.can_verify()});
}

Pipeline::~Pipeline() {
  for (auto& slot : slots_) device_.UnpinHost(CopySource(*slot));
}

std::byte* Pipeline::CopySource(const Slot& slot) const {
  return plan_.staged ? slot.staged.get() : slot.raw.get();
}

uint64_t Pipeline::staging_bytes() const { return plan_.staging_bytes(); }

void Pipeline::Fail(const std::string& message) {
  {
    std::lock_guard lock(mu_);
    if (error_.empty()) error_ = message;
  }
  failed_ = true;
  StopAll();
}

void Pipeline::RequestStop() {
  interrupted_ = true;
  device_.Interrupt(true);
  if (checkpointer_) checkpointer_->Cancel();
  StopAll();
  // The batches still loading will not be stepped: a read that hangs must not hold the stop.
  storage_.CancelReads();
}

void Pipeline::StopAll() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  stopping_ = true;
  retry_cv_.notify_all();
  fetch_cv_.notify_all();
  worker_cv_.notify_all();
  copy_cv_.notify_all();
  device_cv_.notify_all();
}

RunRecord Pipeline::Run() {
  ResetForRun();
  RunRecord rec;
  rec.device = device_.name();
  rec.batches_per_epoch = plan_.batches_per_epoch;
  rec.start = MonotonicSeconds();

  nvtx::Initialize();
  if (checkpointer_ && options_.checkpoint.restore) {
    try {
      rec.restore = checkpointer_->Restore(restore_step_);
    } catch (const CheckpointError& e) {
      rec.failed = true;
      rec.error = e.what();
      rec.end = MonotonicSeconds();
      return rec;
    }
  }
  // The loader's threads. One that cannot start (the host's thread limit) fails the run;
  // those started are stopped and joined as after any failure. The fetcher, which issues
  // the reads, starts last: a run that fails here has no read in flight.
  std::thread fetcher, copier, retrier;
  std::vector<std::thread> workers;
  try {
    retrier = StartThread("the loader's retry thread", [this] { RetryLoop(); });
    copier = StartThread("the loader's copy thread", [this] { CopyLoop(); });
    if (plan_.preprocess_stage) {
      const uint32_t n = std::max<uint32_t>(options_.loader.workers, 1);
      for (uint32_t w = 0; w < n; ++w) {
        workers.push_back(StartThread(fmt::format("preprocessing worker {} of {}", w + 1, n),
                                      [this, w] { WorkerLoop(static_cast<int>(w)); }));
      }
    }
    fetcher = StartThread("the loader's fetch thread", [this] { FetcherLoop(); });
  } catch (const RunFailed& e) {
    Fail(e.what());
  }
  std::thread timer;  // run.time_limit: stops the run as Ctrl-C would
  if (options_.run.time_limit > 0 && !failed_) {
    try {
      timer = StartThread("the run.time_limit timer", [this] {
        std::unique_lock lock(limit_mu_);
        const auto limit = std::chrono::duration<double>(options_.run.time_limit);
        if (!limit_cv_.wait_for(lock, limit, [this] { return run_over_; })) {
          time_limit_reached_ = true;
          RequestStop();
        }
      });
    } catch (const RunFailed& e) {
      Fail(e.what());
    }
  }
  DeviceLoop();
  {
    std::lock_guard lock(limit_mu_);
    run_over_ = true;
  }
  limit_cv_.notify_all();
  if (timer.joinable()) timer.join();
  {
    std::lock_guard lock(mu_);
    device_batch_ = plan_.total_batches;
    stop_ = true;
  }
  fetch_cv_.notify_all();
  worker_cv_.notify_all();
  copy_cv_.notify_all();
  if (fetcher.joinable()) fetcher.join();
  for (auto& w : workers) w.join();
  if (copier.joinable()) copier.join();
  // Reads still in flight after a failure write into our slots: wait for them (retries
  // waiting out their backoff are sent at once now).
  stopping_ = true;
  retry_cv_.notify_all();
  while (reads_outstanding_.load() > 0) std::this_thread::yield();
  {
    std::lock_guard lock(retry_mu_);
    retry_stop_ = true;
  }
  retry_cv_.notify_all();
  if (retrier.joinable()) retrier.join();

  FinishRecord(rec);
  return rec;
}

// Every per-run array sized for the plan, every slot free.
void Pipeline::ResetForRun() {
  device_.Interrupt(false);
  run_over_ = false;
  time_limit_reached_ = false;
  records_.assign(plan_.total_batches, BatchRecord{});
  slot_of_batch_.assign(plan_.total_batches, -1);
  ready_.assign(plan_.total_batches, 0);
  copied_.assign(plan_.total_batches, 0);
  free_slots_.clear();
  for (int s = static_cast<int>(slots_.size()) - 1; s >= 0; --s) free_slots_.push_back(s);
  worker_busy_.assign(std::max<uint32_t>(options_.loader.workers, 1), 0.0);
  if (options_.trace) {
    read_spans_.assign(plan_.total_batches * options_.loader.batch_size, ReadSpan{});
    chunk_spans_.assign(worker_busy_.size(), {});
    for (auto& c : chunk_spans_)
      c.reserve(plan_.total_batches * plan_.chunks_per_batch / worker_busy_.size() + 16);
  }
  if (options_.loader.preprocess.cost > 0) CpuBurner::Get();  // calibrate before the clock starts
}

// The device thread (the caller of Run): each batch, once on the device, is stepped. On a
// device that queues steps (a GPU's stream), step b+1 is launched before step b is waited for
// whenever batch b+1 is on the device already, as a training loop keeps its stream fed; not
// in multi-rank runs (every step waits at the ranks' barrier) nor with checkpoints (a
// checkpoint comes between two steps).
void Pipeline::DeviceLoop() {
  double previous_end = 0;
  const bool may_queue = device_.queues_steps() && !options_.step_sync && !checkpointer_;
  std::optional<uint64_t> launched;  // a step launched and not yet waited for
  try {
    for (uint64_t b = 0; b < plan_.total_batches; ++b) {
      bool stopping = false;
      {
        std::unique_lock lock(mu_);
        device_batch_ = b;
        fetch_cv_.notify_all();
        copy_cv_.notify_all();
        if (!copied_[b] && !stop_) {
          nvtx::ScopedRange stall("stallscope: GPU waits for data");
          device_cv_.wait(lock, [&] { return copied_[b] || stop_; });
        }
        stopping = stop_;
      }
      BatchRecord& r = records_[b];
      double earliest = b == 0 ? r.copy_done : std::max(previous_end, r.copy_done);
      earliest = std::max(earliest, r.checkpoint_done);
      if (options_.step_sync) {
        // Ready here (batch on the device); the step starts when the slowest rank is ready.
        uint32_t flags = stopping ? StepSync::kStopping : 0;
        if (checkpointer_ && checkpointer_->VotesBefore(MonotonicSeconds())) {
          flags |= StepSync::kCheckpoint;
        }
        const uint32_t all = options_.step_sync->Arrive(b, flags);
        if (checkpointer_) checkpointer_->Agreed(b, (all & StepSync::kCheckpoint) != 0);
        const bool any_stopping = (all & StepSync::kStopping) != 0;
        r.sync_done = MonotonicSeconds();
        earliest = std::max(earliest, r.sync_done);
        if (any_stopping && !stopping) RequestStop();  // another rank stops: so does this one
        stopping = any_stopping;
      }
      if (stopping) break;
      DeviceBatch db;
      db.step = b;
      db.samples = r.samples - r.skipped;  // as copied (skipped rows were closed up)
      db.row_bytes = plan_.staged_stride;
      db.rows_are_floats = plan_.normalize;
      db.image_side = plan_.image_side;
      device_.Launch(static_cast<int>(b % buffers_), db, earliest);
      const std::optional<uint64_t> before = launched;
      launched = b;
      if (before && !StepDone(*before, device_.Wait(), previous_end)) break;
      bool next_ready = false;
      if (may_queue && b + 1 < plan_.total_batches) {
        std::lock_guard lock(mu_);
        next_ready = copied_[b + 1] && !stop_;
      }
      if (!next_ready) {
        launched.reset();
        if (!StepDone(b, device_.Wait(), previous_end)) break;
      }
    }
    if (launched) StepDone(*launched, device_.Wait(), previous_end);  // the last, or one left
  } catch (const std::exception& e) {
    Fail(std::string("device: ") + e.what());
  }
}

// Step b is complete (timing t): its record, the observer, the checkpoint after it. False
// when the run stops here.
bool Pipeline::StepDone(uint64_t b, const StepTiming& t, double& previous_end) {
  BatchRecord& r = records_[b];
  if (interrupted_ && MonotonicSeconds() < t.end) {  // cut short by the stop
    // The peers step on to the next barrier unless told: tell them there, then leave.
    if (options_.step_sync && b + 1 < plan_.total_batches) {
      options_.step_sync->Arrive(b + 1, StepSync::kStopping);
    }
    return false;
  }
  r.step_start = t.start;
  r.step_end = t.end;
  r.step_busy = t.busy;
  r.queues = SampleQueues(b);
  if (options_.observer) {
    options_.observer->OnStep(r, b == 0 ? 0.0 : previous_end, b >= options_.run.warmup_steps,
                              r.queues);
  }
  previous_end = t.end;
  if (checkpointer_) {
    {
      // The loader goes on with the next batches while the checkpoint holds the device.
      std::lock_guard lock(mu_);
      device_batch_ = b + 1;
    }
    fetch_cv_.notify_all();
    copy_cv_.notify_all();
    if (b == 0) checkpointer_->Start(t.start);
    const double resumed = checkpointer_->AfterStep(b, t.end);
    if (resumed > 0 && b + 1 < plan_.total_batches) records_[b + 1].checkpoint_done = resumed;
  }
  if (b == 0) live_.first_step_start = t.start;
  live_.last_step_end = t.end;
  live_.busy_seconds = live_.busy_seconds.load(std::memory_order_relaxed) + t.busy;
  live_.samples.fetch_add(r.samples - r.skipped, std::memory_order_relaxed);
  live_.steps.fetch_add(1, std::memory_order_relaxed);
  steps_done_ = b + 1;
  live_.epoch = r.epoch;
  return true;
}

// The run's record from what every stage wrote, once every thread has stopped.
void Pipeline::FinishRecord(RunRecord& rec) {
  if (interrupted_ && !failed_) {
    // Keep the steps that completed; the rest never ran.
    rec.partial = true;
    rec.time_limit_reached = time_limit_reached_;
    records_.resize(std::min<uint64_t>(steps_done_, records_.size()));
  }
  if (!failed_) {
    // The device may know each step's busy time better than the host (CUPTI).
    std::vector<StepTiming> steps(records_.size());
    for (uint64_t b = 0; b < records_.size(); ++b) {
      steps[b] = {records_[b].step_start, records_[b].step_end, records_[b].step_busy};
    }
    try {
      rec.device_report = device_.Finish(steps);
      for (uint64_t b = 0; b < records_.size(); ++b) records_[b].step_busy = steps[b].busy;
    } catch (const std::exception& e) {
      Fail(std::string("device: ") + e.what());
    }
  }
  if (checkpointer_) {
    rec.checkpoints = checkpointer_->Finish();
    rec.checkpoint_error = checkpointer_->first_error();
  }
  rec.end = MonotonicSeconds();
  rec.batches = std::move(records_);
  rec.preprocess_stage = plan_.preprocess_stage;
  rec.batch_size = options_.loader.batch_size;
  rec.warmup_steps = options_.run.warmup_steps;
  rec.reads = std::move(read_spans_);
  for (auto& c : chunk_spans_) rec.chunks.insert(rec.chunks.end(), c.begin(), c.end());
  for (double w : worker_busy_) rec.worker_busy_seconds += w;
  rec.samples_verified = verified_;
  rec.integrity_errors = integrity_errors_;
  rec.read_errors = read_errors_;
  rec.skipped_samples = skipped_;
  std::sort(rec.skipped_samples.begin(), rec.skipped_samples.end());
  cache_.Flush();  // pending disk writes: the next run (or a warm restart) sees them
  SnapshotEvictions();
  rec.tier_evictions = std::move(tier_evictions_);
  rec.cache = cache_.Stats();
  rec.failed = failed_;
  rec.error = error_;
}

QueueDepths Pipeline::SampleQueues(uint64_t step) {
  QueueDepths q;
  std::lock_guard lock(mu_);
  q.preprocessing = static_cast<uint32_t>(fetched_.size());
  for (uint64_t k = step + 1; k < plan_.total_batches && slot_of_batch_[k] >= 0; ++k) {
    q.ready += ready_[k] && !copied_[k];
  }
  // Slots in use hold batches being fetched, waiting for or in the workers, or ready.
  const uint32_t in_use = static_cast<uint32_t>(slots_.size() - free_slots_.size());
  q.fetching = in_use > q.preprocessing + q.ready ? in_use - q.preprocessing - q.ready : 0;
  return q;
}

void Pipeline::MarkReady(Slot& slot) {
  // Skipped samples leave holes: close them, so the device gets each delivered sample once
  // and never the stale bytes of an earlier batch (the batch shrinks by the skipped count).
  slot.delivered = slot.count;
  if (records_[slot.batch].skipped > 0) {
    std::byte* rows = CopySource(slot);
    uint32_t j = 0;
    for (uint32_t i = 0; i < slot.count; ++i) {
      if (slot.skipped[i]) continue;
      if (i != j) {
        std::memmove(rows + j * plan_.staged_stride, rows + i * plan_.staged_stride,
                     plan_.staged_stride);
        slot.labels[j] = slot.labels[i];
      }
      ++j;
    }
    slot.delivered = j;
  }
  {
    std::lock_guard lock(mu_);
    if (!plan_.preprocess_stage) fetches_done_++;
    ready_[slot.batch] = 1;
  }
  copy_cv_.notify_all();
  if (!plan_.preprocess_stage) fetch_cv_.notify_all();
}

void Pipeline::WorkerLoop(int worker) {
  const CpuBurner* burner = options_.loader.preprocess.cost > 0 ? &CpuBurner::Get() : nullptr;
  const bool verify = plan_.verify;
  uint64_t sink = 0;  // keeps the burned work observable
  double busy = 0;
  std::unique_ptr<JpegDecoder> jpeg;  // one per worker: TurboJPEG handles are per thread
  RgbImage image;
  if (plan_.jpeg) jpeg = std::make_unique<JpegDecoder>();
  while (true) {
    Slot* slot;
    uint32_t chunk;
    {
      std::unique_lock lock(mu_);
      worker_cv_.wait(lock, [&] { return stop_ || !fetched_.empty(); });
      if (stop_ && fetched_.empty()) break;
      if (stopping_) break;  // a failure or a stop request: what is fetched is abandoned
      slot = slots_[fetched_.front()].get();
      chunk = slot->next_chunk++;
      if (slot->next_chunk == plan_.chunks_per_batch) fetched_.pop_front();
      if (!fetched_.empty()) worker_cv_.notify_one();
    }
    nvtx::ScopedRange range("stallscope: preprocess");
    const double t0 = MonotonicSeconds();
    const uint32_t per = (slot->count + plan_.chunks_per_batch - 1) / plan_.chunks_per_batch;
    const uint32_t begin = std::min(slot->count, chunk * per);
    const uint32_t end = std::min(slot->count, begin + per);
    uint64_t verified = 0, bad = 0;
    for (uint32_t i = begin; i < end && !stopping_.load(std::memory_order_relaxed); ++i) {
      if (slot->skipped[i]) continue;
      const std::byte* raw = slot->raw_at(i, plan_.raw_stride);
      if (verify) {
        if (storage_.Verify(slot->ids[i], {raw, slot->bytes[i]})) {
          ++verified;
        } else {
          ++bad;
        }
      }
      std::byte* staged = plan_.staged ? slot->staged.get() + i * plan_.staged_stride : nullptr;
      if (plan_.jpeg) {
        const int side = static_cast<int>(options_.loader.preprocess.image_size);
        const bool decoded = plan_.image_side > 0
                                 ? DecodeJpegCrop(*jpeg, image, raw, slot->bytes[i], side,
                                                  reinterpret_cast<uint8_t*>(staged), nullptr)
                                 : DecodeJpegSample(*jpeg, image, raw, slot->bytes[i], side,
                                                    reinterpret_cast<float*>(staged), nullptr);
        if (!decoded) ++bad;  // undecodable content: counted with the integrity errors
      } else if (plan_.normalize) {
        NormalizeBytes(raw, slot->bytes[i], reinterpret_cast<float*>(staged));
      }
      if (burner) sink ^= burner->Burn(options_.loader.preprocess.cost, slot->ids[i], &stopping_);
    }
    if (stopping_) break;  // the chunk is incomplete: never marked ready
    if (verified) verified_.fetch_add(verified, std::memory_order_relaxed);
    if (bad) integrity_errors_.fetch_add(bad, std::memory_order_relaxed);
    const double t1 = MonotonicSeconds();
    busy += t1 - t0;
    if (options_.trace) chunk_spans_[worker].push_back({t0, t1, slot->batch, worker, end - begin});
    if (slot->chunks_done.fetch_add(1, std::memory_order_acq_rel) + 1 == plan_.chunks_per_batch) {
      records_[slot->batch].preprocess_done = t1;
      MarkReady(*slot);
    }
  }
  worker_busy_[worker] = busy;
  if (sink == 0x5eed) std::fprintf(stderr, " ");  // practically never; defeats dead-code removal
}

DeviceBatch Pipeline::MakeDeviceBatch(const Slot& slot) const {
  DeviceBatch db;
  db.step = slot.batch;
  db.samples = slot.delivered;
  db.data = CopySource(slot);
  db.row_bytes = plan_.staged_stride;
  db.rows_are_floats = plan_.normalize;
  db.image_side = plan_.image_side;
  db.labels = slot.labels.data();
  return db;
}

void Pipeline::CopyLoop() {
  for (uint64_t b = 0; b < plan_.total_batches; ++b) {
    Slot* slot;
    {
      std::unique_lock lock(mu_);
      // Batch b's buffer was last read by step b - buffers_, complete once the device thread
      // is at step b - 1 (with three buffers, even while step b - 2 is queued).
      copy_cv_.wait(lock, [&] { return stop_ || (ready_[b] && b <= device_batch_ + 1); });
      if (stop_) return;
      slot = slots_[slot_of_batch_[b]].get();
    }
    BatchRecord& r = records_[b];
    r.copy_start = MonotonicSeconds();
    try {
      r.copy_seconds = device_.CopyIn(static_cast<int>(b % buffers_), MakeDeviceBatch(*slot));
    } catch (const std::exception& e) {
      Fail(std::string("device copy: ") + e.what());
      return;
    }
    r.copy_done = MonotonicSeconds();
    {
      std::lock_guard lock(mu_);
      copied_[b] = 1;
      free_slots_.push_back(slot->index);
    }
    device_cv_.notify_all();
    fetch_cv_.notify_all();
  }
}

}  // namespace stallscope
