// Synthetic datasets: MemoryStorage and SimulatedStorage.
//
// Both serve the deterministic content of storage/content.h, so every delivered byte can be
// verified. MemoryStorage generates the whole dataset once at construction and serves reads
// with a memcpy inside Submit(): it measures the pipeline alone. SimulatedStorage models a
// remote or shared storage system with StorageModel (storage/storage_model.h: latency,
// shared bandwidth, IOPS, max in flight, faults) on real time: its timers run on one
// Boost.Asio io_context thread owned by the storage.
//
// Thread-safety: Submit() is safe from any thread; completions arrive on the storage thread
// (SimulatedStorage) or inside Submit() (MemoryStorage).
#ifndef STALLSCOPE_STORAGE_SYNTHETIC_H_
#define STALLSCOPE_STORAGE_SYNTHETIC_H_

#include <memory>
#include <vector>

#include "base/seed.h"
#include "storage/storage.h"
#include "storage/storage_model.h"
#include "storage/storage_options.h"

namespace stallscope {

struct SyntheticDataset {
  DatasetOptions dataset;  // samples, sample_size (the mean), sample_size_stdev, classes
  uint64_t seed = kDefaultSeed;
};

// The dataset's identity as a disk tier's manifest records it (Storage::Fingerprint()).
std::string SyntheticFingerprint(const SyntheticDataset& dataset);

// Shared behaviour of the two synthetic storages: sizes, labels, verification.
class SyntheticStorage : public Storage {
 public:
  explicit SyntheticStorage(const SyntheticDataset& dataset);
  uint64_t num_samples() const override { return dataset_.dataset.samples; }
  uint64_t SampleBytes(uint64_t sample) const override { return sizes_[sample]; }
  uint64_t max_sample_bytes() const override { return max_bytes_; }
  uint32_t Label(uint64_t sample) const override;
  bool can_verify() const override { return true; }
  bool Verify(uint64_t sample, std::span<const std::byte> data) const override;
  std::string Fingerprint() const override;

 protected:
  uint64_t Key(uint64_t sample) const;

  // Constant after construction.
  const SyntheticDataset dataset_;
  std::vector<uint64_t> sizes_;
  uint64_t max_bytes_ = 0;
};

class MemoryStorage final : public SyntheticStorage {
 public:
  explicit MemoryStorage(const SyntheticDataset& dataset);
  void Submit(std::span<const ReadRequest> requests, ReadCallback* callback) override;
  std::string Describe() const override;

 private:
  std::vector<uint64_t> offsets_;
  std::unique_ptr<std::byte[]> bytes_;
};

class SimulatedStorage final : public SyntheticStorage {
 public:
  // `shared`: the budget this storage shares with the other ranks of this host (multi-rank
  // runs; storage_model.h), or nullptr for a storage of its own.
  SimulatedStorage(const SyntheticDataset& dataset, const SimulatedStorageOptions& options,
                   SharedStorageBudget* shared = nullptr);
  ~SimulatedStorage() override;
  void Submit(std::span<const ReadRequest> requests, ReadCallback* callback) override;
  std::string Describe() const override;
  // Moves `bytes` through the model beside the reads (a checkpoint's writes with `write`,
  // its restore without) in `block`-byte requests, at most `depth` in flight; blocks until
  // the last completes (true) or CancelReads() cuts it short (false). Any thread; transfers
  // run one at a time.
  bool Transfer(uint64_t bytes, uint64_t block, uint32_t depth, bool write);
  // A stop: reads in flight complete with -ECANCELED, transfers return false (see Transfer).
  void CancelReads() override;

 private:
  class Engine;
  std::unique_ptr<Engine> engine_;
  SimulatedStorageOptions options_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_SYNTHETIC_H_
