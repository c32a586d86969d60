// The tiered cache in front of storage.
//
// A Cache is an ordered list of tiers (DESIGN.md `cache.tiers`), searched front to back:
// RAM tiers (cache/memory_tier.h) answer at once by copying the sample; a disk tier
// (cache/disk_tier.h) answers "held" and the caller reads it asynchronously with
// ReadAsync(), like a storage read. Bytes read from storage are offered to every tier
// (Admit with upto = num_tiers()); a disk hit is offered to the tiers in front of it (a
// promotion to RAM, when the RAM policy admits it). Each tier runs its own eviction policy
// (cache/policy.h): fill-once, lru, fifo, s3-fifo or belady.
//
// Thread-safety: Lookup(), ReadAsync() and Admit() may be called from many threads at once;
// no global lock is taken (RAM tiers lock one shard of sixteen; the disk tier's lookup is
// one atomic load). Stats() may run concurrently and returns a snapshot.
#ifndef STALLSCOPE_CACHE_CACHE_H_
#define STALLSCOPE_CACHE_CACHE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/names.h"
#include "cache/policy.h"
#include "storage/storage.h"
#include "storage/storage_options.h"

namespace stallscope {

// A set-up error naming the scenario key (cache.tiers.N.KEY); exit code 2.
class CacheError : public BadInput {
 public:
  using BadInput::BadInput;
};

// memory: a RAM arena; disk: a local directory; distributed: the other nodes' tiers (simulate
// only; no capacity of its own, and always the last tier).
enum class TierKind { kMemory, kDisk, kDistributed };
constexpr NameTable<TierKind, 3> kTierKindNames = {{{TierKind::kMemory, "memory"},
                                                    {TierKind::kDisk, "disk"},
                                                    {TierKind::kDistributed, "distributed"}}};
inline const char* NameOf(TierKind k) { return NameOf(kTierKindNames, k); }

// One entry of cache.tiers (scenarios/README.md).
struct TierOptions {
  TierKind kind = TierKind::kMemory;
  std::string path;       // disk only: a directory on a local disk
  uint64_t capacity = 0;  // bytes; a hard bound
  PolicyKind policy = PolicyKind::kFillOnce;
  bool clear = false;  // disk only: start empty, removing what earlier runs left
  // memory only: allowed to be larger than the memory available at start (its pages are taken
  // as it fills); otherwise `run` refuses such a tier (app/budget.h).
  bool overcommit = false;
  // The simulator's model of a disk tier's reads (`bandwidth`, `latency`: p50, p99 = 4 × p50);
  // a local NVMe drive by default. Real runs read the disk.
  double read_bandwidth = 2e9;   // bytes/s
  double read_latency = 100e-6;  // seconds, median

  bool operator==(const TierOptions&) const = default;
};

// Checks a tier's options without building it (nothing is read or kept): a disk tier's path
// must be, or become, a writable directory, and its capacity must fit in the free space plus
// what the cache already holds there. Throws CacheError naming `key`.
void CheckTier(const TierOptions& tier, const std::string& key);

// At most this many tiers (a read's tag carries its tier in 4 bits: pipeline/pipeline.cc).
constexpr int kMaxCacheTiers = 4;

struct TierStats {
  std::string name;  // "memory", "disk"
  std::string policy;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_served = 0;  // disk: bytes delivered on hits (the pipeline counts its own)
  uint64_t evictions = 0;
  uint64_t bytes_held = 0;  // bytes the policy holds (block-rounded)
  uint64_t capacity = 0;
  uint64_t write_drops = 0;       // disk: admissions dropped because every write buffer was busy
  uint64_t bad_entries = 0;       // disk: entries whose checksum or size did not match
  uint64_t entries_at_start = 0;  // disk: entries found on disk when the tier opened
};

class CacheTier {
 public:
  virtual ~CacheTier() = default;
  // True for tiers whose hits are read with ReadAsync() (disk).
  virtual bool is_async() const { return false; }
  // Synchronous tiers copy a held sample into `dst` and return its size; asynchronous tiers
  // return 1 when they hold it (without copying). 0 = miss.
  virtual uint64_t Lookup(uint64_t id, std::byte* dst, uint64_t now) = 0;
  // Asynchronous tiers: reads held samples. A result other than the sample's size (a bad
  // checksum is -EBADMSG, a vanished entry -ENOENT) means the caller must read storage.
  // REQUIRES: each dst is 4096-byte aligned with room for the size rounded up to 4096
  // (reads may be O_DIRECT), and stays valid until its completion.
  virtual void ReadAsync(std::span<const ReadRequest> requests, ReadCallback* callback) {}
  virtual void Admit(uint64_t id, std::span<const std::byte> data, uint64_t now) = 0;
  // Waits for background work (disk writes) to finish.
  virtual void Flush() {}
  virtual TierStats Stats() const = 0;
  virtual std::string Describe() const = 0;
};

class Cache {
 public:
  struct Options {
    std::vector<TierOptions> tiers;
    uint64_t num_samples = 0;
    uint64_t max_sample_bytes = 0;
    const AccessOracle* oracle = nullptr;      // required by belady; must outlive the cache
    std::string dataset_fingerprint;           // disk tiers wipe entries of another dataset
    uint32_t io_depth = IoOptions{}.io_depth;  // disk tier reads in flight
    bool quiet = false;                        // no notices on stderr
  };
  // Throws CacheError naming the key for bad capacities, policies, paths or free space.
  explicit Cache(const Options& options);
  ~Cache();

  bool empty() const { return tiers_.empty(); }
  size_t num_tiers() const { return tiers_.size(); }

  struct Found {
    int tier = -1;       // -1: no tier holds it
    bool async = false;  // true: read it with ReadAsync(tier, ...)
  };
  Found Lookup(uint64_t id, std::byte* dst, uint64_t now);
  void ReadAsync(int tier, std::span<const ReadRequest> requests, ReadCallback* callback);
  // Offers a sample to tiers [0, upto).
  void Admit(uint64_t id, std::span<const std::byte> data, uint64_t now, size_t upto);
  void Flush();

  std::vector<TierStats> Stats() const;
  std::string Describe() const;

 private:
  std::vector<std::unique_ptr<CacheTier>> tiers_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_CACHE_CACHE_H_
