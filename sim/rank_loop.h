// RankLoop: one simulation of one resolved scenario (Simulator::Run builds one per call).
//
// The ranks' loaders as events on a simulated clock: each rank's fetcher (one batch at a time,
// at most `prefetch` ahead of the device, plan.slots staging slots), its cache lookups in the
// node's SimTiers, reads from the shared StorageModel (and disk and network models), the node's
// worker cores (chunks of a batch), the copy (in order, at most one batch ahead), and the
// synchronous step of all ranks. The fetch side is in rank_loop.cc, the workers, copy, step
// and the final record in rank_loop_steps.cc.
//
// Thread-safety: one thread.
#ifndef STALLSCOPE_SIM_RANK_LOOP_H_
#define STALLSCOPE_SIM_RANK_LOOP_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "cache/epoch_oracle.h"
#include "config/scenario.h"
#include "pipeline/run_plan.h"
#include "pipeline/sampler.h"
#include "sim/sim_tier.h"
#include "sim/simulator.h"
#include "storage/storage_model.h"

namespace stallscope {

// The dataset as the simulator sees it: every sample's size (the synthetic dataset's, or the
// directory's files'), and whether its content can be verified.
struct SimulatedDataset {
  std::vector<uint64_t> sizes;
  uint64_t max_sample_bytes = 0;
  bool can_verify = true;
  std::string fingerprint;  // as the real storage's (a disk tier's manifest names it)
};

SimulatedDataset LoadDataset(const Scenario& s);

// Each rank's plan: the Pipeline's own function (pipeline/run_plan.h) over the rank's shard.
RunPlan RankPlan(const Scenario& s, uint64_t samples_per_rank, uint64_t max_sample_bytes,
                 bool can_verify);

class RankLoop {
 public:
  // `disks`, `listed` and `s` are borrowed and must outlive the RankLoop. Every node is charged at
  // s.cluster.node's rates.
  RankLoop(DiskPolicies& disks, ListedDatasets& listed, const Scenario& s)
      : node_(s.cluster.node), disks_(disks), listed_(listed), s_(s) {}

  SimulationResult Go();

 private:
  static constexpr double kNever = StorageModel::kNever;
  enum Kind : uint32_t {
    kModel,
    kLookupsDone,
    kChunkDone,
    kCopyDone,
    kCpuDone,
    kStepEnd,
    kRetry,
    kReceived,
    kSnapshotDone,
    kEvicted
  };
  // Model tokens of checkpoint writes: this bit and the rank.
  static constexpr uint64_t kCheckpointToken = 1ULL << 63;
  // checkpoint.*: every rank writes its share into `model` after the steps the schedule names
  // (rank_loop_checkpoint.cc).
  struct Checkpoints {
    bool enabled = false, async = false;
    uint64_t rank_bytes = 0;
    uint64_t blocks = 0, block = 0, last = 0;  // each rank's writes
    uint32_t depth = 1;
    int model = 0;                // models_ index: 0 = the storage (storage.write.shared)
    double snapshot = 0;          // seconds the device waits for a snapshot
    bool blocking = false;        // the device waits for a checkpoint
    bool snapshot_waits = false;  // async: the next snapshot waits for the writes in flight
    uint32_t pending_ranks = 0;   // ranks with writes left
    std::vector<uint64_t> left, inflight;  // per rank
    // Per rank: when its own writes of the last span ended, and when its own device could
    // resume (for the step released_step): its own writes, or its own snapshot, done. The
    // rest of a rank's wait, for the other ranks' writes, is sync.
    std::vector<double> rank_done, rank_released;
    uint64_t released_step = UINT64_MAX;
    uint64_t next_step = 0;  // the step the device waits to start
    size_t writing = 0;      // the span whose writes are in flight
    std::unique_ptr<CheckpointSchedule> schedule;
    std::vector<CheckpointSpan> spans;
  };
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
    double armed_at = kNever;  // the time of the kModel event in the queue, or kNever
    int tier = -1;             // the cache tier it serves (-1: storage)
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
    uint32_t cache = 0;  // its CacheSet
    // Its milestones of the batches it has copied and not yet stepped (at most two: batch b
    // in copied[b & 1]), for its own split of the stall before the step (BatchRecord::ranks_split).
    struct Copied {
      double fetch_done = 0, preprocess_done = 0, copy_done = 0;
    } copied[2];
    std::vector<Slot> slots;
    std::vector<int> free_slots;
    std::vector<int> slot_of_batch;
    std::vector<uint8_t> ready;
    uint64_t next_fetch = 0;
    uint64_t fetched_batches = 0;  // batches whose reads have all come in
    uint64_t epochs_evicted = 0;   // a cold directory: epochs whose eviction is done
    bool fetcher_busy = false;
    std::deque<int> fetched;  // slots waiting for the workers, in batch order
    uint32_t idle_workers = 0;
    uint64_t next_copy = 0;
    bool copy_busy = false;
    double copy_started = 0;
    double receiver_free = 0;  // when its receiving thread is done with what it has
  };
  // One set of local cache tiers (not the distributed tier) and its disk's read model: one
  // per node (cache.scope: node) or per rank (rank).
  struct CacheSet {
    std::vector<SimTier> tiers;
    int disk_model = -1;
  };
  // A piece of the node's CPU work: a worker's chunk, an emulated device's input copy, or what
  // a directory read costs the host's cores (host_per_read), which nothing waits for.
  enum JobKind : uint8_t { kChunkJob, kCopyJob, kHostJob };
  struct CpuJob {
    double done_at = 0;  // the node's `served` at which it ends
    uint64_t seq = 0;
    JobKind kind = kChunkJob;
    uint32_t rank = 0;
    uint64_t arg = 0;  // chunk: the slot; copy: the batch
    bool operator>(const CpuJob& o) const {
      return done_at != o.done_at ? done_at > o.done_at : seq > o.seq;
    }
  };
  struct Node {
    uint32_t free_cores = 0;
    int nic_model = -1;
    double nic_free = 0;     // when the NIC has passed on the storage bytes it was given
    uint32_t next_rank = 0;  // round-robin start when a core frees
    // The node's cores shared (issue #18), processor sharing: the workers' chunks and the
    // emulated input copies in progress each run at min(1, cores / runnable) of a core, where
    // runnable is how many there are plus the I/O threads' share (ReaderLoad). `served` is the
    // service each has had since the start (virtual time, advanced to `served_at`); a job ends
    // when it reaches the job's done_at. Only the kCpuDone event of `generation` is current.
    // (The I/O threads' share is read as jobs start and end, not as each read does.)
    double served = 0, served_at = 0;
    uint64_t generation = 0, job_seq = 0;
    std::priority_queue<CpuJob, std::vector<CpuJob>, std::greater<>> jobs;
    size_t host_jobs = 0;  // of `jobs`, the reads' host work (kHostJob)
  };

  void Push(double t, Kind kind, uint32_t a, uint64_t b);
  static uint64_t Token(uint32_t rank, int slot, uint32_t i);

  void Setup();
  SimulatedDataset Dataset() const;
  uint64_t AdmitEntriesOnDisk(const TierOptions& o, EvictionPolicy& policy) const;
  void SetupCaches(uint64_t ranks, size_t local_tiers);
  // The nodes' cores and what a directory read costs them (cpu_per_read, read_wait_busy,
  // read_wait_partial, host_per_read); after the storage model (models_[0]) is made.
  void SetupCores();

  const std::vector<uint64_t>& Order(uint64_t epoch);

  void Arm(int m);

  void Dispatch(const Event& e);

  // The fetcher of rank r starts every batch it may (one at a time: the lookups take time).
  void TryFetch(uint32_t r, double t);

  void StartBatch(uint32_t r, uint64_t b, int sl, double t);

  // The fetcher's lookups are done: its reads go out; it may start the next batch.
  void SubmitReads(uint32_t r, int sl, double t);

  void OnRead(int tier, const StorageModel::Completion& c);

  void Received(uint32_t r, int sl, double t);

  // Offers a sample to the node's tiers [0, upto), keeping the distributed index.
  // Returns the bytes admitted into RAM tiers.
  uint64_t AdmitLocal(uint32_t r, uint64_t id, uint64_t access, size_t upto);

  void FetchDone(uint32_t r, int sl, double t);

  // CPU seconds of preprocessing sample i of a slot (counted in usage_); `slowdown` is the
  // calibrated work's speed with the node's cores as busy as they are now.
  double SampleCost(const Slot& slot, uint32_t i, double slowdown);
  // The node's CPU work under processor sharing (Node::jobs): `work` seconds of one core.
  void StartCpu(uint32_t k, double t, double work, JobKind kind, uint32_t r, uint64_t arg);
  void AdvanceCpu(Node& node, double t) const;
  double CpuRate(const Node& node) const;  // of a core, each job's share now
  void ScheduleCpu(uint32_t k, double t);
  void OnCpuDone(uint32_t k, uint64_t generation, double t);
  // The I/O threads' share of a core: the reads in flight (this node's share of them), each
  // busy for cpu_per_read of its latency, at most the node's I/O threads.
  double ReaderLoad() const;

  // Idle workers take chunks of fetched batches while the node has a free core; ranks of the
  // node take turns.
  void DispatchWorkers(uint32_t k, double t);

  void OnChunkDone(uint32_t r, int sl, double t);

  void MarkReady(uint32_t r, int sl, double t);

  // The copy stage: in batch order, at most one batch ahead of the device.
  void TryCopy(uint32_t r, double t);

  void OnCopyDone(uint32_t r, uint64_t b, double t);

  void TryStep(double t);

  void SetupCheckpoints();
  // After step `b` ended at `t`: begins a checkpoint when one is due.
  void MaybeCheckpoint(uint64_t b, double t);
  void OnSnapshotDone(double t);
  void FeedWrites(uint32_t r, double t);
  void OnCheckpointWrite(uint32_t r, double t);
  void ReleaseDevice(double t);

  void OnStepEnd(uint64_t b, double t);

  QueueDepths SampleQueues(uint32_t r, uint64_t step) const;

  std::vector<uint64_t> Evictions() const;

  void Finish(SimulationResult& out);

  const NodeOptions& node_;
  DiskPolicies& disks_;
  ListedDatasets& listed_;
  const Scenario& s_;

  // Constant after Setup().
  uint64_t n_ = 0, per_rank_ = 0, batches_per_epoch_ = 0, total_ = 0;
  std::vector<uint64_t> sizes_;
  uint64_t max_bytes_ = 0;
  bool can_verify_ = true;
  std::string fingerprint_;
  bool memory_storage_ = false, distributed_ = false;
  RunPlan plan_;
  uint32_t cores_ = 1;  // per node
  double copy_rate_ = 1;
  bool cpu_copy_ = false;  // the emulated device: its input copy is the host's CPU work
  // Whether a node's CPU work can ever outnumber its cores (the workers fill at most the
  // cores; copies and reads come on top): else every job runs at full speed, timed directly.
  bool shared_cores_ = false;
  double reader_threads_ = 0;  // a node's I/O threads where reads cost CPU (cpu_per_read), else 0
  std::vector<CpuJob> cpu_done_;  // OnCpuDone's jobs ending at one time (kept: no allocation)
  double cpu_per_read_ = 0;       // a directory's storage.model.cpu_per_read_seconds
  double host_per_read_ = 0;      // its host_per_read_seconds where the cores are shared, else 0
  double nic_ = 0;  // node.nic for a shared (simulated) storage's reads; 0 = no NIC in the way
  // A cold directory (DirectoryStorage::BeginEpoch): each rank's fetcher starts an epoch only
  // once the last one's reads have come in, then drops the directory from the page cache
  // (storage.model.evict_seconds).
  bool epoch_barrier_ = false;
  std::string device_name_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<EpochOrderOracle> oracle_;

  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  uint64_t seq_ = 0, events_ = 0;
  std::vector<Model> models_;        // 0: the storage
  std::vector<TierRole> tier_kind_;  // per cache.tiers entry
  std::vector<Node> nodes_;
  std::vector<CacheSet> caches_;
  std::vector<StageSeconds> rank_stalls_;  // multi-rank: each rank's own split, measured steps
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
  NodeUsage usage_;
  uint64_t read_errors_ = 0, distributed_hits_ = 0, distributed_misses_ = 0;
  bool failed_ = false;
  std::string error_;
  Checkpoints ckpt_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_RANK_LOOP_H_
