#include "pipeline/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "pipeline/nvtx.h"
#include "pipeline/preprocess.h"
#include "base/align.h"

namespace stallscope {
namespace {


// A read's tag: slot << 32 | index in the batch, and for a cache tier's read, tier + 1 in
// bits 56..59 (0 = a storage read).
constexpr int kTierShift = 56;
uint64_t Tag(int slot, uint32_t i, int tier) {
  return (static_cast<uint64_t>(tier + 1) << kTierShift) | (static_cast<uint64_t>(slot) << 32) | i;
}
int TierOf(uint64_t tag) { return static_cast<int>((tag >> kTierShift) & 0xf) - 1; }
int SlotOf(uint64_t tag) { return static_cast<int>((tag >> 32) & 0xffffff); }

// A small id per thread that completes reads, for the trace's per-thread tracks.
int ThreadIndex() {
  static std::atomic<int> next{0};
  thread_local const int index = next.fetch_add(1);
  return index;
}

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

// Page-aligned (O_DIRECT needs 4096), pre-faulted so no page fault lands on the hot path.
std::unique_ptr<std::byte[], FreeDeleter> AllocateStaging(uint64_t bytes) {
  bytes = RoundUp(std::max<uint64_t>(bytes, 1), kBlockBytes);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kBlockBytes, bytes));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return std::unique_ptr<std::byte[], FreeDeleter>(p);
}

}  // namespace

// One batch's staging memory and in-flight state. The arrays are sized at construction.
struct Pipeline::Slot {
  int index = 0;
  uint64_t batch = 0;
  uint32_t count = 0;        // samples in this batch
  uint64_t fetch_range = 0;  // NVTX range from the first read to the last
  uint32_t delivered = 0;    // rows handed to the device: count less the skipped
  std::unique_ptr<std::byte[], FreeDeleter> raw;
  std::unique_ptr<std::byte[], FreeDeleter> staged;  // null when rows are the raw bytes
  std::vector<uint64_t> ids;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> labels;
  std::vector<uint8_t> attempts;
  std::vector<uint8_t> skipped;
  std::vector<uint64_t> access;       // each sample's position in the run's access sequence
  std::vector<ReadSpan> spans;        // with trace: each sample's read
  std::vector<ReadRequest> requests;  // this batch's storage reads
  std::vector<ReadRequest> tier_requests[kMaxCacheTiers];  // reads of asynchronous tiers
  std::atomic<uint32_t> reads_pending{0};
  std::atomic<uint64_t> storage_bytes{0};
  std::atomic<uint32_t> async_hits[kMaxCacheTiers] = {};
  std::atomic<uint64_t> async_bytes[kMaxCacheTiers] = {};
  uint32_t next_chunk = 0;  // guarded by mu_
  std::atomic<uint32_t> chunks_done{0};

  std::byte* raw_at(uint32_t i, uint64_t stride) const { return raw.get() + i * stride; }
};

Pipeline::Pipeline(const PipelineOptions& options, Storage& storage, Cache& cache, Device& device)
    : options_(options),
      storage_(storage),
      cache_(cache),
      device_(device),
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
    if (plan_.normalize) slot->staged = AllocateStaging(plan_.staged_stride * batch);
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
  // What the copy stage reads is offered to the device for pinning (DMA without a bounce).
  for (auto& slot : slots_) {
    device_.PinHost(CopySource(*slot),
                    RoundUp(std::max<uint64_t>(plan_.staged_stride * batch, 1), kBlockBytes));
  }
}

RunPlan Pipeline::PlanFor(const PipelineOptions& options, const Storage& storage) {
  return MakeRunPlan(options.loader, options.run,
                     {.samples = storage.num_samples(),
                      .max_sample_bytes = storage.max_sample_bytes(),
                      .can_verify = storage.can_verify()});
}

Pipeline::~Pipeline() {
  for (auto& slot : slots_) device_.UnpinHost(CopySource(*slot));
}

std::byte* Pipeline::CopySource(const Slot& slot) const {
  return plan_.normalize ? slot.staged.get() : slot.raw.get();
}

uint64_t Pipeline::staging_bytes() const {
  const uint64_t per_slot =
      plan_.raw_stride * options_.loader.batch_size + (plan_.normalize ? plan_.staged_stride * options_.loader.batch_size : 0);
  return per_slot * slots_.size();
}

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

  RunRecord rec;
  rec.device = device_.name();
  rec.batches_per_epoch = plan_.batches_per_epoch;
  rec.start = MonotonicSeconds();

  nvtx::Initialize();
  std::thread fetcher([this] { FetcherLoop(); });
  std::vector<std::thread> workers;
  if (plan_.preprocess_stage) {
    for (uint32_t w = 0; w < std::max<uint32_t>(options_.loader.workers, 1); ++w) {
      workers.emplace_back([this, w] { WorkerLoop(static_cast<int>(w)); });
    }
  }
  std::thread copier([this] { CopyLoop(); });
  std::thread retrier([this] { RetryLoop(); });

  // The device thread: this one.
  double previous_end = 0;
  try {
    for (uint64_t b = 0; b < plan_.total_batches; ++b) {
      {
        std::unique_lock lock(mu_);
        device_batch_ = b;
        fetch_cv_.notify_all();
        copy_cv_.notify_all();
        if (!copied_[b] && !stop_) {
          nvtx::ScopedRange stall("stallscope: GPU waits for data");
          device_cv_.wait(lock, [&] { return copied_[b] || stop_; });
        }
        if (stop_) break;
      }
      BatchRecord& r = records_[b];
      DeviceBatch db;
      db.step = b;
      db.samples = r.samples - r.skipped;  // as copied (skipped rows were closed up)
      db.row_bytes = plan_.staged_stride;
      db.rows_are_floats = plan_.normalize;
      const double earliest = b == 0 ? r.copy_done : std::max(previous_end, r.copy_done);
      const StepTiming t = device_.Step(static_cast<int>(b % 2), db, earliest);
      r.step_start = t.start;
      r.step_end = t.end;
      r.step_busy = t.busy;
      r.queues = SampleQueues(b);
      if (options_.observer) {
        options_.observer->OnStep(r, b == 0 ? 0.0 : previous_end, b >= options_.run.warmup_steps,
                                  r.queues);
      }
      previous_end = t.end;
      if (b == 0) live_.first_step_start = t.start;
      live_.last_step_end = t.end;
      live_.busy_seconds = live_.busy_seconds.load(std::memory_order_relaxed) + t.busy;
      live_.samples.fetch_add(r.samples - r.skipped, std::memory_order_relaxed);
      live_.steps.fetch_add(1, std::memory_order_relaxed);
      steps_done_ = b + 1;
      live_.epoch = r.epoch;
    }
  } catch (const std::exception& e) {
    Fail(std::string("device: ") + e.what());
  }
  {
    std::lock_guard lock(mu_);
    device_batch_ = plan_.total_batches;
    stop_ = true;
  }
  fetch_cv_.notify_all();
  worker_cv_.notify_all();
  copy_cv_.notify_all();
  fetcher.join();
  for (auto& w : workers) w.join();
  copier.join();
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
  retrier.join();

  if (interrupted_ && !failed_) {
    // Keep the steps that completed; the rest never ran.
    rec.partial = true;
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
  return rec;
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

void Pipeline::FetcherLoop() {
  std::vector<uint64_t> order;
  uint64_t order_epoch = ~0ULL;
  for (uint64_t b = 0; b < plan_.total_batches; ++b) {
    const uint64_t epoch = b / plan_.batches_per_epoch;
    int slot_index;
    {
      std::unique_lock lock(mu_);
      fetch_cv_.wait(lock, [&] {
        return stop_ ||
               (b <= device_batch_ + options_.loader.prefetch && !free_slots_.empty() &&
                (epoch == order_epoch || !storage_.needs_epoch_barrier() || fetches_done_ == b));
      });
      if (stop_) return;
      slot_index = free_slots_.back();
      free_slots_.pop_back();
      slot_of_batch_[b] = slot_index;
    }
    if (epoch != order_epoch) {
      SnapshotEvictions();
      storage_.BeginEpoch(static_cast<int>(epoch));
      sampler_.Order(epoch, order);
      order_epoch = epoch;
    }
    StartBatch(b, *slots_[slot_index], order);
  }
}

void Pipeline::SnapshotEvictions() {
  std::vector<uint64_t> e;
  for (const TierStats& t : cache_.Stats()) e.push_back(t.evictions);
  tier_evictions_.push_back(std::move(e));
}

void Pipeline::StartBatch(uint64_t b, Slot& slot, const std::vector<uint64_t>& order) {
  const uint64_t epoch = b / plan_.batches_per_epoch;
  const uint64_t first = (b % plan_.batches_per_epoch) * options_.loader.batch_size;
  const uint32_t count =
      static_cast<uint32_t>(std::min<uint64_t>(options_.loader.batch_size, order.size() - first));
  BatchRecord& r = records_[b];
  r.epoch = static_cast<uint32_t>(epoch);
  r.samples = count;
  r.fetch_start = MonotonicSeconds();

  slot.batch = b;
  slot.fetch_range = nvtx::StartRange("stallscope: fetch");
  slot.count = count;
  slot.next_chunk = 0;
  slot.chunks_done = 0;
  slot.storage_bytes = 0;
  slot.requests.clear();
  const size_t tiers = cache_.num_tiers();
  for (size_t t = 0; t < tiers; ++t) {
    slot.tier_requests[t].clear();
    slot.async_hits[t] = 0;
    slot.async_bytes[t] = 0;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t id = order[first + i];
    slot.ids[i] = id;
    slot.bytes[i] = storage_.SampleBytes(id);
    slot.labels[i] = storage_.Label(id);
    slot.attempts[i] = 0;
    slot.skipped[i] = 0;
    slot.access[i] = epoch * order.size() + first + i;
    std::byte* dst = slot.raw_at(i, plan_.raw_stride);
    const double lookup_start = options_.trace ? MonotonicSeconds() : 0;
    const Cache::Found found = cache_.Lookup(id, dst, slot.access[i]);
    if (options_.trace) {
      slot.spans[i] = {lookup_start, 0, id, found.tier, ThreadIndex()};
      if (found.tier >= 0 && !found.async) slot.spans[i].end = MonotonicSeconds();
    }
    const size_t reached = found.tier >= 0 ? found.tier + 1 : tiers;
    for (size_t t = 0; t < reached; ++t) r.cache_lookups[t]++;
    if (found.tier < 0) {
      slot.requests.push_back({id, dst, Tag(slot.index, i, -1)});
    } else if (found.async) {
      slot.tier_requests[found.tier].push_back({id, dst, Tag(slot.index, i, found.tier)});
    } else {
      r.cache_hits[found.tier]++;
      r.cache_bytes[found.tier] += slot.bytes[i];
    }
  }
  size_t reads = slot.requests.size();
  for (size_t t = 0; t < tiers; ++t) reads += slot.tier_requests[t].size();
  r.storage_reads = static_cast<uint32_t>(slot.requests.size());
  if (reads == 0) {
    FetchDone(slot);
    return;
  }
  slot.reads_pending = static_cast<uint32_t>(reads);
  reads_outstanding_.fetch_add(reads);
  for (size_t t = 0; t < tiers; ++t) {
    if (!slot.tier_requests[t].empty()) {
      cache_.ReadAsync(static_cast<int>(t), slot.tier_requests[t], this);
    }
  }
  if (!slot.requests.empty()) storage_.Submit(slot.requests, this);
}

void Pipeline::OnReadComplete(const ReadRequest& request, int64_t result) {
  Slot& slot = *slots_[SlotOf(request.tag)];
  const uint32_t i = static_cast<uint32_t>(request.tag & 0xffffffffu);
  const int tier = TierOf(request.tag);
  const uint64_t bytes = slot.bytes[i];
  const bool ok = result >= 0 && static_cast<uint64_t>(result) == bytes;
  if (options_.trace && ok) {
    slot.spans[i].end = MonotonicSeconds();
    slot.spans[i].tier = tier;
    slot.spans[i].thread = ThreadIndex();
  }
  if (tier >= 0) {
    if (ok) {
      slot.async_hits[tier].fetch_add(1, std::memory_order_relaxed);
      slot.async_bytes[tier].fetch_add(bytes, std::memory_order_relaxed);
      cache_.Admit(request.sample, {request.dst, bytes}, slot.access[i], tier);  // promote
    } else {
      // A bad or vanished cache entry: the tier dropped it; read the sample from storage.
      ReadRequest again = request;
      again.tag = Tag(slot.index, i, -1);
      if (options_.trace) slot.spans[i] = {MonotonicSeconds(), 0, request.sample, -1, 0};
      records_[slot.batch].storage_reads++;
      storage_.Submit({&again, 1}, this);
      return;
    }
  } else if (ok) {
    cache_.Admit(request.sample, {request.dst, bytes}, slot.access[i], cache_.num_tiers());
    slot.storage_bytes.fetch_add(bytes, std::memory_order_relaxed);
  } else if (result == -ECANCELED && interrupted_.load(std::memory_order_relaxed)) {
    // Cancelled by RequestStop(): its batch will not be stepped; neither retried nor counted.
  } else {
    read_errors_.fetch_add(1, std::memory_order_relaxed);
    const std::string why = result == -ETIMEDOUT ? std::string("timed out")
                            : result < 0         ? std::strerror(static_cast<int>(-result))
                                                 : fmt::format("{} of {} bytes", result, bytes);
    if (options_.loader.on_error != OnError::kFail && slot.attempts[i] < plan_.retries &&
        !failed_.load(std::memory_order_relaxed)) {
      slot.attempts[i]++;
      ScheduleRetry(request, slot.attempts[i]);  // still outstanding until it completes
      return;
    }
    if (options_.loader.on_error == OnError::kSkip) {
      slot.skipped[i] = 1;
      std::lock_guard lock(mu_);
      skipped_.push_back(request.sample);
    } else {
      Fail(fmt::format("reading {} failed after {} attempt(s): {}",
                       storage_.SampleName(request.sample), slot.attempts[i] + 1, why));
    }
  }
  if (slot.reads_pending.fetch_sub(1, std::memory_order_acq_rel) == 1) FetchDone(slot);
  reads_outstanding_.fetch_sub(1, std::memory_order_release);
}

void Pipeline::FetchDone(Slot& slot) {
  nvtx::EndRange(slot.fetch_range);
  BatchRecord& r = records_[slot.batch];
  r.fetch_done = MonotonicSeconds();
  r.storage_bytes = slot.storage_bytes.load(std::memory_order_relaxed);
  for (size_t t = 0; t < cache_.num_tiers(); ++t) {
    r.cache_hits[t] += slot.async_hits[t].load(std::memory_order_relaxed);
    r.cache_bytes[t] += slot.async_bytes[t].load(std::memory_order_relaxed);
  }
  for (uint32_t i = 0; i < slot.count; ++i) r.skipped += slot.skipped[i];
  if (options_.trace) {
    std::copy(slot.spans.begin(), slot.spans.begin() + slot.count,
              read_spans_.begin() + slot.batch * options_.loader.batch_size);
  }
  if (!plan_.preprocess_stage) {
    r.preprocess_done = r.fetch_done;
    MarkReady(slot);
    return;
  }
  {
    std::lock_guard lock(mu_);
    fetches_done_++;
    fetched_.push_back(slot.index);
  }
  fetch_cv_.notify_all();
  worker_cv_.notify_one();
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
        std::memmove(rows + j * plan_.staged_stride, rows + i * plan_.staged_stride, plan_.staged_stride);
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
      if (stop_ && failed_) break;
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
    for (uint32_t i = begin; i < end; ++i) {
      if (slot->skipped[i]) continue;
      const std::byte* raw = slot->raw_at(i, plan_.raw_stride);
      if (verify) {
        if (storage_.Verify(slot->ids[i], {raw, slot->bytes[i]})) {
          ++verified;
        } else {
          ++bad;
        }
      }
      float* staged =
          plan_.normalize ? reinterpret_cast<float*>(slot->staged.get() + i * plan_.staged_stride) : nullptr;
      if (plan_.jpeg) {
        std::string why;
        if (!DecodeJpegSample(*jpeg, image, raw, slot->bytes[i],
                              static_cast<int>(options_.loader.preprocess.image_size), staged, &why)) {
          ++bad;  // undecodable content: counted with the integrity errors
        }
      } else if (plan_.normalize) {
        NormalizeBytes(raw, slot->bytes[i], staged);
      }
      if (burner) sink ^= burner->Burn(options_.loader.preprocess.cost, slot->ids[i]);
    }
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

void Pipeline::ScheduleRetry(const ReadRequest& request, uint32_t attempt) {
  // Exponential backoff: retry_backoff, twice that, … at most 1 s.
  const double delay =
      std::min(1.0, options_.loader.retry_backoff * std::ldexp(1.0, static_cast<int>(attempt) - 1));
  {
    std::lock_guard lock(retry_mu_);
    retries_.push_back({MonotonicSeconds() + delay, request});
    std::push_heap(retries_.begin(), retries_.end(), RetryLater{});
  }
  retry_cv_.notify_all();
}

void Pipeline::RetryLoop() {
  std::unique_lock lock(retry_mu_);
  while (true) {
    if (retries_.empty()) {
      if (retry_stop_) return;
      retry_cv_.wait(lock);
      continue;
    }
    const double now = MonotonicSeconds();
    const bool hurry = stopping_.load(std::memory_order_relaxed);  // stopping: no waiting
    if (retries_.front().due > now && !hurry) {
      retry_cv_.wait_for(lock, std::chrono::duration<double>(retries_.front().due - now));
      continue;
    }
    std::pop_heap(retries_.begin(), retries_.end(), RetryLater{});
    const ReadRequest request = retries_.back().request;
    retries_.pop_back();
    lock.unlock();
    storage_.Submit({&request, 1}, this);
    lock.lock();
  }
}

DeviceBatch Pipeline::MakeDeviceBatch(const Slot& slot) const {
  DeviceBatch db;
  db.step = slot.batch;
  db.samples = slot.delivered;
  db.data = CopySource(slot);
  db.row_bytes = plan_.staged_stride;
  db.rows_are_floats = plan_.normalize;
  db.labels = slot.labels.data();
  return db;
}

void Pipeline::CopyLoop() {
  for (uint64_t b = 0; b < plan_.total_batches; ++b) {
    Slot* slot;
    {
      std::unique_lock lock(mu_);
      // Buffer b % 2 is free once the device has moved past step b - 2.
      copy_cv_.wait(lock, [&] { return stop_ || (ready_[b] && b <= device_batch_ + 1); });
      if (stop_) return;
      slot = slots_[slot_of_batch_[b]].get();
    }
    BatchRecord& r = records_[b];
    r.copy_start = MonotonicSeconds();
    try {
      r.copy_seconds = device_.CopyIn(static_cast<int>(b % 2), MakeDeviceBatch(*slot));
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
