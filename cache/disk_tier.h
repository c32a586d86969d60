// DiskTier: a cache tier of files on a local disk, read and written through io_uring,
// checksummed, crash-safe and warm across runs.
//
// Layout: one file per entry in the tier's directory, named e-ID-SIZE-XXH3 (hex), so the
// directory listing is the index: a restart rebuilds the index by listing it, and the second
// run of a scenario starts with the tier as full as the first one left it. A manifest
// (stallscope-cache.json) records the dataset's fingerprint; entries of another dataset are
// wiped at start.
//
// Writing an entry is one linked io_uring chain: OPENAT tmp-… into a direct descriptor →
// WRITE → FSYNC (data) → CLOSE → RENAMEAT tmp-… to its e-… name. The name appears only after
// the bytes are durable, so after a crash (kill -9 mid-write) the next start finds complete
// entries or tmp- files, which it deletes. Writes are O_DIRECT with 4096-byte aligned buffers
// where the filesystem allows, buffered otherwise (said once). Admission copies the sample
// into one of a fixed pool of write buffers; when all are busy the admission is dropped and
// counted (write_drops) rather than stalling the pipeline.
//
// Reads go through a UringFileReader; every read is checked against the XXH3-64 in its name.
// A bad entry is dropped (unlinked, forgotten by the policy) and reported as -EBADMSG, so
// the caller refetches from storage and never delivers it.
//
// Capacity counts each entry rounded up to 4096-byte blocks and is a hard bound on the
// entries the policy admits.
//
// Thread-safety: all methods may be called concurrently. Lookup() is one atomic load; policy
// updates take the tier's mutex on admission and on read completion.
#ifndef STALLSCOPE_CACHE_DISK_TIER_H_
#define STALLSCOPE_CACHE_DISK_TIER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache.h"
#include "storage/uring_reader.h"

namespace stallscope {

struct DiskTierOptions {
  TierOptions tier;  // path, capacity, policy, clear (the scenario's cache.tiers.N)
  uint64_t num_ids = 0;
  uint64_t max_item_bytes = 0;
  const AccessOracle* oracle = nullptr;
  std::string fingerprint;  // of the dataset; a mismatch wipes the entries
  uint32_t read_depth = IoOptions{}.io_depth;
  // Writes in flight; 0 = 256 MiB worth, between 2 and 256 (so a disk that stalls for a
  // quarter second drops no admissions of a tier filling at 1,000 samples/s).
  uint32_t write_buffers = 0;
  bool quiet = false;
  std::string key = "cache.tiers.0";  // for error messages
};

// What a tier's directory holds, read without changing anything: what a DiskTier opened there
// for the dataset of `fingerprint` would start with (before its capacity is applied), and what
// it would remove.
struct DiskSurvey {
  struct Entry {
    uint64_t id = 0, size = 0, hash = 0;
  };
  bool same_dataset = false;        // the manifest names this dataset
  std::optional<uint64_t> left;     // entries the last run left (its manifest), if it ended
  uint64_t last_drops = 0;          // admissions the last run dropped
  std::vector<Entry> entries;       // complete entries of this dataset, by id
  std::vector<std::string> stale;   // entry files to remove: another dataset's, or damaged
  std::vector<std::string> tmp;     // interrupted writes (tmp- files)
  uint64_t wiped = 0, damaged = 0;  // of `stale`: another dataset's, and short or out of range
};

class DiskTier final : public CacheTier, private FileReadSource, private ReadCallback {
 public:
  // Lists `path` as a tier opened there would, changing nothing. `clear` ignores the last
  // run's record, as a cleared tier does.
  static DiskSurvey Survey(const std::string& path, const std::string& fingerprint,
                           uint64_t num_ids, bool clear);
  // Throws CacheError naming the key: unknown policy, a path that is not a writable
  // directory, a capacity above the free space.
  explicit DiskTier(const DiskTierOptions& options);
  // The checks of the constructor that need no dataset: creates the directory if missing,
  // probes that it is writable, and compares `capacity` with the free space plus the bytes
  // of entries already there. Returns whether O_DIRECT works there. Throws CacheError.
  static bool CheckPath(const std::string& path, uint64_t capacity, const std::string& key);
  ~DiskTier() override;

  bool is_async() const override { return true; }
  uint64_t Lookup(uint64_t id, std::byte* dst, uint64_t now) override;
  void ReadAsync(std::span<const ReadRequest> requests, ReadCallback* callback) override;
  void Admit(uint64_t id, std::span<const std::byte> data, uint64_t now) override;
  void Flush() override;
  TierStats Stats() const override;
  std::string Describe() const override;

  bool direct_io() const { return direct_; }
  uint64_t entries_at_start() const { return entries_at_start_; }
  // Why a warm start found fewer entries than the last run left, or why that run left fewer
  // than it was given (its dropped admissions); empty when there is nothing to explain. Also
  // printed as a notice unless quiet.
  const std::string& start_note() const { return start_note_; }
  std::string EntryPath(uint64_t id) const;

 private:
  enum State : uint8_t { kAbsent = 0, kWriting = 1, kReady = 2 };
  struct Write {
    uint64_t id = 0;
    uint32_t buffer = 0;
    int remaining = 0;  // CQEs still expected for this chain
    int error = 0;
    char tmp[kMaxPath];
    char final[kMaxPath];
  };
  class Writer;

  // FileReadSource
  const char* PathOf(uint64_t id, char* scratch) const override;
  uint64_t BytesOf(uint64_t id) const override { return size_[id]; }
  // ReadCallback (reads of entries)
  void OnReadComplete(const ReadRequest& request, int64_t result) override;

  void ScanDirectory();
  std::string ExplainStart(std::optional<uint64_t> left, uint64_t last_drops, uint64_t interrupted,
                           uint64_t damaged, uint64_t over) const;
  void WriteManifest(std::optional<uint64_t> entries) const;
  // Forgets and unlinks an entry. REQUIRES: mu_ held.
  void DropLocked(uint64_t id);
  // Unlinks an entry's file now, or when its write finishes. REQUIRES: mu_ held.
  void RemoveFileLocked(uint64_t id);
  void FinishWrite(Write& w);

  // Constant after construction.
  const DiskTierOptions options_;
  bool direct_ = false;
  uint64_t buffer_bytes_ = 0;
  uint64_t entries_at_start_ = 0;
  std::string start_note_;

  // Per id. state_ is published with release after size_/hash_ are written.
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
  std::vector<uint64_t> size_;
  std::vector<uint64_t> hash_;
  std::vector<uint64_t> last_access_;      // `now` of the lookup that started a read
  std::vector<uint8_t> drop_after_write_;  // guarded by mu_

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  // Guarded by mu_.
  std::unique_ptr<EvictionPolicy> policy_;
  std::vector<uint64_t> evicted_;
  std::vector<uint32_t> free_buffers_;
  uint32_t writes_in_flight_ = 0;

  std::atomic<uint64_t> hits_{0}, misses_{0}, served_{0}, write_drops_{0}, bad_{0};
  std::atomic<ReadCallback*> user_callback_{nullptr};

  std::vector<std::byte*> buffers_;  // write buffers, aligned
  std::unique_ptr<UringFileReader> reader_;
  std::unique_ptr<Writer> writer_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_CACHE_DISK_TIER_H_
