// The tiered cache in front of storage.
//
// A Cache is an ordered list of tiers searched front to back (DESIGN.md `cache.tiers`). This
// build implements the RAM tier with the fill-once policy — admit until full, never evict,
// the optimal policy when every epoch reads the whole dataset in a fresh shuffle. The
// CacheTier interface is the seam for the disk tier and the other policies (lru, fifo,
// s3-fifo, belady); asking for one of those is a CacheError today.
//
// Thread-safety: Lookup() and Admit() may be called from any number of threads at once; the
// fill-once hit path takes no lock (one acquire load and a copy). Stats() may race with
// them and then returns a consistent-enough snapshot of relaxed counters.
#ifndef STALLSCOPE_CACHE_CACHE_H_
#define STALLSCOPE_CACHE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace stallscope {

class CacheError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TierOptions {
  std::string kind = "memory";  // memory | disk
  std::string path;             // disk only
  uint64_t capacity = 0;        // bytes; a hard bound
  std::string policy = "fill-once";
};

struct TierStats {
  std::string name;  // "memory", "disk"
  std::string policy;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_served = 0;  // bytes copied out on hits
  uint64_t evictions = 0;
  uint64_t bytes_held = 0;
  uint64_t capacity = 0;
};

class CacheTier {
 public:
  virtual ~CacheTier() = default;
  // On a hit copies the sample into `dst` (which must hold its size) and returns its size;
  // returns 0 on a miss.
  virtual uint64_t Lookup(uint64_t sample, std::byte* dst) = 0;
  // Offers a sample's bytes; the policy decides whether to keep them.
  virtual void Admit(uint64_t sample, std::span<const std::byte> data) = 0;
  virtual TierStats Stats() const = 0;
};

class Cache {
 public:
  // `num_samples` bounds the sample ids. Throws CacheError for an unsupported tier or policy.
  Cache(const std::vector<TierOptions>& tiers, uint64_t num_samples);
  ~Cache();

  bool empty() const { return tiers_.empty(); }
  size_t num_tiers() const { return tiers_.size(); }

  // Searches the tiers in order. Returns the index of the tier that hit, or -1.
  int Lookup(uint64_t sample, std::byte* dst);
  // Offers bytes read from storage to every tier.
  void Admit(uint64_t sample, std::span<const std::byte> data);

  std::vector<TierStats> Stats() const;
  std::string Describe() const;

 private:
  std::vector<std::unique_ptr<CacheTier>> tiers_;
};

// The RAM tier with the fill-once policy; exposed for tests.
std::unique_ptr<CacheTier> MakeFillOnceMemoryTier(uint64_t capacity, uint64_t num_samples);

}  // namespace stallscope

#endif  // STALLSCOPE_CACHE_CACHE_H_
