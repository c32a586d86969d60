#include "sim/simulator.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <queue>
#include <thread>

#include "cache/epoch_oracle.h"
#include "cache/memory_tier.h"
#include "pipeline/preprocess.h"
#include "pipeline/run_plan.h"
#include "storage/directory_storage.h"
#include "pipeline/sampler.h"
#include "storage/content.h"
#include "storage/storage_model.h"
#include "storage/synthetic.h"
#include "base/align.h"
#include "base/clock.h"

namespace stallscope {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();


// Runs `work` until it has taken at least `min_seconds`; returns the seconds per call.
template <typename F>
double TimePerCall(F work, double min_seconds) {
  work();  // warm: page faults, caches
  uint64_t calls = 0;
  const double t0 = MonotonicSeconds();
  double t = t0;
  do {
    work();
    ++calls;
    t = MonotonicSeconds();
  } while (t - t0 < min_seconds);
  return (t - t0) / calls;
}

}  // namespace

HostModel HostModel::Measure(uint64_t sample_bytes) {
  HostModel h;
  h.cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t n = std::clamp<uint64_t>(sample_bytes, 4096, 16 << 20);
  std::vector<std::byte> raw(n), copy(n);
  std::vector<float> floats(n);
  const uint64_t key = ContentKey(1, 1);
  FillContent(key, raw, 7);
  volatile bool ok = true;
  const double normalize = TimePerCall([&] { NormalizeBytes(raw.data(), n, floats.data()); }, 0.03);
  const double verify = TimePerCall([&] { ok = ok && MatchesContent(key, raw, 7); }, 0.03);
  const double copy_s = TimePerCall([&] { std::memcpy(copy.data(), raw.data(), n); }, 0.02);
  const double fill = TimePerCall([&] { FillContent(key, copy, 7); }, 0.02);
  h.receive_bytes_per_second = n / fill;
  // The calibrated CPU work of loader.preprocess.cost, as it runs: how long 1 ms takes.
  const CpuBurner& burner = CpuBurner::Get();
  volatile uint64_t sink = 0;
  // The median of 41 runs: a preempted run (a shared machine) must not set the rate.
  std::vector<double> burns;
  for (int i = 0; i < 41; ++i) {
    const double t0 = MonotonicSeconds();
    sink = sink + burner.Burn(1e-3, 3 + i);
    burns.push_back(MonotonicSeconds() - t0);
  }
  std::nth_element(burns.begin(), burns.begin() + 20, burns.end());
  h.burn_seconds_per_second = burns[20] / 1e-3;
  // The same with every core burning at once: virtual cores that share a physical one (or a
  // busy host) run slower together than alone.
  if (h.cores > 1) {
    std::vector<double> each(h.cores, 0);
    std::vector<std::thread> threads;
    for (uint32_t c = 0; c < h.cores; ++c) {
      threads.emplace_back([&burner, &each, c] {
        std::vector<double> mine;
        volatile uint64_t local = 0;
        for (int i = 0; i < 21; ++i) {
          const double t0 = MonotonicSeconds();
          local = local + burner.Burn(1e-3, 100 + i);
          mine.push_back(MonotonicSeconds() - t0);
        }
        std::nth_element(mine.begin(), mine.begin() + 10, mine.end());
        each[c] = mine[10];
      });
    }
    for (auto& t : threads) t.join();
    std::sort(each.begin(), each.end());
    h.burn_all_cores_seconds_per_second =
        std::max(h.burn_seconds_per_second, each[each.size() / 2] / 1e-3);
  } else {
    h.burn_all_cores_seconds_per_second = h.burn_seconds_per_second;
  }
  // Copies into never-touched memory (a RAM tier filling its arena): page faults included.
  {
    const uint64_t region = 64ULL << 20;
    std::vector<double> rates;
    for (int i = 0; i < 3; ++i) {
      void* p = mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) break;
      madvise(p, region, MADV_HUGEPAGE);  // as the RAM tier's arena (cache/memory_tier.cc)
      auto* dst = static_cast<std::byte*>(p);
      const double t0 = MonotonicSeconds();
      for (uint64_t off = 0; off + n <= region; off += n) std::memcpy(dst + off, raw.data(), n);
      rates.push_back(static_cast<double>(region / n * n) / (MonotonicSeconds() - t0));
      munmap(p, region);
    }
    std::sort(rates.begin(), rates.end());
    h.fresh_write_bytes_per_second = rates.empty() ? 1e9 : rates[rates.size() / 2];
  }
  h.normalize_bytes_per_second = n / normalize;
  h.verify_bytes_per_second = n / verify;
  h.memcpy_bytes_per_second = n / copy_s;
  return h;
}

HostModel HostModel::Mean(const HostModel& a, const HostModel& b) {
  HostModel m = a;
  auto mean = [](double x, double y) { return (x + y) / 2; };
  m.normalize_bytes_per_second = mean(a.normalize_bytes_per_second, b.normalize_bytes_per_second);
  m.verify_bytes_per_second = mean(a.verify_bytes_per_second, b.verify_bytes_per_second);
  m.memcpy_bytes_per_second = mean(a.memcpy_bytes_per_second, b.memcpy_bytes_per_second);
  m.burn_seconds_per_second = mean(a.burn_seconds_per_second, b.burn_seconds_per_second);
  m.burn_all_cores_seconds_per_second =
      mean(a.burn_all_cores_seconds_per_second, b.burn_all_cores_seconds_per_second);
  m.fresh_write_bytes_per_second =
      mean(a.fresh_write_bytes_per_second, b.fresh_write_bytes_per_second);
  m.receive_bytes_per_second = mean(a.receive_bytes_per_second, b.receive_bytes_per_second);
  return m;
}

namespace {

// The dataset as the simulator sees it: every sample's size (the synthetic dataset's, or the
// directory's files'), and whether its content can be verified.
struct SimulatedDataset {
  std::vector<uint64_t> sizes;
  uint64_t max_sample_bytes = 0;
  bool can_verify = true;
};

SimulatedDataset LoadDataset(const Scenario& s) {
  SimulatedDataset d;
  if (s.storage.kind == StorageKind::kDirectory) {
    const DirectoryStorage directory(DirectoryStorageOptions{
        .dataset = s.dataset, .storage = s.storage, .io = s.loader.io, .quiet = true});
    d.sizes.resize(directory.num_samples());
    for (uint64_t i = 0; i < d.sizes.size(); ++i) d.sizes[i] = directory.SampleBytes(i);
    d.can_verify = directory.can_verify();  // a `stallscope gen` directory is verified
  } else {
    d.sizes.resize(s.dataset.samples);
    for (uint64_t i = 0; i < d.sizes.size(); ++i) {
      d.sizes[i] = SampleSizeOf(s.seed, i, s.dataset.sample_size, s.dataset.sample_size_stdev);
    }
  }
  for (uint64_t v : d.sizes) d.max_sample_bytes = std::max(d.max_sample_bytes, v);
  return d;
}

// Each rank's plan: the Pipeline's own function (pipeline/run_plan.h) over the rank's shard.
RunPlan RankPlan(const Scenario& s, uint64_t samples_per_rank, uint64_t max_sample_bytes,
                 bool can_verify) {
  return MakeRunPlan(s.loader, s.run,
                     {.samples = samples_per_rank,
                      .max_sample_bytes = max_sample_bytes,
                      .can_verify = can_verify});
}

}  // namespace

// One cache tier of one node: the real tier's policy objects in the real tier's layout,
// without the bytes.
class SimTier {
 public:
  SimTier(const TierOptions& o, uint64_t num_ids, uint64_t max_item_bytes,
          const AccessOracle* oracle, EvictionPolicy* persistent)
      : kind_(NameOf(o.kind)), policy_name_(o.policy), capacity_(o.capacity) {
    if (o.kind == TierKind::kMemory) {
      block_ = MemoryTier::BlockBytes(max_item_bytes);
      const int shards = MemoryTier::ShardCount(o.policy);
      shift_ = std::countr_zero(static_cast<unsigned>(shards));
      const uint64_t blocks = o.capacity / block_;
      for (int s = 0; s < shards; ++s) {
        const uint64_t lo = blocks * s / shards, hi = blocks * (s + 1) / shards;
        owned_.push_back(EvictionPolicy::Make(o.policy, (hi - lo) * block_,
                                              MemoryTier::ShardIds(num_ids, shards), oracle));
        shards_.push_back(owned_.back().get());
      }
    } else {  // disk: one policy; entries charged in 4 KiB blocks
      block_ = kBlockBytes;
      if (persistent) {
        shards_.push_back(persistent);
        evictions_at_start_ = persistent->evictions();  // a real tier's count starts at open
      } else {
        owned_.push_back(EvictionPolicy::Make(o.policy, o.capacity, num_ids, oracle));
        shards_.push_back(owned_.back().get());
      }
    }
  }

  SimTier(SimTier&&) noexcept = default;
  SimTier(const SimTier&) = delete;
  SimTier& operator=(const SimTier&) = delete;

  bool Contains(uint64_t id) const { return Shard(id)->Contains(id >> shift_); }
  // A lookup: counts it, and on a hit tells the policy.
  bool Lookup(uint64_t id, uint64_t now) {
    EvictionPolicy* p = Shard(id);
    if (!p->Contains(id >> shift_)) {
      ++misses_;
      return false;
    }
    p->OnHit(id >> shift_, now);
    ++hits_;
    return true;
  }
  // Offers a sample; returns the ids evicted to make room (in `evicted`).
  bool Admit(uint64_t id, uint64_t bytes, uint64_t now, std::vector<uint64_t>& evicted) {
    EvictionPolicy* p = Shard(id);
    const uint64_t local = id >> shift_;
    if (bytes == 0 || p->Contains(local)) return false;
    scratch_.clear();
    if (!p->Admit(local, RoundUp(bytes, block_), now, scratch_)) return false;
    const uint64_t low = id & ((1u << shift_) - 1);
    for (uint64_t v : scratch_) evicted.push_back(v << shift_ | low);
    return true;
  }

  TierStats Stats() const {
    TierStats s;
    s.name = kind_;
    s.policy = policy_name_;
    s.hits = hits_;
    s.misses = misses_;
    s.capacity = capacity_;
    for (const EvictionPolicy* p : shards_) {
      s.evictions += p->evictions();
      s.bytes_held += p->used_bytes();
    }
    s.evictions -= evictions_at_start_;
    return s;
  }
  // Evictions since the tier was built.
  uint64_t evictions() const {
    uint64_t e = 0;
    for (const EvictionPolicy* p : shards_) e += p->evictions();
    return e - evictions_at_start_;
  }

 private:
  EvictionPolicy* Shard(uint64_t id) const { return shards_[id & ((1u << shift_) - 1)]; }

  std::string kind_;
  std::string policy_name_;
  uint64_t capacity_ = 0;
  uint64_t block_ = 1;
  int shift_ = 0;
  std::vector<std::unique_ptr<EvictionPolicy>> owned_;
  std::vector<EvictionPolicy*> shards_;
  std::vector<uint64_t> scratch_;
  uint64_t hits_ = 0, misses_ = 0;
  uint64_t evictions_at_start_ = 0;
};

// One simulation: built per Run().
class Simulator::Run_ {
 public:
  Run_(Simulator& sim, const Scenario& s) : sim_(sim), s_(s) {}

  SimulationResult Go() {
    Setup();
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
      } else if (next_storage != kInf) {
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

 private:
  enum Kind : uint32_t { kModel, kLookupsDone, kChunkDone, kCopyDone, kStepEnd, kRetry, kReceived };
  struct Event {
    double t;
    uint64_t seq;
    uint32_t kind;
    uint32_t a;
    uint64_t b;
  };
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.t > y.t || (x.t == y.t && x.seq > y.seq);
    }
  };
  enum TierRole : uint8_t { kRamTier, kDiskTier, kPeers };
  // Where a sample of a batch is being read from.
  enum Source : int8_t { kStorage = -1 };
  struct Model {
    std::unique_ptr<StorageModel> model;
    double armed_at = kInf;  // the time of the kModel event in the queue, or kInf
    int tier = -1;           // the cache tier it serves (-1: storage)
  };
  struct Slot {
    uint64_t batch = 0;
    uint32_t count = 0, pending = 0, next_chunk = 0, chunks_done = 0, skipped = 0;
    double fetch_start = 0, fetch_done = 0, preprocess_done = 0;
    std::vector<uint64_t> ids;
    std::vector<uint64_t> access;
    std::vector<uint8_t> attempts, dropped;
    std::vector<int8_t> source;
    std::vector<uint32_t> to_read;  // samples read from disk, a peer or storage
  };
  struct Rank {
    uint32_t node = 0;
    std::vector<Slot> slots;
    std::vector<int> free_slots;
    std::vector<int> slot_of_batch;
    std::vector<uint8_t> ready;
    uint64_t next_fetch = 0;
    bool fetcher_busy = false;
    std::deque<int> fetched;  // slots waiting for the workers, in batch order
    uint32_t idle_workers = 0;
    uint64_t next_copy = 0;
    bool copy_busy = false;
    double copy_started = 0;
    double receiver_free = 0;  // when its receiving thread is done with what it has
  };
  struct Node {
    uint32_t free_cores = 0;
    std::vector<SimTier> tiers;  // the local ones (not the distributed tier)
    int disk_model = -1, nic_model = -1;
    uint32_t next_rank = 0;  // round-robin start when a core frees
  };

  void Push(double t, Kind kind, uint32_t a, uint64_t b) { queue_.push({t, seq_++, kind, a, b}); }
  static uint64_t Token(uint32_t rank, int slot, uint32_t i) {
    return static_cast<uint64_t>(rank) << 32 | static_cast<uint64_t>(slot) << 20 | i;
  }

  void Setup() {
    const auto& c = s_.cluster;
    const uint64_t R = static_cast<uint64_t>(c.nodes) * c.gpus_per_node;
    SimulatedDataset dataset = LoadDataset(s_);
    n_ = dataset.sizes.size();
    sizes_ = std::move(dataset.sizes);
    max_bytes_ = dataset.max_sample_bytes;
    can_verify_ = dataset.can_verify;
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

    // Host costs.
    // `cuda` is charged the H200's pinned copy rate; `emulated` and `auto` this host's memcpy
    // (what `auto` runs on a host without a GPU).
    const bool emulated = s_.gpu.device != DeviceKind::kCuda;
    copy_rate_ = emulated ? sim_.host_.memcpy_bytes_per_second : kSimulatedH2DBytesPerSecond;
    device_name_ = emulated ? "simulated: emulated" : "simulated: cuda (H2D 52.3 GB/s)";

    // Storage: one model shared by every rank.
    memory_storage_ = s_.storage.kind == StorageKind::kMemory;
    models_.push_back(
        {std::make_unique<StorageModel>(s_.storage.model, s_.seed, max_bytes_, 0.0), kInf,
         -1});

    // Nodes: local tiers, disk and network models, cores.
    distributed_ = s_.has_distributed_tier();
    for (const TierOptions& o : s_.cache_tiers) {
      tier_kind_.push_back(o.kind == TierKind::kMemory ? kRamTier : o.kind == TierKind::kDisk ? kDiskTier : kPeers);
    }
    const size_t local_tiers = s_.cache_tiers.size() - (distributed_ ? 1 : 0);
    const uint32_t cores = c.cpus_per_node > 0 ? c.cpus_per_node : sim_.host_.cores;
    cores_ = cores;
    nodes_.resize(c.nodes);
    for (uint32_t k = 0; k < c.nodes; ++k) {
      Node& node = nodes_[k];
      node.free_cores = cores;
      node.tiers.reserve(local_tiers);
      for (size_t t = 0; t < local_tiers; ++t) {
        const TierOptions& o = s_.cache_tiers[t];
        EvictionPolicy* persistent = nullptr;
        // (Not beside a distributed tier: its index of which node holds what starts empty.)
        if (o.kind == TierKind::kDisk && o.policy != "belady" && !distributed_) {
          // A disk tier outlives the variant (a warm restart), unless it is cleared.
          const std::string key = fmt::format("{}|{}|{}|{}|{}", o.path, s_.seed, n_, max_bytes_, k);
          auto& p = sim_.disks_[key];
          if (!p || o.clear || p->capacity_bytes() != o.capacity || p->name() != o.policy) {
            p = EvictionPolicy::Make(o.policy, o.capacity, n_, nullptr);
          }
          persistent = p.get();
        }
        node.tiers.emplace_back(o, n_, max_bytes_, oracle_.get(), persistent);
        if (o.kind == TierKind::kDisk && node.disk_model < 0) {
          SimulatedStorageOptions d;
          d.bandwidth_bytes_per_second = o.read_bandwidth;
          d.latency_p50_seconds = o.read_latency;
          d.latency_p99_seconds = o.read_latency * 4;
          d.max_inflight = s_.loader.io.io_depth;
          node.disk_model = static_cast<int>(models_.size());
          models_.push_back({std::make_unique<StorageModel>(d, s_.seed + 1 + k, max_bytes_, 0.0),
                             kInf, static_cast<int>(t)});
        }
      }
      if (distributed_) {
        SimulatedStorageOptions nic;
        nic.bandwidth_bytes_per_second = c.network_bandwidth;
        nic.max_inflight = 1u << 20;
        node.nic_model = static_cast<int>(models_.size());
        models_.push_back({std::make_unique<StorageModel>(nic, s_.seed, max_bytes_, 0.0), kInf,
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

  const std::vector<uint64_t>& Order(uint64_t epoch) {
    auto it = orders_.find(epoch);
    if (it != orders_.end()) return it->second;
    if (orders_.size() >= 4) orders_.erase(orders_.begin());  // the oldest epoch is done
    auto& v = orders_[epoch];
    sampler_->Order(epoch, v);
    return v;
  }

  void Arm(int m) {
    if (m == 0) return;  // the shared storage is polled by the main loop
    Model& md = models_[m];
    const double next = md.model->NextEventTime();
    if (next < md.armed_at) {
      md.armed_at = next;
      Push(next, kModel, static_cast<uint32_t>(m), 0);
    }
  }

  void Dispatch(const Event& e) {
    switch (e.kind) {
      case kModel: {
        Model& md = models_[e.a];
        if (e.t != md.armed_at) return;  // superseded by an earlier arming
        md.armed_at = kInf;
        done_.clear();
        md.model->Advance(e.t, done_);
        Arm(static_cast<int>(e.a));
        for (const StorageModel::Completion& c : done_) OnRead(md.tier, c);
        return;
      }
      case kLookupsDone:
        SubmitReads(e.a, static_cast<int>(e.b), e.t);
        return;
      case kChunkDone:
        OnChunkDone(e.a, static_cast<int>(e.b), e.t);
        return;
      case kCopyDone:
        OnCopyDone(e.a, e.b, e.t);
        return;
      case kStepEnd:
        OnStepEnd(e.b, e.t);
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

  // The fetcher of rank r starts every batch it may (one at a time: the lookups take time).
  void TryFetch(uint32_t r, double t) {
    Rank& rk = ranks_[r];
    if (rk.fetcher_busy || rk.next_fetch >= total_) return;
    const uint64_t b = rk.next_fetch;
    if (b > device_batch_ + s_.loader.prefetch || rk.free_slots.empty()) return;
    const int sl = rk.free_slots.back();
    rk.free_slots.pop_back();
    rk.slot_of_batch[b] = sl;
    rk.next_fetch++;
    StartBatch(r, b, sl, t);
  }

  void StartBatch(uint32_t r, uint64_t b, int sl, double t) {
    Rank& rk = ranks_[r];
    Node& node = nodes_[rk.node];
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
    const size_t local = node.tiers.size();
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
        if (node.tiers[k].Lookup(id, slot.access[i])) {
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
        copy_seconds += sizes_[id] / sim_.host_.memcpy_bytes_per_second;
        continue;
      }
      if (found < 0 && memory_storage_) {
        // MemoryStorage copies inside Submit, on the fetcher's thread.
        copy_seconds += sizes_[id] / sim_.host_.memcpy_bytes_per_second;
        copy_seconds +=
            AdmitLocal(r, id, slot.access[i], local) / sim_.host_.fresh_write_bytes_per_second;
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

  // The fetcher's lookups are done: its reads go out; it may start the next batch.
  void SubmitReads(uint32_t r, int sl, double t) {
    Rank& rk = ranks_[r];
    Node& node = nodes_[rk.node];
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
          models_[node.disk_model].model->Submit(token, bytes, t);
        } else {  // distributed: from a peer over this node's link
          models_[node.nic_model].model->Submit(token, bytes, t);
        }
      }
      Arm(0);
      if (node.disk_model >= 0) Arm(node.disk_model);
      if (node.nic_model >= 0) Arm(node.nic_model);
    }
    TryFetch(r, t);
  }

  void OnRead(int tier, const StorageModel::Completion& c) {
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
      admitted = AdmitLocal(r, id, slot.access[i], nodes_[rk.node].tiers.size());
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
        error_ = fmt::format("reading sample {} failed after {} attempt(s): {}", id,
                             slot.attempts[i] + 1,
                             c.result < 0 ? std::strerror(static_cast<int>(-c.result))
                                          : fmt::format("{} of {} bytes", c.result, bytes));
        return;
      }
    }
    // Completions are handed over one at a time on the rank's receiving thread (the storage's
    // completion thread in a real run): it lands the bytes (receive_bytes_per_second) and
    // copies admitted ones into the RAM tier (fresh arena pages, so at the first-touch rate).
    // Later completions wait behind it.
    double cost = admitted / sim_.host_.fresh_write_bytes_per_second;
    if (tier < 0 && c.result > 0) cost += c.result / sim_.host_.receive_bytes_per_second;
    const double received = std::max(c.time, rk.receiver_free) + cost;
    rk.receiver_free = received;
    if (received > c.time) {
      Push(received, kReceived, r, c.token);
      return;
    }
    Received(r, sl, c.time);
  }

  void Received(uint32_t r, int sl, double t) {
    if (--ranks_[r].slots[sl].pending == 0) FetchDone(r, sl, t);
  }

  // Offers a sample to the node's tiers [0, upto), keeping the distributed index.
  // Returns the bytes admitted into RAM tiers.
  uint64_t AdmitLocal(uint32_t r, uint64_t id, uint64_t access, size_t upto) {
    Node& node = nodes_[ranks_[r].node];
    uint64_t copied = 0;
    for (size_t k = 0; k < upto && k < node.tiers.size(); ++k) {
      evicted_.clear();
      const bool in = node.tiers[k].Admit(id, sizes_[id], access, evicted_);
      if (in && tier_kind_[k] == kRamTier) copied += sizes_[id];
      if (!distributed_) continue;
      if (in) holders_[id]++;
      for (uint64_t v : evicted_) holders_[v] -= holders_[v] > 0;
    }
    return copied;
  }

  void FetchDone(uint32_t r, int sl, double t) {
    Rank& rk = ranks_[r];
    Slot& slot = rk.slots[sl];
    slot.fetch_done = t;
    if (!plan_.preprocess_stage) {
      slot.preprocess_done = t;
      MarkReady(r, sl, t);
      return;
    }
    rk.fetched.push_back(sl);
    DispatchWorkers(rk.node, t);
  }

  // CPU seconds of preprocessing sample i of a slot; `slowdown` is the calibrated work's
  // speed with the node's cores as busy as they are now.
  double SampleCost(const Slot& slot, uint32_t i, double slowdown) const {
    if (slot.dropped[i]) return 0;
    const double bytes = static_cast<double>(sizes_[slot.ids[i]]);
    double c = s_.loader.preprocess.cost * slowdown;
    if (plan_.verify) c += bytes / sim_.host_.verify_bytes_per_second;
    if (plan_.normalize) c += bytes / sim_.host_.normalize_bytes_per_second;
    return c;
  }

  // Idle workers take chunks of fetched batches while the node has a free core; ranks of the
  // node take turns.
  void DispatchWorkers(uint32_t k, double t) {
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
      const HostModel& h = sim_.host_;
      const double busy = static_cast<double>(cores_ - node.free_cores + 1);
      const double share = cores_ > 1 ? std::min(1.0, (busy - 1) / (cores_ - 1)) : 0.0;
      const double slowdown =
          h.burn_seconds_per_second +
          share * (h.burn_all_cores_seconds_per_second - h.burn_seconds_per_second);
      double cost = 0;
      for (uint32_t i = begin; i < end; ++i) cost += SampleCost(slot, i, slowdown);
      worker_busy_ += cost;
      rk.idle_workers--;
      node.free_cores--;
      Push(t + cost, kChunkDone, r, static_cast<uint64_t>(sl));
    }
  }

  void OnChunkDone(uint32_t r, int sl, double t) {
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

  void MarkReady(uint32_t r, int sl, double t) {
    Rank& rk = ranks_[r];
    rk.ready[rk.slots[sl].batch] = 1;
    TryCopy(r, t);
  }

  // The copy stage: in batch order, at most one batch ahead of the device.
  void TryCopy(uint32_t r, double t) {
    Rank& rk = ranks_[r];
    const uint64_t b = rk.next_copy;
    if (rk.copy_busy || b >= total_ || !rk.ready[b] || b > device_batch_ + 1) return;
    rk.copy_busy = true;
    rk.copy_started = t;
    const Slot& slot = rk.slots[rk.slot_of_batch[b]];
    const double bytes = static_cast<double>(slot.count - slot.skipped) * plan_.staged_stride;
    const double seconds = bytes / copy_rate_;
    copy_seconds_ += seconds;
    Push(t + seconds, kCopyDone, r, b);
  }

  void OnCopyDone(uint32_t r, uint64_t b, double t) {
    Rank& rk = ranks_[r];
    const int sl = rk.slot_of_batch[b];
    Slot& slot = rk.slots[sl];
    BatchRecord& rec = records_[b];
    rec.skipped += slot.skipped;
    if (copied_count_[b] == 0 || slot.fetch_start < rec.fetch_start)
      rec.fetch_start = slot.fetch_start;
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

  void TryStep(double t) {
    const uint64_t b = device_batch_;
    if (step_running_ || b >= total_ || copied_count_[b] < ranks_.size()) return;
    BatchRecord& rec = records_[b];
    rec.step_start = t;
    rec.step_end = t + s_.gpu.step_time;
    rec.step_busy = s_.gpu.step_time;
    step_running_ = true;
    Push(rec.step_end, kStepEnd, 0, b);
  }

  void OnStepEnd(uint64_t b, double t) {
    step_running_ = false;
    records_[b].queues = SampleQueues(0, b);
    device_batch_ = b + 1;
    steps_done_ = b + 1;
    end_ = t;
    for (uint32_t r = 0; r < ranks_.size(); ++r) {
      TryFetch(r, t);
      TryCopy(r, t);
    }
    TryStep(t);
  }

  QueueDepths SampleQueues(uint32_t r, uint64_t step) const {
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

  std::vector<uint64_t> Evictions() const {
    std::vector<uint64_t> e(s_.cache_tiers.size(), 0);
    for (const Node& node : nodes_) {
      for (size_t k = 0; k < node.tiers.size(); ++k) e[k] += node.tiers[k].evictions();
    }
    return e;
  }

  void Finish(SimulationResult& out) {
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
    rec.worker_busy_seconds = worker_busy_;
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
      for (const Node& node : nodes_) {
        const TierStats t = node.tiers[k].Stats();
        sum.name = t.name;
        sum.policy = t.policy;
        sum.hits += t.hits;
        sum.misses += t.misses;
        sum.evictions += t.evictions;
        sum.bytes_held += t.bytes_held;
        sum.capacity += t.capacity;
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
    out.stats.simulated_seconds = end_;
  }

  Simulator& sim_;
  const Scenario& s_;

  // Constant after Setup().
  uint64_t n_ = 0, per_rank_ = 0, batches_per_epoch_ = 0, total_ = 0;
  std::vector<uint64_t> sizes_;
  uint64_t max_bytes_ = 0;
  bool can_verify_ = true;
  bool memory_storage_ = false, distributed_ = false;
  RunPlan plan_;
  uint32_t cores_ = 1;  // per node
  double copy_rate_ = 1;
  std::string device_name_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<EpochOrderOracle> oracle_;

  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  uint64_t seq_ = 0, events_ = 0;
  std::vector<Model> models_;        // 0: the storage
  std::vector<TierRole> tier_kind_;  // per cache.tiers entry
  std::vector<Node> nodes_;
  std::vector<Rank> ranks_;
  std::vector<uint16_t> holders_;  // distributed: how many node tiers hold each id
  std::map<uint64_t, std::vector<uint64_t>> orders_;
  std::vector<BatchRecord> records_;
  std::vector<uint32_t> copied_count_;
  std::vector<std::vector<uint64_t>> epoch_snapshots_;
  std::vector<uint8_t> snapshot_taken_;
  std::vector<StorageModel::Completion> done_;
  std::vector<uint64_t> evicted_;
  std::vector<uint64_t> skipped_;
  uint64_t device_batch_ = 0, steps_done_ = 0;
  bool step_running_ = false;
  double end_ = 0, worker_busy_ = 0, copy_seconds_ = 0;
  uint64_t read_errors_ = 0, distributed_hits_ = 0, distributed_misses_ = 0;
  bool failed_ = false;
  std::string error_;
};

Simulator::Simulator(const HostModel& host) : host_(host) {}
Simulator::~Simulator() = default;

SimulationResult Simulator::Run(const Scenario& scenario) {
  Run_ run(*this, scenario);
  return run.Go();
}

VariantResult Simulator::RunVariant(const Scenario& s, SimulationStats* stats, RunRecord* record) {
  SimulationResult r = Run(s);
  if (stats) *stats = r.stats;
  if (r.record.failed) throw RunFailed(s.variant + ": " + r.record.error);
  VariantResult v = Analyze(s.variant, r.record, r.inputs);
  v.gpus = r.stats.ranks;
  v.gpu_hour_cost = s.gpu_hour_cost;
  if (record) *record = std::move(r.record);
  return v;
}

RunPlan Simulator::PlanFor(const Scenario& s) {
  const SimulatedDataset d = LoadDataset(s);
  const uint64_t ranks = static_cast<uint64_t>(s.cluster.nodes) * s.cluster.gpus_per_node;
  return RankPlan(s, d.sizes.size() / std::max<uint64_t>(ranks, 1), d.max_sample_bytes,
                  d.can_verify);
}

Scenario OnThisHost(Scenario s) {
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.cluster.cpus_per_node = 0;  // this host's cores
  s.gpu.device = DeviceKind::kEmulated;
  if (s.has_distributed_tier()) s.cache_tiers.pop_back();
  return s;
}

void CheckSimulatable(const Scenario& s) {
  CheckFaults(s);
  for (size_t i = 0; i < s.cache_tiers.size(); ++i) {
    const TierOptions& t = s.cache_tiers[i];
    if (t.kind == TierKind::kDistributed) continue;
    if (t.capacity == 0) {
      throw BadInput(
          fmt::format("{} (variant {}): cache.tiers.{}.capacity: must be a positive size", s.file,
                      s.variant, i));
    }
    if (t.kind == TierKind::kDisk && t.read_bandwidth <= 0) {
      throw BadInput(fmt::format(
          "{} (variant {}): cache.tiers.{}.bandwidth: a disk tier's read rate must be positive",
          s.file, s.variant, i));
    }
  }
  if (s.has_distributed_tier() && s.cluster.network_bandwidth <= 0) {
    throw BadInput(
        fmt::format("{} (variant {}): cluster.network_bandwidth: a distributed cache tier needs it",
                    s.file, s.variant));
  }
  if (s.loader.prefetch + 1 >= 4096 || s.loader.batch_size >= (1u << 20)) {
    throw BadInput(fmt::format(
        "{} (variant {}): loader: the simulator takes prefetch below 4095 and batch_size below "
        "1048576",
        s.file, s.variant));
  }
  if (static_cast<uint64_t>(s.cluster.nodes) * s.cluster.gpus_per_node > (1u << 24)) {
    throw BadInput(
        fmt::format("{} (variant {}): cluster: at most 16777216 ranks", s.file, s.variant));
  }
}

MaxAccelerators FindMaxAccelerators(Simulator& simulator, const Scenario& base, double target) {
  MaxAccelerators out;
  const uint64_t g = base.cluster.gpus_per_node;
  const uint64_t samples_needed_per_rank = static_cast<uint64_t>(base.loader.batch_size) *
                                           std::max<uint64_t>(1, base.run.warmup_steps + 1);
  std::map<uint32_t, double> seen;
  auto au_at = [&](uint32_t nodes) {
    if (auto it = seen.find(nodes); it != seen.end()) return it->second;
    Scenario s = base;
    s.cluster.nodes = nodes;
    simulator.ForgetDisks();  // every size starts from the same (cold) disks
    const double au = simulator.RunVariant(s).au;
    seen[nodes] = au;
    out.tried.push_back({nodes, nodes * g, au});
    return au;
  };
  // The dataset bounds the search: every rank needs more than its warm-up in samples.
  const uint64_t n = base.storage.kind == StorageKind::kDirectory ? ~0ULL : base.dataset.samples;
  auto fits = [&](uint64_t nodes) { return n / (nodes * g) >= samples_needed_per_rank * 2; };
  if (!fits(1) || au_at(1) < target) return out;
  uint32_t good = 1, bad = 0;
  while (bad == 0) {
    const uint64_t next = static_cast<uint64_t>(good) * 2;
    if (next > (1u << 20)) break;
    if (!fits(next)) {
      out.limited_by_dataset = true;
      break;
    }
    double au;
    try {
      au = au_at(static_cast<uint32_t>(next));
    } catch (const BadInput&) {  // more ranks than a directory has files
      out.limited_by_dataset = true;
      break;
    }
    if (au >= target) {
      good = static_cast<uint32_t>(next);
    } else {
      bad = static_cast<uint32_t>(next);
    }
  }
  while (bad > good + 1) {
    const uint32_t mid = good + (bad - good) / 2;
    if (au_at(mid) >= target) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  out.nodes = good;
  out.accelerators = good * g;
  out.au = seen[good];
  return out;
}

}  // namespace stallscope
