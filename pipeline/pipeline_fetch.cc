// Pipeline, the fetch side: the fetcher thread (cache lookups, storage reads), read
// completions, retries with backoff, and the hand-over of a fetched batch to the workers.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "pipeline/nvtx.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_internal.h"

namespace stallscope {

using namespace pipeline_internal;

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
  const uint64_t shard_samples = options_.shard.samples(order.size());
  const uint32_t count =
      static_cast<uint32_t>(std::min<uint64_t>(options_.loader.batch_size, shard_samples - first));
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
    const uint64_t pos = options_.shard.position(first + i);
    const uint64_t id = order[pos];
    slot.ids[i] = id;
    slot.bytes[i] = storage_.SampleBytes(id);
    slot.labels[i] = storage_.Label(id);
    slot.attempts[i] = 0;
    slot.skipped[i] = 0;
    slot.access[i] = epoch * order.size() + pos;
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

}  // namespace stallscope
