// CheckpointStore: where a rank's checkpoints go, and where a restore reads them back.
//
// DirectoryCheckpointStore writes real files through io_uring with the disk tier's durable
// pattern: the checkpoint goes to a temporary name (".ckpt-STEP-rRANK.tmp"), is fsynced
// (checkpoint.fsync), renamed to "ckpt-STEP-rRANK.stck" and the directory fsynced, so a crash
// at any moment leaves either the complete checkpoint under its final name or none: a torn
// one never looks whole. The file is the body from offset 0, then one 4096-byte header
// (magic, rank, step, size, the XXH3-64 of the body) at the next 4096-byte boundary; a restore
// reads both through the same ring and checks them. Writes and reads are `block` bytes each,
// `depth` in flight; with checkpoint.direct they are O_DIRECT (the body is padded to 4096 bytes on
// disk; the header keeps its size). Only the newest `keep` checkpoints of the rank stay; older ones
// are removed after each complete write, and temporary files a crash left are removed at
// construction.
//
// SimulatedCheckpointStore sends the same bytes through the scenario's simulated storage
// (SimulatedStorage::Transfer: storage.write's model, beside the loader's reads); it keeps no
// bytes, so a restore there moves the checkpoint's size back through the model and has no
// content to verify.
//
// Thread-safety: one thread at a time per store (the pipeline's checkpoint writer).
#ifndef STALLSCOPE_STORAGE_CHECKPOINT_STORE_H_
#define STALLSCOPE_STORAGE_CHECKPOINT_STORE_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/errors.h"

namespace stallscope {

class SimulatedStorage;

// A checkpoint that could not be written or read back (errno in `error()`): exit 1, or
// skipped, as loader.on_error says (pipeline/checkpointer.h).
class CheckpointError : public RunFailed {
 public:
  CheckpointError(const std::string& what, int error) : RunFailed(what), error_(error) {}
  int error() const { return error_; }

 private:
  int error_;
};

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  // Writes this rank's checkpoint of step `step` durably; returns when it is complete.
  // `data` must be 4096-byte aligned with room for its size rounded up to 4096.
  virtual void Write(uint64_t step, std::span<const std::byte> data) = 0;
  // The step of this rank's newest complete checkpoint; nullopt when there is none.
  virtual std::optional<uint64_t> Latest() const = 0;
  // Steps of this rank's complete checkpoints, oldest first.
  virtual std::vector<uint64_t> Steps() const {
    const std::optional<uint64_t> latest = Latest();
    return latest ? std::vector<uint64_t>{*latest} : std::vector<uint64_t>{};
  }
  // Reads checkpoint `step` into `dst` (exactly its size; aligned as for Write) and checks
  // its header and content. Throws CheckpointError.
  virtual void Read(uint64_t step, std::span<std::byte> dst) = 0;
  // Bytes the target can still take (nullopt: no limit known).
  virtual std::optional<uint64_t> FreeBytes() const { return std::nullopt; }
  // Bytes one checkpoint of `bytes` occupies at the target (header and padding included).
  virtual uint64_t Footprint(uint64_t bytes) const { return bytes; }
  // "directory /mnt/ckpt (fsync, O_DIRECT, 1 MiB writes, 8 in flight)".
  virtual std::string Describe() const = 0;
  // How messages name checkpoint `step`: its path.
  virtual std::string NameOf(uint64_t step) const = 0;
  // A stop: a Write or Read in progress (and any later one) may end soon by throwing
  // CheckpointError(ECANCELED). Any thread. A store whose transfers always end soon ignores it.
  virtual void Cancel() {}
};

struct DirectoryCheckpointOptions {
  std::string path;
  uint32_t rank = 0;
  bool fsync = true;
  bool direct = false;
  uint32_t keep = 2;
  uint64_t block = 1 << 20;
  uint32_t depth = 8;
};

class DirectoryCheckpointStore final : public CheckpointStore {
 public:
  // Creates the directory when missing; throws StorageError when it cannot.
  explicit DirectoryCheckpointStore(const DirectoryCheckpointOptions& options);
  void Write(uint64_t step, std::span<const std::byte> data) override;
  std::optional<uint64_t> Latest() const override;
  void Read(uint64_t step, std::span<std::byte> dst) override;
  // Reads checkpoint `step` (a body of `bytes`) through `depth` recycled buffers of `block`
  // bytes and checks its header and its checksum as the blocks arrive, in file order; the
  // content is not kept. A restore that streams to a GPU through staging buffers costs the
  // host this much, and fio's read job does the same (bench-checkpoint's default read-back).
  // Throws CheckpointError.
  void Verify(uint64_t step, uint64_t bytes);
  // Allocates and touches the buffers Verify reads through (done by the first Verify
  // otherwise): a benchmark calls it untimed, so that no timed read pays their page faults.
  void PrepareVerify();
  std::optional<uint64_t> FreeBytes() const override;
  uint64_t Footprint(uint64_t bytes) const override;
  std::string Describe() const override;
  std::string NameOf(uint64_t step) const override;
  // Steps of this rank's complete checkpoints in the directory, oldest first.
  std::vector<uint64_t> Steps() const override;

 private:
  void Prune();
  // Opens checkpoint `step` and checks its header against this rank, the step and a body of
  // `bytes`; returns the open descriptor and the body's checksum. Throws CheckpointError.
  struct Opened;
  Opened Open(uint64_t step, uint64_t bytes) const;
  const DirectoryCheckpointOptions options_;
  std::unique_ptr<std::byte[], void (*)(void*)> staging_{nullptr, &std::free};  // Verify's
};

// The newest step every rank holds a complete checkpoint of (each rank's steps, any order):
// what a multi-rank restore reads, so that the ranks resume from one step even when a crash
// left some ranks' newest checkpoint unwritten. nullopt when the ranks share none.
std::optional<uint64_t> NewestCommonStep(const std::vector<std::vector<uint64_t>>& per_rank);

class SimulatedCheckpointStore final : public CheckpointStore {
 public:
  // `storage` is borrowed and must outlive the store.
  SimulatedCheckpointStore(SimulatedStorage& storage, uint64_t block, uint32_t depth);
  void Write(uint64_t step, std::span<const std::byte> data) override;
  // The last step written by this process; before any, step 0 (a restore models reading
  // one checkpoint of the scenario's size back).
  std::optional<uint64_t> Latest() const override { return latest_; }
  void Read(uint64_t step, std::span<std::byte> dst) override;
  std::string Describe() const override;
  std::string NameOf(uint64_t step) const override;
  void Cancel() override;  // cancels the simulated storage's reads and transfers

 private:
  SimulatedStorage& storage_;
  const uint64_t block_;
  const uint32_t depth_;
  uint64_t latest_ = 0;
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_CHECKPOINT_STORE_H_
