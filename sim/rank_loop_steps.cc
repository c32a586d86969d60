// RankLoop, the compute side: the node's workers, the copy, the synchronous step, and the
// run's record at the end.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "pipeline/analysis.h"
#include "sim/rank_loop.h"

namespace stallscope {

double RankLoop::SampleCost(const Slot& slot, uint32_t i, double slowdown) {
  if (slot.dropped[i]) return 0;
  const double bytes = static_cast<double>(sizes_[slot.ids[i]]);
  const double cost = s_.loader.preprocess.cost * slowdown;
  const double verify = plan_.verify ? bytes / node_.verify : 0;
  // jpeg-decode's normalization is part of its decode rate (none on the device's side).
  const double jpeg =
      plan_.jpeg ? bytes / (plan_.image_side > 0 ? node_.jpeg_decode_device : node_.jpeg_decode)
                 : 0;
  const double normalize = plan_.normalize && !plan_.jpeg ? bytes / node_.normalize : 0;
  usage_.cpu_cost += cost;
  usage_.cpu_verify += verify;
  usage_.cpu_jpeg += jpeg;
  usage_.cpu_normalize += normalize;
  return cost + verify + jpeg + normalize;
}

void RankLoop::SetupCores() {
  const ClusterOptions& c = s_.cluster;
  // A directory's reads are the loader's CPU work as well (calibrate --dir's cpu_per_read):
  // each read's CPU part, timed alone in its latency, takes longer when the node's cores are
  // shared by more busy threads than it has.
  cpu_per_read_ =
      s_.storage.kind == StorageKind::kDirectory ? s_.storage.model.cpu_per_read_seconds : 0;
  if (cpu_per_read_ > 0) {
    const double wait_busy = s_.storage.model.read_wait_busy_seconds;
    const double wait_partial = s_.storage.model.read_wait_partial_seconds;
    models_[0].model->SetHostDelay([this, wait_busy, wait_partial](uint64_t token) {
      const Node& node = nodes_[ranks_[static_cast<uint32_t>(token >> 32)].node];
      // The read's own CPU part shares the cores with the node's jobs: at processor sharing it
      // takes cpu_per_read × (runnable / cores - 1) longer. Where calibrate measured the read
      // beside a busy thread on every core (runnable = cores + 1), that measured wait stands
      // for cpu_per_read / cores: it holds the wait for a core after the completion too.
      const double runnable = static_cast<double>(node.jobs.size()) + 1.0;
      const double excess = std::max(0.0, runnable - cores_);
      if (wait_busy <= 0) return cpu_per_read_ * excess / cores_;
      if (excess > 0) return wait_busy * excess;
      // A core is free: the wait measured beside busy threads on every core but one, in
      // proportion to the busy threads (the workers' chunks and the copies; not the earlier
      // reads' host work, which stands for interrupts and wake-ups).
      const double busy = static_cast<double>(node.jobs.size() - node.host_jobs);
      return cores_ > 1 ? wait_partial * std::min(1.0, busy / (cores_ - 1)) : 0.0;
    });
  }
  const uint32_t cores = node_.cores;
  cores_ = cores;
  nodes_.resize(c.nodes);
  for (Node& node : nodes_) node.free_cores = cores;
  {
    const uint32_t G = c.gpus_per_node;
    const double workers = std::min<double>(cores, static_cast<double>(G) * s_.loader.workers);
    reader_threads_ = cpu_per_read_ > 0
                          ? static_cast<double>(G) * std::max<uint32_t>(1, s_.loader.io.io_threads)
                          : 0;
    shared_cores_ = workers + (cpu_copy_ ? G : 0) + reader_threads_ > cores;
  }
  // What each read costs the other cores is charged where they are shared, as the rest of the
  // CPU model is: on a node with a core for every thread, each runs alone at full speed.
  host_per_read_ = shared_cores_ && s_.storage.kind == StorageKind::kDirectory
                       ? s_.storage.model.host_per_read_seconds
                       : 0;
}

double RankLoop::ReaderLoad() const {
  if (cpu_per_read_ <= 0) return 0;
  // This node's share of the reads in flight, each keeping an I/O thread busy for its CPU part
  // of a read's time (at least that CPU part), at most the node's I/O threads.
  const double inflight = static_cast<double>(models_[0].model->inflight()) / nodes_.size();
  const double busy =
      inflight * cpu_per_read_ / std::max(cpu_per_read_, s_.storage.model.latency_p50_seconds);
  return std::min(busy, reader_threads_);
}

double RankLoop::CpuRate(const Node& node) const {
  const double runnable = static_cast<double>(node.jobs.size()) + ReaderLoad();
  return runnable <= cores_ ? 1.0 : cores_ / runnable;
}

void RankLoop::AdvanceCpu(Node& node, double t) const {
  if (!node.jobs.empty() && t > node.served_at) node.served += (t - node.served_at) * CpuRate(node);
  node.served_at = t;
}

void RankLoop::StartCpu(uint32_t k, double t, double work, JobKind kind, uint32_t r, uint64_t arg) {
  if (!shared_cores_) {  // never more work than cores: each job alone, at full speed
    if (kind != kHostJob) Push(t + work, kind == kCopyJob ? kCopyDone : kChunkDone, r, arg);
    return;
  }
  Node& node = nodes_[k];
  AdvanceCpu(node, t);
  node.jobs.push({node.served + work, node.job_seq++, kind, r, arg});
  node.host_jobs += kind == kHostJob;
  ScheduleCpu(k, t);
}

void RankLoop::ScheduleCpu(uint32_t k, double t) {
  Node& node = nodes_[k];
  ++node.generation;
  if (node.jobs.empty()) return;
  const double left = std::max(0.0, node.jobs.top().done_at - node.served);
  Push(t + left / CpuRate(node), kCpuDone, k, node.generation);
}

void RankLoop::OnCpuDone(uint32_t k, uint64_t generation, double t) {
  Node& node = nodes_[k];
  if (generation != node.generation) return;  // the jobs changed since: rescheduled
  AdvanceCpu(node, t);
  // This event was timed for the first job's end: it ends now, whatever the rounding of
  // (t - served_at) * rate says. (At times far from 0 — a node rate of 1 B/s — the remainder
  // could be below the clock's resolution and the same event would come back forever.)
  node.served = std::max(node.served, node.jobs.top().done_at);
  cpu_done_.clear();
  const double eps = 1e-12 * std::max(1.0, node.served);
  while (!node.jobs.empty() && node.jobs.top().done_at <= node.served + eps) {
    cpu_done_.push_back(node.jobs.top());
    node.host_jobs -= node.jobs.top().kind == kHostJob;
    node.jobs.pop();
  }
  ScheduleCpu(k, t);
  // The handlers start new jobs (StartCpu) but never end one: cpu_done_ stays as it is.
  for (const CpuJob& j : cpu_done_) {
    if (j.kind == kCopyJob) {
      OnCopyDone(j.rank, j.arg, t);
    } else if (j.kind == kChunkJob) {
      OnChunkDone(j.rank, static_cast<int>(j.arg), t);
    }
  }
}

void RankLoop::DispatchWorkers(uint32_t k, double t) {
  Node& node = nodes_[k];
  const uint32_t G = s_.cluster.gpus_per_node;
  uint32_t tried = 0;
  while (node.free_cores > 0 && tried < G) {
    const uint32_t r = k * G + node.next_rank;
    node.next_rank = (node.next_rank + 1) % G;
    Rank& rk = ranks_[r];
    if (rk.idle_workers == 0 || rk.fetched.empty()) {
      ++tried;
      continue;
    }
    tried = 0;
    const int sl = rk.fetched.front();
    Slot& slot = rk.slots[sl];
    const uint32_t chunk = slot.next_chunk++;
    if (slot.next_chunk == plan_.chunks_per_batch) rk.fetched.pop_front();
    const uint32_t per = (slot.count + plan_.chunks_per_batch - 1) / plan_.chunks_per_batch;
    const uint32_t begin = std::min(slot.count, chunk * per);
    const uint32_t end = std::min(slot.count, begin + per);
    // Between the one-core and all-cores speeds, by how many cores are busy with this one.
    const NodeOptions& h = node_;
    const double busy = static_cast<double>(cores_ - node.free_cores + 1);
    const double share = cores_ > 1 ? std::min(1.0, (busy - 1) / (cores_ - 1)) : 0.0;
    const double straggle = static_cast<int64_t>(r) == s_.cluster.straggler.rank
                                ? s_.cluster.straggler.slowdown
                                : 1.0;  // cluster.straggler: this rank's CPU work is slower
    const double slowdown =
        straggle * (h.cost_factor + share * (h.cost_factor_busy - h.cost_factor));
    double cost = 0;
    for (uint32_t i = begin; i < end; ++i) cost += SampleCost(slot, i, slowdown);
    worker_busy_ += cost;
    rk.idle_workers--;
    node.free_cores--;
    StartCpu(k, t, cost, kChunkJob, r, static_cast<uint64_t>(sl));
  }
}

void RankLoop::OnChunkDone(uint32_t r, int sl, double t) {
  Rank& rk = ranks_[r];
  Slot& slot = rk.slots[sl];
  rk.idle_workers++;
  nodes_[rk.node].free_cores++;
  if (++slot.chunks_done == plan_.chunks_per_batch) {
    slot.preprocess_done = t;
    MarkReady(r, sl, t);
  }
  DispatchWorkers(rk.node, t);
}

void RankLoop::MarkReady(uint32_t r, int sl, double t) {
  Rank& rk = ranks_[r];
  rk.ready[rk.slots[sl].batch] = 1;
  TryCopy(r, t);
}

void RankLoop::TryCopy(uint32_t r, double t) {
  Rank& rk = ranks_[r];
  const uint64_t b = rk.next_copy;
  if (rk.copy_busy || b >= total_ || !rk.ready[b] || b > device_batch_ + 1) return;
  rk.copy_busy = true;
  rk.copy_started = t;
  const Slot& slot = rk.slots[rk.slot_of_batch[b]];
  const double bytes = static_cast<double>(slot.count - slot.skipped) * plan_.staged_stride;
  const double seconds = bytes / copy_rate_;
  copy_seconds_ += seconds;
  if (cpu_copy_) {  // a memcpy on the host's cores, beside the workers
    StartCpu(rk.node, t, seconds, kCopyJob, r, b);
  } else {  // a GPU's DMA engine
    Push(t + seconds, kCopyDone, r, b);
  }
}

void RankLoop::OnCopyDone(uint32_t r, uint64_t b, double t) {
  Rank& rk = ranks_[r];
  const int sl = rk.slot_of_batch[b];
  Slot& slot = rk.slots[sl];
  BatchRecord& rec = records_[b];
  rec.skipped += slot.skipped;
  if (copied_count_[b] == 0 || slot.fetch_start < rec.fetch_start)
    rec.fetch_start = slot.fetch_start;
  rk.copied[b & 1] = {slot.fetch_done, slot.preprocess_done, t};
  if (copied_count_[b] == 0 || t >= rec.copy_done) {
    // The rank the cluster waits for (so far): its milestones explain the stall.
    rec.fetch_done = slot.fetch_done;
    rec.preprocess_done = slot.preprocess_done;
    rec.copy_start = rk.copy_started;
    rec.copy_done = t;
  }
  copied_count_[b]++;
  rk.copy_busy = false;
  rk.next_copy++;
  rk.free_slots.push_back(sl);
  TryFetch(r, t);
  TryCopy(r, t);
  TryStep(t);
}

void RankLoop::TryStep(double t) {
  const uint64_t b = device_batch_;
  if (step_running_ || ckpt_.blocking || b >= total_ || copied_count_[b] < ranks_.size()) return;
  BatchRecord& rec = records_[b];
  rec.step_start = t;
  if (ranks_.size() > 1 && b > 0) {  // each rank's own split; its wait for the slowest is sync
    StageSeconds mean;
    const double previous_end = records_[b - 1].step_end;
    BatchRecord mine;
    mine.step_start = mine.sync_done = t;
    if (rank_stalls_.empty()) rank_stalls_.resize(ranks_.size());
    for (size_t r = 0; r < ranks_.size(); ++r) {
      // A checkpoint before this step: the rank's own part of it is checkpoint, its wait for
      // the other ranks' parts sync.
      mine.checkpoint_done =
          b == ckpt_.released_step ? ckpt_.rank_released[r] : rec.checkpoint_done;
      const Rank::Copied& c = ranks_[r].copied[b & 1];
      mine.fetch_done = c.fetch_done;
      mine.preprocess_done = c.preprocess_done;
      mine.copy_done = c.copy_done;
      const StageSeconds split = SplitStall(previous_end, mine);
      mean.AddCharged(split);
      if (b > s_.run.warmup_steps) rank_stalls_[r].AddCharged(split);  // the measured window
    }
    const double n = static_cast<double>(ranks_.size());
    rec.ranks_split = StageSeconds{mean.fetch / n, mean.preprocess / n, mean.transfer / n,
                                   mean.sync / n,  mean.checkpoint / n, 0};
  }
  rec.step_end = t + s_.gpu.step_time;
  rec.step_busy = s_.gpu.step_time;
  step_running_ = true;
  Push(rec.step_end, kStepEnd, 0, b);
}

void RankLoop::OnStepEnd(uint64_t b, double t) {
  step_running_ = false;
  records_[b].queues = SampleQueues(0, b);
  device_batch_ = b + 1;
  steps_done_ = b + 1;
  end_ = t;
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    TryFetch(r, t);
    TryCopy(r, t);
  }
  MaybeCheckpoint(b, t);
  TryStep(t);
}

QueueDepths RankLoop::SampleQueues(uint32_t r, uint64_t step) const {
  const Rank& rk = ranks_[r];
  QueueDepths q;
  q.preprocessing = static_cast<uint32_t>(rk.fetched.size());
  for (uint64_t k = step + 1; k < total_ && rk.slot_of_batch[k] >= 0; ++k) {
    q.ready += rk.ready[k] && k >= rk.next_copy;
  }
  const uint32_t in_use = static_cast<uint32_t>(rk.slots.size() - rk.free_slots.size());
  q.fetching = in_use > q.preprocessing + q.ready ? in_use - q.preprocessing - q.ready : 0;
  return q;
}

std::vector<uint64_t> RankLoop::Evictions() const {
  std::vector<uint64_t> e(s_.cache_tiers.size(), 0);
  for (const CacheSet& cache : caches_) {
    for (size_t k = 0; k < cache.tiers.size(); ++k) e[k] += cache.tiers[k].evictions();
  }
  return e;
}

void RankLoop::Finish(SimulationResult& out) {
  out.rank_stalls = std::move(rank_stalls_);
  RunRecord& rec = out.record;
  rec.device = device_name_;
  rec.batches_per_epoch = batches_per_epoch_;
  rec.start = 0;
  rec.end = end_;
  rec.failed = failed_;
  rec.error = error_;
  records_.resize(std::min<uint64_t>(steps_done_, records_.size()));
  const double R = static_cast<double>(ranks_.size());
  for (BatchRecord& b : records_) b.copy_seconds = 0;
  // The copy's capacity is per rank; spread the copy time so samples / copy seconds is the
  // cluster's rate (each rank copies its own batches in parallel).
  if (!records_.empty()) records_.back().copy_seconds = copy_seconds_ / R;
  rec.batches = std::move(records_);
  rec.checkpoints = std::move(ckpt_.spans);
  rec.worker_busy_seconds = worker_busy_;
  out.usage = usage_;
  out.usage.seconds = end_;
  rec.preprocess_stage = plan_.preprocess_stage;
  uint64_t delivered = 0;
  for (const BatchRecord& b : rec.batches) delivered += b.samples - b.skipped;
  rec.samples_verified = plan_.verify ? delivered : 0;
  rec.read_errors = read_errors_;
  rec.skipped_samples = skipped_;
  std::sort(rec.skipped_samples.begin(), rec.skipped_samples.end());
  rec.batch_size = s_.loader.batch_size;
  rec.warmup_steps = s_.run.warmup_steps;
  // Per-tier statistics, summed over nodes.
  const size_t local = s_.cache_tiers.size() - (distributed_ ? 1 : 0);
  for (size_t k = 0; k < local; ++k) {
    TierStats sum;
    for (const CacheSet& cache : caches_) {
      const TierStats t = cache.tiers[k].Stats();
      sum.name = t.name;
      sum.policy = t.policy;
      sum.hits += t.hits;
      sum.misses += t.misses;
      sum.evictions += t.evictions;
      sum.bytes_held += t.bytes_held;
      sum.capacity += t.capacity;
      sum.entries_at_start += t.entries_at_start;
    }
    rec.cache.push_back(sum);
  }
  if (distributed_) {
    TierStats d;
    d.name = "distributed";
    d.policy = "peers";
    d.hits = distributed_hits_;
    d.misses = distributed_misses_;
    for (const TierStats& t : rec.cache) d.capacity += t.capacity;
    rec.cache.push_back(d);
  }
  for (size_t e = 0; e < epoch_snapshots_.size(); ++e) {
    if (snapshot_taken_[e]) rec.tier_evictions.push_back(epoch_snapshots_[e]);
  }
  rec.tier_evictions.push_back(Evictions());
  for (auto& e : rec.tier_evictions) e.resize(rec.cache.size(), 0);

  AnalysisInputs& in = out.inputs;
  in.warmup_steps = s_.run.warmup_steps;
  in.batch_size = static_cast<uint32_t>(s_.loader.batch_size * ranks_.size());
  in.workers = static_cast<uint32_t>(std::max<uint32_t>(s_.loader.workers, 1) * ranks_.size());
  in.prefetch = s_.loader.prefetch;
  in.nominal_step_seconds = s_.gpu.step_time;
  in.have_cache = !s_.cache_tiers.empty();
  in.job_of_ranks = ranks_.size() > 1;
  out.stats.simulated_seconds = end_;
}

}  // namespace stallscope
