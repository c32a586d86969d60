#include "storage/checkpoint_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>

#include "base/align.h"
#include "base/units.h"
#include "storage/storage.h"
#include "storage/synthetic.h"
#include "storage/uring_ring.h"

namespace stallscope {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'T', 'L', 'S', 'C', 'K', 'P', 'T'};
// Version 2 keeps the header after the body (version 1 had it first): the body starts at
// offset 0, so its blocks line up with the page cache's folios, which a body 4096 bytes in
// does not (reading that back through the page cache ran at a third of the speed here).
constexpr uint32_t kVersion = 2;

// The last 4096 bytes of a checkpoint file, at RoundUp(body, 4096).
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t rank;
  uint64_t step;
  uint64_t bytes;  // of the body
  uint64_t hash;   // XXH3-64 of the body
};

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using Aligned = std::unique_ptr<std::byte[], AlignedFree>;
Aligned AllocateBlock() {
  return Aligned(static_cast<std::byte*>(std::aligned_alloc(kBlockBytes, kBlockBytes)));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// One region of a file: `bytes` at `offset` from or into `buffer`.
struct Piece {
  uint64_t offset;
  std::byte* buffer;
  uint64_t bytes;
};

// Whether a completion moved all `expected` bytes; if not, the first failure is kept in
// `error`: the completion's -errno, or `short_error` for a short transfer.
bool Whole(int res, uint64_t expected, int short_error, int& error) {
  if (res >= 0 && static_cast<uint64_t>(res) == expected) return true;
  if (error == 0) error = res < 0 ? res : short_error;
  return false;
}

// Moves every piece (writes with `write`), at most `depth` in flight on an io_uring, or
// with pread/pwrite where io_uring is refused; `before(k)`, when given, runs just before
// piece k goes out, in order, and `after(k)` once it is complete, in any order. Returns 0 or
// -errno; a short transfer is -ENOSPC for a write (a full disk) and -EIO for a read (a file
// shorter than its header says).
int Transfer(int fd, const std::vector<Piece>& pieces, uint32_t depth, bool write,
             const std::function<void(size_t)>& before = {},
             const std::function<void(size_t)>& after = {}) {
  UringRing ring(depth, 0);
  if (!ring.ok()) {
    for (size_t k = 0; k < pieces.size(); ++k) {
      const Piece& p = pieces[k];
      if (before) before(k);
      const ssize_t n = write ? pwrite(fd, p.buffer, p.bytes, static_cast<off_t>(p.offset))
                              : pread(fd, p.buffer, p.bytes, static_cast<off_t>(p.offset));
      if (n < 0) return -errno;
      if (static_cast<uint64_t>(n) != p.bytes) return write ? -ENOSPC : -EIO;
      if (after) after(k);
    }
    return 0;
  }
  size_t next = 0, inflight = 0;
  int error = 0;
  while (next < pieces.size() || inflight > 0) {
    while (error == 0 && next < pieces.size() && inflight < depth) {
      const Piece& p = pieces[next];
      if (before) before(next);
      io_uring_sqe* sqe = ring.GetSqe();
      if (write) {
        io_uring_prep_write(sqe, fd, p.buffer, static_cast<unsigned>(p.bytes), p.offset);
      } else {
        io_uring_prep_read(sqe, fd, p.buffer, static_cast<unsigned>(p.bytes), p.offset);
      }
      io_uring_sqe_set_data64(sqe, next);
      ++next;
      ++inflight;
    }
    if (inflight == 0) break;
    const int rc = ring.Wait();
    if (rc < 0 && rc != -EINTR && rc != -ETIME) return rc;
    ring.ForEachCompletion([&](uint64_t tag, int res) {
      --inflight;
      if (Whole(res, pieces[tag].bytes, write ? -ENOSPC : -EIO, error) && after) after(tag);
    });
  }
  return error;
}

// Reads `bytes` from file offset `offset` in pieces of `block` through `depth` buffers of
// `block` bytes each at `buffers` (piece k into buffer k % depth), at most `depth` in flight,
// and hands each piece to `use` in file order as soon as it and every piece before it are in.
// A buffer is reused only after `use` returned for the piece it held. With pread where
// io_uring is refused. Returns 0 or -errno (-EIO for a short read); after a failed read it
// waits for the reads still in flight.
int Stream(int fd, uint64_t offset, uint64_t bytes, uint64_t block, uint32_t depth,
           std::byte* buffers, const std::function<void(std::span<const std::byte>)>& use) {
  const uint64_t count = (bytes + block - 1) / block;
  auto length = [&](uint64_t k) { return std::min(block, bytes - k * block); };
  auto buffer = [&](uint64_t k) { return buffers + (k % depth) * block; };
  UringRing ring(depth, 0);
  if (!ring.ok()) {
    for (uint64_t k = 0; k < count; ++k) {
      const ssize_t n = pread(fd, buffer(k), length(k), static_cast<off_t>(offset + k * block));
      if (n < 0) return -errno;
      if (static_cast<uint64_t>(n) != length(k)) return -EIO;
      use({buffer(k), length(k)});
    }
    return 0;
  }
  std::vector<char> in(count, 0);
  uint64_t next = 0, used = 0, inflight = 0;
  int error = 0;
  while ((error == 0 && used < count) || inflight > 0) {
    while (error == 0 && next < count && next - used < depth) {
      io_uring_sqe* sqe = ring.GetSqe();
      io_uring_prep_read(sqe, fd, buffer(next), static_cast<unsigned>(length(next)),
                         offset + next * block);
      io_uring_sqe_set_data64(sqe, next);
      ++next;
      ++inflight;
    }
    const int rc = ring.Wait();
    if (rc < 0 && rc != -EINTR && rc != -ETIME) return rc;
    ring.ForEachCompletion([&](uint64_t tag, int res) {
      --inflight;
      if (Whole(res, length(tag), -EIO, error)) in[tag] = 1;
    });
    while (error == 0 && used < count && in[used]) {
      use({buffer(used), length(used)});
      ++used;
    }
  }
  return error;
}

// A streaming XXH3-64, reset.
class XxhState {
 public:
  XxhState() : state_(XXH3_createState()) {
    if (state_ == nullptr) throw std::bad_alloc();
    XXH3_64bits_reset(state_);
  }
  ~XxhState() { XXH3_freeState(state_); }
  XxhState(const XxhState&) = delete;
  XxhState& operator=(const XxhState&) = delete;
  XXH3_state_t* get() const { return state_; }

 private:
  XXH3_state_t* state_;
};

std::string Errno(int negative) { return std::strerror(-negative); }

}  // namespace

DirectoryCheckpointStore::DirectoryCheckpointStore(const DirectoryCheckpointOptions& o)
    : options_(o) {
  std::error_code ec;
  fs::create_directories(o.path, ec);
  if (!fs::is_directory(o.path, ec)) {
    throw StorageError(fmt::format("checkpoint.path: {} is not a directory and cannot be made{}",
                                   o.path, ec ? " (" + ec.message() + ")" : ""));
  }
  if (access(o.path.c_str(), W_OK) != 0) {
    throw StorageError(
        fmt::format("checkpoint.path: {}: cannot write there ({})", o.path, std::strerror(errno)));
  }
  // A crash's leftovers: temporary files of this rank never renamed.
  const std::string suffix = fmt::format("-r{:05}.tmp", o.rank);
  for (const auto& entry : fs::directory_iterator(o.path, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".ckpt-", 0) == 0 && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      fs::remove(entry.path(), ec);
    }
  }
}

std::string DirectoryCheckpointStore::NameOf(uint64_t step) const {
  return fmt::format("{}/ckpt-{:012}-r{:05}.stck", options_.path, step, options_.rank);
}

std::vector<uint64_t> DirectoryCheckpointStore::Steps() const {
  std::vector<uint64_t> steps;
  std::error_code ec;
  const std::string suffix = fmt::format("-r{:05}.stck", options_.rank);
  for (const auto& entry : fs::directory_iterator(options_.path, ec)) {
    const std::string name = entry.path().filename().string();
    unsigned long long step = 0;
    if (name.size() == 5 + 12 + suffix.size() && name.rfind("ckpt-", 0) == 0 &&
        name.compare(17, suffix.size(), suffix) == 0 &&
        std::sscanf(name.c_str() + 5, "%12llu", &step) == 1) {
      steps.push_back(step);
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::optional<uint64_t> DirectoryCheckpointStore::Latest() const {
  const std::vector<uint64_t> steps = Steps();
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

uint64_t DirectoryCheckpointStore::Footprint(uint64_t bytes) const {
  return kBlockBytes + RoundUp(bytes, kBlockBytes);
}

std::optional<uint64_t> DirectoryCheckpointStore::FreeBytes() const {
  struct statvfs st;
  if (statvfs(options_.path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

void DirectoryCheckpointStore::Write(uint64_t step, std::span<const std::byte> data) {
  const std::string final_name = NameOf(step);
  const std::string tmp =
      fmt::format("{}/.ckpt-{:012}-r{:05}.tmp", options_.path, step, options_.rank);
  Aligned header = AllocateBlock();
  std::memset(header.get(), 0, kBlockBytes);
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.rank = options_.rank;
  h.step = step;
  h.bytes = data.size();

  auto fail = [&](const std::string& what, int negative) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw CheckpointError(fmt::format("checkpoint: {} {}: {}", what, tmp, Errno(negative)),
                          -negative);
  };
  Fd f;
  f.fd = open(tmp.c_str(),
              O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (options_.direct ? O_DIRECT : 0), 0644);
  if (f.fd < 0) fail("cannot create", -errno);
  // The whole file's blocks reserved first, as fio does by default: a full disk says so before
  // any byte is written, and the filesystem allocates one extent, not one per write.
  const uint64_t file_bytes = Footprint(data.size());
  if (fallocate(f.fd, 0, 0, static_cast<off_t>(file_bytes)) != 0 && errno != EOPNOTSUPP &&
      errno != ENOSYS) {
    fail("cannot reserve " + FormatBytes(file_bytes) + " for", -errno);
  }
  std::vector<Piece> pieces;
  auto* body = const_cast<std::byte*>(data.data());  // written from, never into
  const uint64_t on_disk = options_.direct ? RoundUp(data.size(), kBlockBytes) : data.size();
  for (uint64_t at = 0; at < on_disk; at += options_.block) {
    pieces.push_back({at, body + at, std::min(options_.block, on_disk - at)});
  }
  pieces.push_back({RoundUp(data.size(), kBlockBytes), header.get(), kBlockBytes});
  // Each block is hashed just before it goes out, while the kernel's copy of it is about to
  // read it anyway; the header goes last, when the body's hash is complete.
  const XxhState state;
  uint64_t hashed = 0;
  const auto hash_then_send = [&](size_t k) {
    if (k + 1 < pieces.size()) {
      const uint64_t take = std::min<uint64_t>(pieces[k].bytes, data.size() - hashed);
      XXH3_64bits_update(state.get(), data.data() + hashed, take);
      hashed += take;
    } else {
      h.hash = XXH3_64bits_digest(state.get());
      std::memcpy(header.get(), &h, sizeof h);
    }
  };
  // With fsync, each piece's writeback starts as soon as it is in the page cache, so the disk
  // writes while later pieces are still being copied; otherwise the kernel would start it only
  // at the fsync (a checkpoint smaller than the dirty threshold), after every copy.
  const auto start_writeback = [&](size_t k) {
    sync_file_range(f.fd, static_cast<off_t>(pieces[k].offset), static_cast<off_t>(pieces[k].bytes),
                    SYNC_FILE_RANGE_WRITE);
  };
  const bool early = options_.fsync && !options_.direct;
  if (const int rc = Transfer(f.fd, pieces, options_.depth, true, hash_then_send,
                              early ? std::function<void(size_t)>(start_writeback) : nullptr);
      rc < 0) {
    fail("writing", rc);
  }
  if (options_.fsync && fdatasync(f.fd) != 0) fail("fsync of", -errno);
  if (close(f.fd) != 0) {
    f.fd = -1;
    fail("closing", -errno);
  }
  f.fd = -1;
  if (rename(tmp.c_str(), final_name.c_str()) != 0) fail("renaming", -errno);
  if (options_.fsync) {
    // The rename itself made durable: the directory's entry.
    Fd dir;
    dir.fd = open(options_.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir.fd >= 0) fsync(dir.fd);
  }
  Prune();
}

void DirectoryCheckpointStore::Prune() {
  const std::vector<uint64_t> steps = Steps();
  const size_t keep = std::max<uint32_t>(options_.keep, 1);
  std::error_code ec;
  for (size_t i = 0; i + keep < steps.size(); ++i) fs::remove(NameOf(steps[i]), ec);
}

struct DirectoryCheckpointStore::Opened {
  int fd = -1;
  uint64_t hash = 0;  // of the body, from the header
  std::string name;
  ~Opened() {
    if (fd >= 0) close(fd);
  }
};

DirectoryCheckpointStore::Opened DirectoryCheckpointStore::Open(uint64_t step,
                                                                uint64_t bytes) const {
  const std::string name = NameOf(step);
  Fd f;
  f.fd = open(name.c_str(), O_RDONLY | O_CLOEXEC | (options_.direct ? O_DIRECT : 0));
  if (f.fd < 0) {
    throw CheckpointError(fmt::format("checkpoint: cannot open {}: {}", name, Errno(-errno)),
                          errno);
  }
  // The header is the last 4096 bytes; a file of the wrong size cannot hold this body.
  struct stat st;
  if (fstat(f.fd, &st) != 0) {
    throw CheckpointError(fmt::format("checkpoint: cannot stat {}: {}", name, Errno(-errno)),
                          errno);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  Aligned header = AllocateBlock();
  Header h{};
  if (size >= kBlockBytes && size % kBlockBytes == 0) {
    if (const int rc = Transfer(f.fd, {{size - kBlockBytes, header.get(), kBlockBytes}}, 1, false);
        rc < 0) {
      throw CheckpointError(fmt::format("checkpoint: reading {}: {}", name, Errno(rc)), -rc);
    }
    std::memcpy(&h, header.get(), sizeof h);
  }
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 && size >= sizeof h &&
      Transfer(f.fd, {{0, header.get(), kBlockBytes}}, 1, false) == 0 &&
      std::memcmp(header.get(), kMagic, sizeof kMagic) == 0) {
    throw CheckpointError(fmt::format("checkpoint: {} was written by an older stallscope (header "
                                      "first); remove it and write a new one",
                                      name),
                          EINVAL);
  }
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion ||
      h.rank != options_.rank || h.step != step ||
      size != RoundUp(h.bytes, kBlockBytes) + kBlockBytes) {
    throw CheckpointError(fmt::format("checkpoint: {} is not a stallscope checkpoint of rank {} "
                                      "step {}",
                                      name, options_.rank, step),
                          EINVAL);
  }
  if (h.bytes != bytes) {
    throw CheckpointError(fmt::format("checkpoint: {} holds {} but this run's checkpoint is {}",
                                      name, FormatBytes(h.bytes), FormatBytes(bytes)),
                          EINVAL);
  }
  const int fd = f.fd;
  f.fd = -1;
  return Opened{fd, h.hash, name};
}

void DirectoryCheckpointStore::Read(uint64_t step, std::span<std::byte> dst) {
  const Opened f = Open(step, dst.size());
  const uint64_t on_disk = options_.direct ? RoundUp(dst.size(), kBlockBytes) : dst.size();
  std::vector<Piece> pieces;
  for (uint64_t at = 0; at < on_disk; at += options_.block) {
    pieces.push_back({at, dst.data() + at, std::min(options_.block, on_disk - at)});
  }
  if (const int rc = Transfer(f.fd, pieces, options_.depth, false); rc < 0) {
    throw CheckpointError(fmt::format("checkpoint: reading {}: {}", f.name, Errno(rc)), -rc);
  }
  if (XXH3_64bits(dst.data(), dst.size()) != f.hash) {
    throw CheckpointError(
        fmt::format("checkpoint: {}: content does not match its checksum", f.name), EIO);
  }
}

void DirectoryCheckpointStore::Verify(uint64_t step, uint64_t bytes) {
  const Opened f = Open(step, bytes);
  const uint64_t on_disk = options_.direct ? RoundUp(bytes, kBlockBytes) : bytes;
  const uint32_t depth = std::max<uint32_t>(options_.depth, 1);
  PrepareVerify();
  const XxhState state;
  uint64_t hashed = 0;
  const int rc = Stream(f.fd, 0, on_disk, options_.block, depth, staging_.get(),
                        [&](std::span<const std::byte> piece) {
                          const uint64_t take = std::min<uint64_t>(piece.size(), bytes - hashed);
                          XXH3_64bits_update(state.get(), piece.data(), take);
                          hashed += take;
                        });
  if (rc < 0) {
    throw CheckpointError(fmt::format("checkpoint: reading {}: {}", f.name, Errno(rc)), -rc);
  }
  if (XXH3_64bits_digest(state.get()) != f.hash) {
    throw CheckpointError(
        fmt::format("checkpoint: {}: content does not match its checksum", f.name), EIO);
  }
}

void DirectoryCheckpointStore::PrepareVerify() {
  if (staging_) return;
  const uint64_t bytes = options_.block * std::max<uint32_t>(options_.depth, 1);
  staging_.reset(static_cast<std::byte*>(std::aligned_alloc(kBlockBytes, bytes)));
  if (!staging_) throw std::bad_alloc();
  std::memset(staging_.get(), 0, bytes);
}

std::string DirectoryCheckpointStore::Describe() const {
  return fmt::format("directory {} ({}{}, {} writes, {} in flight, keep {})", options_.path,
                     options_.fsync ? "fsync" : "no fsync", options_.direct ? ", O_DIRECT" : "",
                     FormatBytes(options_.block), options_.depth, options_.keep);
}

SimulatedCheckpointStore::SimulatedCheckpointStore(SimulatedStorage& storage, uint64_t block,
                                                   uint32_t depth)
    : storage_(storage), block_(block), depth_(depth) {}

void SimulatedCheckpointStore::Write(uint64_t step, std::span<const std::byte> data) {
  if (!storage_.Transfer(data.size(), block_, depth_, true)) {
    throw CheckpointError(fmt::format("stopped while writing {}", NameOf(step)), ECANCELED);
  }
  latest_ = step;
}

void SimulatedCheckpointStore::Read(uint64_t step, std::span<std::byte> dst) {
  if (!storage_.Transfer(dst.size(), block_, depth_, false)) {
    throw CheckpointError(fmt::format("stopped while reading {}", NameOf(step)), ECANCELED);
  }
}

void SimulatedCheckpointStore::Cancel() { storage_.CancelReads(); }

std::string SimulatedCheckpointStore::Describe() const {
  return fmt::format("the simulated storage ({} writes, {} in flight)", FormatBytes(block_),
                     depth_);
}

std::string SimulatedCheckpointStore::NameOf(uint64_t step) const {
  return fmt::format("checkpoint of step {} on the simulated storage", step);
}

std::optional<uint64_t> NewestCommonStep(const std::vector<std::vector<uint64_t>>& per_rank) {
  if (per_rank.empty()) return std::nullopt;
  std::vector<uint64_t> common = per_rank[0];
  std::sort(common.begin(), common.end());
  for (size_t r = 1; r < per_rank.size(); ++r) {
    std::vector<uint64_t> theirs = per_rank[r];
    std::sort(theirs.begin(), theirs.end());
    std::vector<uint64_t> both;
    std::set_intersection(common.begin(), common.end(), theirs.begin(), theirs.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  if (common.empty()) return std::nullopt;
  return common.back();
}

}  // namespace stallscope
