// RankLoop, the fetch side: set-up, the event loop, the fetcher, cache lookups and reads.
#include "sim/rank_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/clock.h"
#include "base/errors.h"
#include "base/units.h"
#include "cache/disk_tier.h"
#include "storage/content.h"
#include "storage/directory_storage.h"
#include "storage/synthetic.h"

namespace stallscope {

SimulatedDataset LoadDataset(const Scenario& s) {
  SimulatedDataset d;
  if (s.storage.kind == StorageKind::kDirectory) {
    const DirectoryStorage directory(DirectoryStorageOptions{
        .dataset = s.dataset, .storage = s.storage, .io = s.loader.io, .quiet = true});
    d.sizes.resize(directory.num_samples());
    for (uint64_t i = 0; i < d.sizes.size(); ++i) d.sizes[i] = directory.SampleBytes(i);
    d.can_verify = directory.can_verify();  // a `stallscope gen` directory is verified
    d.fingerprint = directory.Fingerprint();
  } else {
    d.fingerprint = SyntheticFingerprint({.dataset = s.dataset, .seed = s.seed});
    d.sizes.resize(s.dataset.samples);
    for (uint64_t i = 0; i < d.sizes.size(); ++i) {
      d.sizes[i] = SampleSizeOf(s.seed, i, s.dataset.sample_size, s.dataset.sample_size_stdev);
    }
  }
  for (uint64_t v : d.sizes) d.max_sample_bytes = std::max(d.max_sample_bytes, v);
  return d;
}

namespace {

// The storage's model for `ranks` ranks: a directory's reads in flight are its readers',
// loader.io_depth per rank.
SimulatedStorageOptions StorageOf(const Scenario& s, uint64_t ranks) {
  SimulatedStorageOptions o = s.storage.model;
  if (s.storage.kind == StorageKind::kDirectory) {
    o.max_inflight = static_cast<uint32_t>(
        std::min<uint64_t>(uint64_t{s.loader.io.io_depth} * ranks, UINT32_MAX));
  }
  return o;
}

}  // namespace

RunPlan RankPlan(const Scenario& s, uint64_t samples_per_rank, uint64_t max_sample_bytes,
                 bool can_verify) {
  return MakeRunPlan(s.loader, s.run,
                     {.samples = samples_per_rank,
                      .max_sample_bytes = max_sample_bytes,
                      .can_verify = can_verify});
}

SimulationResult RankLoop::Go() {
  Setup();
  SetupCheckpoints();
  const double wall0 = MonotonicSeconds();
  // The start: every rank fetches as far as it may.
  for (uint32_t r = 0; r < ranks_.size(); ++r) TryFetch(r, 0.0);
  // The shared storage's model is consulted directly rather than through the queue: it has
  // the most events, and each would otherwise cost a queue push and pop of its own.
  StorageModel& storage = *models_[0].model;
  while (!failed_) {
    const double next_storage = storage.NextEventTime();
    if (!queue_.empty() && queue_.top().t < next_storage) {
      const Event e = queue_.top();
      queue_.pop();
      ++events_;
      Dispatch(e);
    } else if (next_storage != kNever) {
      done_.clear();
      storage.Advance(next_storage, done_);
      for (const StorageModel::Completion& c : done_) OnRead(-1, c);
    } else {
      break;
    }
  }
  if (!failed_ && steps_done_ < total_) {
    throw std::logic_error(fmt::format(
        "simulator: no event left at step {} of {} (rank 0: next fetch {}, next copy {})",
        steps_done_, total_, ranks_[0].next_fetch, ranks_[0].next_copy));
  }
  SimulationResult out;
  out.stats.ranks = static_cast<uint32_t>(ranks_.size());
  out.stats.wall_seconds = MonotonicSeconds() - wall0;
  out.stats.events = events_;
  for (const auto& m : models_) out.stats.events += m.model->events();
  Finish(out);
  return out;
}

void RankLoop::Push(double t, Kind kind, uint32_t a, uint64_t b) {
  queue_.push({t, seq_++, kind, a, b});
}

uint64_t RankLoop::Token(uint32_t rank, int slot, uint32_t i) {
  return static_cast<uint64_t>(rank) << 32 | static_cast<uint64_t>(slot) << 20 | i;
}

// The scenario's dataset; a directory is listed once per Simulator.
SimulatedDataset RankLoop::Dataset() const {
  if (s_.storage.kind != StorageKind::kDirectory) return LoadDataset(s_);
  auto& d = listed_[fmt::format("{}|{}", s_.dataset.path, s_.dataset.classes)];
  if (!d) d = std::make_shared<const SimulatedDataset>(LoadDataset(s_));
  return *d;
}

// What a real disk tier opened at o.path would start with: this dataset's entries there, admitted
// as DiskTier admits them (by id, block-rounded, at time 0). Returns how many were admitted.
uint64_t RankLoop::AdmitEntriesOnDisk(const TierOptions& o, EvictionPolicy& policy) const {
  std::error_code ec;
  if (o.path.empty() || !std::filesystem::is_directory(o.path, ec)) return 0;
  uint64_t admitted = 0;
  std::vector<uint64_t> evicted;
  for (const DiskSurvey::Entry& e : DiskTier::Survey(o.path, fingerprint_, n_, false).entries) {
    evicted.clear();
    if (policy.Admit(e.id, RoundUp(e.size, kBlockBytes), 0, evicted)) {
      admitted = admitted + 1 - evicted.size();
    }
  }
  return admitted;
}

// Cache sets: one per node, or one per rank (cache.scope: rank). A node has one disk: the
// disk tiers of its ranks' cache sets read through one model, each rank io_depth deep.
void RankLoop::SetupCaches(uint64_t R, size_t local_tiers) {
  const auto& c = s_.cluster;
  const bool per_rank = s_.cache_scope == CacheScope::kRank;
  caches_.resize(per_rank ? R : c.nodes);
  std::vector<int> node_disk(c.nodes, -1);
  const uint32_t sharing = per_rank ? c.gpus_per_node : 1;
  for (uint32_t k = 0; k < caches_.size(); ++k) {
    CacheSet& cache = caches_[k];
    int& disk = node_disk[per_rank ? k / c.gpus_per_node : k];
    cache.tiers.reserve(local_tiers);
    for (size_t t = 0; t < local_tiers; ++t) {
      const TierOptions& o = s_.cache_tiers[t];
      KeptDisk* persistent = nullptr;
      // (Not beside a distributed tier: its index of which node holds what starts empty.)
      if (o.kind == TierKind::kDisk && o.policy != PolicyKind::kBelady && !distributed_) {
        // A disk tier outlives the variant (a warm restart), unless it is cleared.
        const std::string key = fmt::format("{}|{}|{}|{}|{}{}", o.path, s_.seed, n_, max_bytes_,
                                            per_rank ? "rank-" : "", k);
        KeptDisk& kept = disks_[key];
        const bool first = !kept.policy;
        if (first || o.clear || kept.policy->capacity_bytes() != o.capacity ||
            kept.policy->kind() != o.policy) {
          kept = {EvictionPolicy::Make(o.policy, o.capacity, n_, nullptr), 0};
          // A one-rank job on this host finds what a real run would: the directory's entries.
          if (first && !o.clear && R == 1) kept.entries = AdmitEntriesOnDisk(o, *kept.policy);
        }
        persistent = &kept;
      }
      cache.tiers.emplace_back(o, n_, max_bytes_, oracle_.get(), persistent);
      if (o.kind == TierKind::kDisk && cache.disk_model < 0 && disk >= 0) {
        cache.disk_model = disk;  // the node's disk, made for an earlier rank of the node
      } else if (o.kind == TierKind::kDisk && cache.disk_model < 0) {
        SimulatedStorageOptions d;
        d.bandwidth_bytes_per_second = o.read_bandwidth;
        d.latency_p50_seconds = o.read_latency;
        d.latency_p99_seconds = o.read_latency * 4;
        d.max_inflight = s_.loader.io.io_depth * sharing;
        disk = cache.disk_model = static_cast<int>(models_.size());
        models_.push_back({std::make_unique<StorageModel>(d, s_.seed + 1 + k, max_bytes_, 0.0),
                           kNever, static_cast<int>(t)});
      }
    }
  }
}

void RankLoop::Setup() {
  const auto& c = s_.cluster;
  const uint64_t R = static_cast<uint64_t>(c.nodes) * c.gpus_per_node;
  SimulatedDataset dataset = Dataset();
  n_ = dataset.sizes.size();
  sizes_ = std::move(dataset.sizes);
  max_bytes_ = dataset.max_sample_bytes;
  can_verify_ = dataset.can_verify;
  fingerprint_ = std::move(dataset.fingerprint);
  if (n_ < R) {
    throw BadInput(fmt::format(
        "{}: cluster: {} ranks but only {} samples: every rank needs a shard of the dataset",
        s_.file, R, n_));
  }
  per_rank_ = n_ / R;
  plan_ = RankPlan(s_, per_rank_, max_bytes_, can_verify_);
  RequireMeasuredSteps(plan_, s_.run.warmup_steps, s_.file);
  batches_per_epoch_ = plan_.batches_per_epoch;
  total_ = plan_.total_batches;
  sampler_ = std::make_unique<Sampler>(n_, s_.seed);
  oracle_ = std::make_unique<EpochOrderOracle>(
      n_, s_.run.epochs,
      [this](uint64_t epoch, std::vector<uint64_t>& out) { sampler_->Order(epoch, out); });

  // The node's costs. `cuda` copies at node.h2d; `emulated` and `auto` (what `auto` runs on a
  // host without a GPU) at the node's one-large-copy rate (node.snapshot): a batch copied from
  // the staging slot the workers filled is past the caches. (Measured on this 2-core VM,
  // 2026-12-04: real emulated copies of 2–52 MB batches ran at 15–18 GB/s, as node.snapshot
  // 17.5, against node.memcpy's cache-resident 82.)
  const bool emulated = s_.gpu.device != DeviceKind::kCuda;
  copy_rate_ = emulated ? node_.snapshot : node_.h2d;
  cpu_copy_ = emulated;
  device_name_ = emulated ? "simulated: emulated"
                          : fmt::format("simulated: cuda (H2D {})", FormatRate(node_.h2d));
  nic_ = s_.storage.kind == StorageKind::kSimulated ? node_.nic : 0;

  // Storage: one model shared by every rank.
  memory_storage_ = s_.storage.kind == StorageKind::kMemory;
  epoch_barrier_ = s_.storage.kind == StorageKind::kDirectory && s_.storage.cold;
  models_.push_back(
      {std::make_unique<StorageModel>(StorageOf(s_, R), s_.seed, max_bytes_, 0.0), kNever, -1});
  // Nodes: local tiers, disk and network models, cores.
  distributed_ = s_.has_distributed_tier();
  for (const TierOptions& o : s_.cache_tiers) {
    tier_kind_.push_back(o.kind == TierKind::kMemory ? kRamTier
                         : o.kind == TierKind::kDisk ? kDiskTier
                                                     : kPeers);
  }
  const size_t local_tiers = s_.cache_tiers.size() - (distributed_ ? 1 : 0);
  SetupCores();
  SetupCaches(R, local_tiers);
  for (Node& node : nodes_) {
    if (distributed_) {
      SimulatedStorageOptions nic;
      nic.bandwidth_bytes_per_second = c.network_bandwidth;
      nic.max_inflight = 1u << 20;
      node.nic_model = static_cast<int>(models_.size());
      models_.push_back({std::make_unique<StorageModel>(nic, s_.seed, max_bytes_, 0.0), kNever,
                         static_cast<int>(local_tiers)});
    }
  }
  if (distributed_) {
    holders_.assign(n_, 0);
  }
  // Ranks.
  ranks_.resize(R);
  for (uint32_t r = 0; r < R; ++r) {
    Rank& rk = ranks_[r];
    rk.node = r / c.gpus_per_node;
    rk.cache = s_.cache_scope == CacheScope::kRank ? r : rk.node;
    rk.slots.resize(plan_.slots);
    const uint32_t batch = plan_.batch_size;
    for (int sl = static_cast<int>(rk.slots.size()) - 1; sl >= 0; --sl) {
      Slot& slot = rk.slots[sl];
      slot.ids.resize(batch);
      slot.access.resize(batch);
      slot.attempts.resize(batch);
      slot.dropped.resize(batch);
      slot.source.resize(batch);
      slot.to_read.reserve(batch);
      rk.free_slots.push_back(sl);
    }
    rk.slot_of_batch.assign(total_, -1);
    rk.ready.assign(total_, 0);
    rk.idle_workers = std::max<uint32_t>(s_.loader.workers, 1);
  }
  Order(0);  // the first epoch's shuffle is set-up, not simulation
  records_.assign(total_, BatchRecord{});
  copied_count_.assign(total_, 0);
  epoch_snapshots_.assign(s_.run.epochs + 1, {});
  snapshot_taken_.assign(s_.run.epochs + 1, 0);
}

const std::vector<uint64_t>& RankLoop::Order(uint64_t epoch) {
  auto it = orders_.find(epoch);
  if (it != orders_.end()) return it->second;
  if (orders_.size() >= 4) orders_.erase(orders_.begin());  // the oldest epoch is done
  auto& v = orders_[epoch];
  sampler_->Order(epoch, v);
  return v;
}

void RankLoop::Arm(int m) {
  if (m == 0) return;  // the shared storage is polled by the main loop
  Model& md = models_[m];
  const double next = md.model->NextEventTime();
  if (next < md.armed_at) {
    md.armed_at = next;
    Push(next, kModel, static_cast<uint32_t>(m), 0);
  }
}

void RankLoop::Dispatch(const Event& e) {
  switch (e.kind) {
    case kModel: {
      Model& md = models_[e.a];
      if (e.t != md.armed_at) return;  // superseded by an earlier arming
      md.armed_at = kNever;
      done_.clear();
      md.model->Advance(e.t, done_);
      Arm(static_cast<int>(e.a));
      for (const StorageModel::Completion& c : done_) OnRead(md.tier, c);
      return;
    }
    case kLookupsDone:
      SubmitReads(e.a, static_cast<int>(e.b), e.t);
      return;
    case kCopyDone:
      OnCopyDone(e.a, e.b, e.t);
      return;
    case kChunkDone:
      OnChunkDone(e.a, static_cast<int>(e.b), e.t);
      return;
    case kCpuDone:
      OnCpuDone(e.a, e.b, e.t);
      return;
    case kStepEnd:
      OnStepEnd(e.b, e.t);
      return;
    case kSnapshotDone:
      OnSnapshotDone(e.t);
      return;
    case kEvicted:
      ranks_[e.a].fetcher_busy = false;
      TryFetch(e.a, e.t);
      return;
    case kReceived:
      Received(e.a, static_cast<int>((e.b >> 20) & 0xfff), e.t);
      return;
    case kRetry: {
      const uint64_t token = e.b;
      const uint32_t r = static_cast<uint32_t>(token >> 32);
      const Slot& slot = ranks_[r].slots[(token >> 20) & 0xfff];
      const uint32_t i = token & 0xfffff;
      models_[0].model->Submit(token, sizes_[slot.ids[i]], e.t);
      Arm(0);
      return;
    }
  }
}

void RankLoop::TryFetch(uint32_t r, double t) {
  Rank& rk = ranks_[r];
  if (rk.fetcher_busy || rk.next_fetch >= total_) return;
  const uint64_t b = rk.next_fetch;
  if (b > device_batch_ + s_.loader.prefetch || rk.free_slots.empty()) return;
  if (epoch_barrier_ && b % batches_per_epoch_ == 0 &&
      rk.epochs_evicted <= b / batches_per_epoch_) {
    if (rk.fetched_batches < b) return;  // FetchDone tries again when the last one is in
    rk.epochs_evicted = b / batches_per_epoch_ + 1;
    rk.fetcher_busy = true;
    Push(t + s_.storage.model.evict_seconds, kEvicted, r, 0);
    return;
  }
  const int sl = rk.free_slots.back();
  rk.free_slots.pop_back();
  rk.slot_of_batch[b] = sl;
  rk.next_fetch++;
  StartBatch(r, b, sl, t);
}

void RankLoop::StartBatch(uint32_t r, uint64_t b, int sl, double t) {
  Rank& rk = ranks_[r];
  CacheSet& cache = caches_[rk.cache];
  Slot& slot = rk.slots[sl];
  const uint64_t epoch = b / batches_per_epoch_;
  const uint64_t R = ranks_.size();
  const uint32_t batch = s_.loader.batch_size;
  const uint64_t first = (b % batches_per_epoch_) * batch;
  const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(batch, per_rank_ - first));
  if (!snapshot_taken_[epoch]) {
    snapshot_taken_[epoch] = 1;
    epoch_snapshots_[epoch] = Evictions();
  }
  const std::vector<uint64_t>& order = Order(epoch);
  slot.batch = b;
  slot.count = count;
  slot.pending = 0;
  slot.next_chunk = slot.chunks_done = slot.skipped = 0;
  slot.fetch_start = t;
  slot.to_read.clear();
  BatchRecord& part = records_[b];  // counts are summed over ranks
  part.epoch = static_cast<uint32_t>(epoch);
  part.samples += count;
  double copy_seconds = 0;  // the fetcher's memcpy of RAM hits (and of MemoryStorage reads)
  const size_t local = cache.tiers.size();
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t pos = (first + i) * R + r;
    const uint64_t id = order[pos];
    slot.ids[i] = id;
    slot.access[i] = epoch * n_ + pos;
    slot.attempts[i] = 0;
    slot.dropped[i] = 0;
    slot.source[i] = kStorage;
    int found = -1;
    for (size_t k = 0; k < local; ++k) {
      part.cache_lookups[k]++;
      if (cache.tiers[k].Lookup(id, slot.access[i])) {
        found = static_cast<int>(k);
        break;
      }
    }
    if (found < 0 && distributed_) {
      part.cache_lookups[local]++;
      if (holders_[id] > 0) {
        found = static_cast<int>(local);
        distributed_hits_++;
      } else {
        distributed_misses_++;
      }
    }
    slot.source[i] = static_cast<int8_t>(found);  // a tier, or storage (-1)
    if (found >= 0 && tier_kind_[found] == kRamTier) {
      part.cache_hits[found]++;
      part.cache_bytes[found] += sizes_[id];
      copy_seconds += sizes_[id] / node_.memcpy;
      continue;
    }
    if (found < 0 && memory_storage_) {
      // MemoryStorage copies inside Submit, on the fetcher's thread.
      copy_seconds += sizes_[id] / node_.memcpy;
      copy_seconds += AdmitLocal(r, id, slot.access[i], local) / node_.fill;
      part.storage_bytes += sizes_[id];
      part.storage_reads++;
      continue;
    }
    slot.pending++;
    slot.to_read.push_back(i);
  }
  rk.fetcher_busy = true;
  Push(t + copy_seconds, kLookupsDone, r, static_cast<uint64_t>(sl));
}

void RankLoop::SubmitReads(uint32_t r, int sl, double t) {
  Rank& rk = ranks_[r];
  const Node& node = nodes_[rk.node];
  const CacheSet& cache = caches_[rk.cache];
  Slot& slot = rk.slots[sl];
  BatchRecord& part = records_[slot.batch];
  rk.fetcher_busy = false;
  if (slot.pending == 0) {
    FetchDone(r, sl, t);
  } else {
    for (const uint32_t i : slot.to_read) {
      const int src = slot.source[i];
      const uint64_t token = Token(r, sl, i);
      const uint64_t bytes = sizes_[slot.ids[i]];
      if (src == kStorage) {
        part.storage_reads++;
        models_[0].model->Submit(token, bytes, t);
      } else if (tier_kind_[src] == kDiskTier) {
        models_[cache.disk_model].model->Submit(token, bytes, t);
      } else {  // distributed: from a peer over this node's link
        models_[node.nic_model].model->Submit(token, bytes, t);
      }
    }
    Arm(0);
    if (cache.disk_model >= 0) Arm(cache.disk_model);
    if (node.nic_model >= 0) Arm(node.nic_model);
  }
  TryFetch(r, t);
}

void RankLoop::OnRead(int tier, const StorageModel::Completion& c) {
  if (c.token & kCheckpointToken) {
    OnCheckpointWrite(static_cast<uint32_t>(c.token & 0xffffffffu), c.time);
    return;
  }
  const uint32_t r = static_cast<uint32_t>(c.token >> 32);
  const int sl = static_cast<int>((c.token >> 20) & 0xfff);
  const uint32_t i = c.token & 0xfffff;
  Rank& rk = ranks_[r];
  Slot& slot = rk.slots[sl];
  const uint64_t id = slot.ids[i];
  BatchRecord& part = records_[slot.batch];
  const uint64_t bytes = sizes_[id];
  uint64_t admitted = 0;                 // bytes copied into RAM tiers
  if (tier >= 0) tier = slot.source[i];  // which disk tier (they share one read model)
  if (tier >= 0) {                       // a cache tier's read (disk or a peer): never fails here
    part.cache_hits[tier]++;
    part.cache_bytes[tier] += bytes;
    if (tier_kind_[tier] == kDiskTier) {
      admitted = AdmitLocal(r, id, slot.access[i], tier);  // promote
    }
  } else if (c.result >= 0 && static_cast<uint64_t>(c.result) == bytes) {
    part.storage_bytes += bytes;
    if (host_per_read_ > 0) StartCpu(rk.node, c.time, host_per_read_, kHostJob, r, 0);
    admitted = AdmitLocal(r, id, slot.access[i], caches_[rk.cache].tiers.size());
  } else {
    read_errors_++;
    const OnError on_error = s_.loader.on_error;
    if (on_error != OnError::kFail && slot.attempts[i] < plan_.retries) {
      slot.attempts[i]++;
      const double delay = std::min(
          1.0, s_.loader.retry_backoff * std::ldexp(1.0, static_cast<int>(slot.attempts[i]) - 1));
      Push(c.time + delay, kRetry, r, c.token);
      return;
    }
    if (on_error == OnError::kSkip) {
      slot.dropped[i] = 1;
      slot.skipped++;
      skipped_.push_back(id);
    } else {
      failed_ = true;
      error_ =
          fmt::format("reading sample {} failed after {} attempt(s): {}", id, slot.attempts[i] + 1,
                      c.result < 0 ? std::strerror(static_cast<int>(-c.result))
                                   : fmt::format("{} of {} bytes", c.result, bytes));
      return;
    }
  }
  // A shared storage's bytes come through the node's NIC: a FIFO at node.nic whose transfer
  // of a read may overlap the storage's own (so an idle NIC adds nothing), never faster.
  double arrived = c.time;
  if (tier < 0 && c.result > 0 && nic_ > 0) {
    Node& node = nodes_[rk.node];
    const double pass = static_cast<double>(c.result) / nic_;
    node.nic_free = std::max(node.nic_free, c.time - pass) + pass;
    usage_.nic_seconds += pass;
    arrived = std::max(arrived, node.nic_free);
  }
  // Completions are handed over one at a time on the rank's receiving thread (the storage's
  // completion thread in a real run): it lands the bytes (node.receive) and copies admitted
  // ones into the RAM tier (fresh arena pages, so at node.fill). Later completions wait
  // behind it.
  double cost = admitted / node_.fill;
  if (tier < 0 && c.result > 0) cost += c.result / node_.receive;
  usage_.cpu_receive += cost;
  const double received = std::max(arrived, rk.receiver_free) + cost;
  rk.receiver_free = received;
  if (received > c.time) {
    Push(received, kReceived, r, c.token);
    return;
  }
  Received(r, sl, c.time);
}

void RankLoop::Received(uint32_t r, int sl, double t) {
  if (--ranks_[r].slots[sl].pending == 0) FetchDone(r, sl, t);
}

uint64_t RankLoop::AdmitLocal(uint32_t r, uint64_t id, uint64_t access, size_t upto) {
  CacheSet& cache = caches_[ranks_[r].cache];
  uint64_t copied = 0;
  for (size_t k = 0; k < upto && k < cache.tiers.size(); ++k) {
    evicted_.clear();
    const bool in = cache.tiers[k].Admit(id, sizes_[id], access, evicted_);
    if (in && tier_kind_[k] == kRamTier) copied += sizes_[id];
    if (!distributed_) continue;
    if (in) holders_[id]++;
    for (uint64_t v : evicted_) holders_[v] -= holders_[v] > 0;
  }
  return copied;
}

void RankLoop::FetchDone(uint32_t r, int sl, double t) {
  Rank& rk = ranks_[r];
  Slot& slot = rk.slots[sl];
  slot.fetch_done = t;
  if (++rk.fetched_batches == rk.next_fetch && epoch_barrier_) TryFetch(r, t);
  if (!plan_.preprocess_stage) {
    slot.preprocess_done = t;
    MarkReady(r, sl, t);
    return;
  }
  rk.fetched.push_back(sl);
  DispatchWorkers(rk.node, t);
}

}  // namespace stallscope
