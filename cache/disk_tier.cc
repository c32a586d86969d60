#include "cache/disk_tier.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <liburing.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/align.h"
#include "base/start_thread.h"
#include "storage/uring_ring.h"

namespace stallscope {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "stallscope-cache.json";

void FormatPath(char* out, const std::string& dir, const char* fmt_name, uint64_t a, uint64_t b,
                uint64_t c) {
  std::snprintf(out, kMaxPath, fmt_name, dir.c_str(), a, b, c);
}

constexpr const char* kEntryFormat = "%s/e-%" PRIx64 "-%" PRIx64 "-%016" PRIx64;
constexpr const char* kTmpFormat = "%s/tmp-%" PRIx64 "-%" PRIx64 "-%" PRIx64;

}  // namespace

// The write path: one thread, one ring, one linked chain per entry. Falls back to blocking
// open/pwrite/fdatasync/rename when the ring (or its direct descriptors) is unavailable.
class DiskTier::Writer {
 public:
  // 5 SQEs per chain (open, write, fsync, close, rename), into `slots` direct descriptors.
  Writer(DiskTier* tier, uint32_t slots) : tier_(tier), writes_(slots), ring_(5 * slots, slots) {
    uring_ = ring_.ok() && ring_.fixed_files();
    thread_ = StartThread("the disk tier's writer thread", [this] { Run(); });
  }
  ~Writer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    ring_.Wake();
    thread_.join();
  }
  Write& slot(uint32_t i) { return writes_[i]; }
  void Enqueue(uint32_t slot) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(slot);
    }
    ring_.Wake();
  }

 private:
  int Flags() const { return O_WRONLY | O_CREAT | O_TRUNC | (tier_->direct_ ? O_DIRECT : 0); }
  uint64_t WriteBytes(const Write& w) const {
    const uint64_t size = tier_->size_[w.id];
    return tier_->direct_ ? RoundUp(size, kBlockBytes) : size;
  }

  void QueueChain(uint32_t i) {
    Write& w = writes_[i];
    const std::byte* buf = tier_->buffers_[w.buffer];
    io_uring_sqe* sqe = ring_.GetSqe();
    io_uring_prep_openat_direct(sqe, AT_FDCWD, w.tmp, Flags(), 0644, i);
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe_set_data64(sqe, i);
    sqe = ring_.GetSqe();
    io_uring_prep_write(sqe, static_cast<int>(i), buf, static_cast<unsigned>(WriteBytes(w)), 0);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK;
    io_uring_sqe_set_data64(sqe, (1ULL << 32) | i);
    sqe = ring_.GetSqe();
    io_uring_prep_fsync(sqe, static_cast<int>(i), IORING_FSYNC_DATASYNC);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK;
    io_uring_sqe_set_data64(sqe, i);
    sqe = ring_.GetSqe();
    io_uring_prep_close_direct(sqe, i);
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe_set_data64(sqe, i);
    sqe = ring_.GetSqe();
    io_uring_prep_renameat(sqe, AT_FDCWD, w.tmp, AT_FDCWD, w.final, 0);
    io_uring_sqe_set_data64(sqe, i);
    w.remaining = 5;
    w.error = 0;
  }

  void RunUring() {
    ring_.ArmWake();
    ring_.Submit();
    uint32_t inflight = 0;
    while (true) {
      std::deque<uint32_t> take;
      {
        std::lock_guard lock(mu_);
        take.swap(queue_);
        if (stop_ && take.empty() && inflight == 0) break;
      }
      for (uint32_t i : take) {
        QueueChain(i);
        ++inflight;
      }
      ring_.Wait();
      ring_.ForEachCompletion([&](uint64_t tag, int res) {
        Write& w = writes_[tag & 0xffffffffu];
        // A short write is an error too (a full disk, say).
        if ((tag >> 32) == 1 && res >= 0 && static_cast<uint64_t>(res) < WriteBytes(w)) {
          res = -ENOSPC;
        }
        if (res < 0 && w.error == 0) w.error = res;
        if (--w.remaining == 0) {
          --inflight;
          tier_->FinishWrite(w);
        }
      });
      ring_.Submit();
    }
  }

  void RunBlocking() {
    while (true) {
      uint32_t i;
      {
        std::unique_lock lock(mu_);
        if (queue_.empty()) {
          if (stop_) break;
          lock.unlock();
          ring_.WaitForWake();
          continue;
        }
        i = queue_.front();
        queue_.pop_front();
      }
      Write& w = writes_[i];
      w.error = 0;
      const int fd = open(w.tmp, Flags() | O_CLOEXEC, 0644);
      if (fd < 0) {
        w.error = -errno;
      } else {
        const uint64_t n = WriteBytes(w);
        const ssize_t wrote = pwrite(fd, tier_->buffers_[w.buffer], n, 0);
        if (wrote < 0 || static_cast<uint64_t>(wrote) != n) w.error = wrote < 0 ? -errno : -ENOSPC;
        if (w.error == 0 && fdatasync(fd) != 0) w.error = -errno;
        close(fd);
        if (w.error == 0 && rename(w.tmp, w.final) != 0) w.error = -errno;
      }
      tier_->FinishWrite(w);
    }
  }

  void Run() { uring_ ? RunUring() : RunBlocking(); }

  DiskTier* const tier_;
  std::vector<Write> writes_;
  UringRing ring_;
  bool uring_ = false;
  std::mutex mu_;
  std::deque<uint32_t> queue_;  // guarded by mu_
  bool stop_ = false;           // guarded by mu_
  std::thread thread_;
};

bool DiskTier::CheckPath(const std::string& path, uint64_t capacity, const std::string& key) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (!fs::is_directory(path, ec)) {
    throw CacheError(fmt::format("{}.path: {} is not a directory{}", key, path,
                                 ec ? " (" + ec.message() + ")" : ""));
  }
  // Writable? Try it, and learn whether O_DIRECT works here.
  const std::string probe = path + "/tmp-probe-" + std::to_string(getpid());
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw CacheError(fmt::format("{}.path: {} is not a writable directory: {}", key, path,
                                 std::strerror(errno)));
  }
  close(fd);
  fd = open(probe.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  const bool direct = fd >= 0;
  if (fd >= 0) close(fd);
  unlink(probe.c_str());
  uint64_t held = 0;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().filename().string().rfind("e-", 0) == 0)
      held += RoundUp(e.file_size(ec), kBlockBytes);
  }
  struct statvfs vfs;
  if (statvfs(path.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (capacity > free_bytes + held) {
      throw CacheError(fmt::format(
          "{}.capacity: {} bytes do not fit on {}: {} bytes free (plus {} held by the cache)", key,
          capacity, path, free_bytes, held));
    }
  }
  return direct;
}

DiskTier::DiskTier(const DiskTierOptions& o) : options_(o) {
  policy_ = EvictionPolicy::Make(o.tier.policy, o.tier.capacity, o.num_ids, o.oracle);
  if (!policy_)
    throw CacheError(o.key + ".policy: belady needs the sampler's future order (an oracle)");
  if (o.tier.clear) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(o.tier.path, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("e-", 0) == 0 || name.rfind("tmp-", 0) == 0) fs::remove(e.path(), ec);
    }
  }
  direct_ = CheckPath(o.tier.path, o.tier.capacity, o.key);
  if (!direct_ && !o.quiet) {
    std::fprintf(stderr, "notice: %s refuses O_DIRECT; the disk tier reads and writes buffered\n",
                 o.tier.path.c_str());
  }

  state_ = std::make_unique<std::atomic<uint8_t>[]>(o.num_ids);
  size_.assign(o.num_ids, 0);
  hash_.assign(o.num_ids, 0);
  last_access_.assign(o.num_ids, 0);
  drop_after_write_.assign(o.num_ids, 0);
  evicted_.reserve(1024);
  ScanDirectory();

  buffer_bytes_ = RoundUp(std::max<uint64_t>(o.max_item_bytes, 1), kBlockBytes);
  const uint32_t nbuf =
      o.write_buffers > 0
          ? o.write_buffers
          : static_cast<uint32_t>(std::clamp<uint64_t>((256ULL << 20) / buffer_bytes_, 2, 256));
  for (uint32_t i = 0; i < nbuf; ++i) {
    auto* b = static_cast<std::byte*>(std::aligned_alloc(kBlockBytes, buffer_bytes_));
    if (!b) throw CacheError("cannot allocate the disk tier's write buffers");
    std::memset(b, 0, buffer_bytes_);
    buffers_.push_back(b);
    free_buffers_.push_back(nbuf - 1 - i);
  }
  reader_ =
      std::make_unique<UringFileReader>(static_cast<const FileReadSource&>(*this),
                                        UringFileReader::Options{1, o.read_depth, direct_, true});
  writer_ = std::make_unique<Writer>(this, nbuf);
}

DiskTier::~DiskTier() {
  Flush();
  uint64_t entries = 0;
  for (uint64_t id = 0; id < options_.num_ids; ++id) entries += state_[id] == kReady;
  WriteManifest(entries);
  writer_.reset();
  reader_.reset();
  for (std::byte* b : buffers_) std::free(b);
}

DiskSurvey DiskTier::Survey(const std::string& dir, const std::string& fingerprint,
                            uint64_t num_ids, bool clear) {
  DiskSurvey out;
  {
    // The manifest names the dataset; entries of another one are not ours to serve.
    std::ifstream in(dir + "/" + kManifest);
    if (in) {
      const auto j = nlohmann::json::parse(in, nullptr, false);
      out.same_dataset = j.is_object() && j.value("fingerprint", "") == fingerprint;
      // What the last run left (written when it ended; absent after a crash or a clear).
      if (out.same_dataset && j.contains("entries") && !clear) {
        out.left = j.value("entries", uint64_t{0});
        out.last_drops = j.value("write_drops", uint64_t{0});
      }
    }
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("tmp-", 0) == 0) {  // an interrupted write: never made visible
      out.tmp.push_back(e.path().string());
      continue;
    }
    uint64_t id, size, hash;
    if (std::sscanf(name.c_str(), "e-%" SCNx64 "-%" SCNx64 "-%" SCNx64, &id, &size, &hash) != 3) {
      continue;
    }
    std::error_code size_ec;
    const uint64_t on_disk = e.file_size(size_ec);
    if (!out.same_dataset || id >= num_ids || size_ec || on_disk < size || size == 0) {
      out.stale.push_back(e.path().string());
      out.wiped += !out.same_dataset;
      out.damaged += out.same_dataset;
      continue;
    }
    out.entries.push_back({id, size, hash});
  }
  std::sort(out.entries.begin(), out.entries.end(),
            [](const DiskSurvey::Entry& a, const DiskSurvey::Entry& b) { return a.id < b.id; });
  return out;
}

void DiskTier::ScanDirectory() {
  const DiskSurvey found =
      Survey(options_.tier.path, options_.fingerprint, options_.num_ids, options_.tier.clear);
  std::error_code ec;
  for (const std::string& f : found.tmp) fs::remove(f, ec);
  for (const std::string& f : found.stale) fs::remove(f, ec);
  uint64_t over = 0;
  for (const auto& [id, size, hash] : found.entries) {
    evicted_.clear();
    if (!policy_->Admit(id, RoundUp(size, kBlockBytes), 0, evicted_)) {
      char path[kMaxPath];
      FormatPath(path, options_.tier.path, kEntryFormat, id, size, hash);
      unlink(path);
      ++over;
      continue;
    }
    for (uint64_t v : evicted_) RemoveFileLocked(v);
    size_[id] = size;
    hash_[id] = hash;
    state_[id].store(kReady, std::memory_order_release);
  }
  for (uint64_t id = 0; id < options_.num_ids; ++id) entries_at_start_ += state_[id] == kReady;
  if (found.wiped && !options_.quiet) {
    std::fprintf(stderr, "notice: %s held %llu entries of another dataset; removed them\n",
                 options_.tier.path.c_str(), static_cast<unsigned long long>(found.wiped));
  }
  start_note_ = ExplainStart(found.left, found.last_drops, found.tmp.size(), found.damaged, over);
  if (!start_note_.empty() && !options_.quiet) {
    std::fprintf(stderr, "notice: %s\n", start_note_.c_str());
  }
  WriteManifest(std::nullopt);
}

std::string DiskTier::ExplainStart(std::optional<uint64_t> left, uint64_t last_drops,
                                   uint64_t interrupted, uint64_t damaged, uint64_t over) const {
  std::vector<std::string> why;
  if (left && entries_at_start_ < *left) {
    const uint64_t explained = damaged + over;
    if (damaged) why.push_back(fmt::format("{} damaged (short or empty), removed", damaged));
    if (over) why.push_back(fmt::format("{} beyond this run's capacity, removed", over));
    if (*left > entries_at_start_ + explained) {
      why.push_back(fmt::format("{} missing: removed by something other than stallscope",
                                *left - entries_at_start_ - explained));
    }
  }
  if (interrupted) why.push_back(fmt::format("{} interrupted writes removed", interrupted));
  if (last_drops) {
    why.push_back(
        fmt::format("the last run dropped {} admissions (every write buffer waited on "
                    "the disk), so those samples were never cached",
                    last_drops));
  }
  if (why.empty() || (!left && !interrupted)) return "";
  std::string text =
      left ? fmt::format(
                 "{}: a warm start with {} of the {} entries the last run "
                 "left",
                 options_.tier.path, entries_at_start_, *left)
           : fmt::format("{}: {} entries at start", options_.tier.path, entries_at_start_);
  for (size_t i = 0; i < why.size(); ++i) text += (i ? "; " : " (") + why[i];
  return text + ")";
}

// The manifest: the dataset's fingerprint, and when the run has ended, what it left (read by
// the next start to explain a shortfall). Written to a new name and renamed over the old.
void DiskTier::WriteManifest(std::optional<uint64_t> entries) const {
  nlohmann::json j{{"fingerprint", options_.fingerprint}, {"version", 1}};
  if (entries) {
    j["entries"] = *entries;
    j["write_drops"] = write_drops_.load(std::memory_order_relaxed);
  }
  const std::string manifest = options_.tier.path + "/" + kManifest;
  const std::string fresh = manifest + ".new";
  {
    std::ofstream out(fresh);
    out << j.dump() << "\n";
    if (!out) return;  // the tier works without it; the next start explains less
  }
  std::rename(fresh.c_str(), manifest.c_str());
}

std::string DiskTier::EntryPath(uint64_t id) const {
  char path[kMaxPath];
  FormatPath(path, options_.tier.path, kEntryFormat, id, size_[id], hash_[id]);
  return path;
}

const char* DiskTier::PathOf(uint64_t id, char* scratch) const {
  FormatPath(scratch, options_.tier.path, kEntryFormat, id, size_[id], hash_[id]);
  return scratch;
}

uint64_t DiskTier::Lookup(uint64_t id, std::byte* dst, uint64_t now) {
  if (state_[id].load(std::memory_order_acquire) != kReady) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  last_access_[id] = now;
  return 1;
}

void DiskTier::ReadAsync(std::span<const ReadRequest> requests, ReadCallback* callback) {
  user_callback_.store(callback, std::memory_order_release);
  reader_->Submit(requests, this);
}

void DiskTier::OnReadComplete(const ReadRequest& request, int64_t result) {
  const uint64_t id = request.sample;
  const uint64_t size = size_[id];
  bool good = result >= 0 && static_cast<uint64_t>(result) == size &&
              XXH3_64bits(request.dst, size) == hash_[id];
  {
    std::lock_guard lock(mu_);
    if (good && policy_->Contains(id)) {
      policy_->OnHit(id, last_access_[id]);
    } else if (state_[id].load(std::memory_order_relaxed) == kReady) {
      DropLocked(id);  // bad bytes or size: never serve this entry again
      bad_.fetch_add(1, std::memory_order_relaxed);
      good = false;
    }
  }
  if (good) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    served_.fetch_add(size, std::memory_order_relaxed);
  } else {
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  user_callback_.load(std::memory_order_acquire)
      ->OnReadComplete(request,
                       good ? static_cast<int64_t>(size) : (result < 0 ? result : -EBADMSG));
}

void DiskTier::DropLocked(uint64_t id) {
  policy_->Remove(id, RoundUp(size_[id], kBlockBytes));
  RemoveFileLocked(id);
}

void DiskTier::RemoveFileLocked(uint64_t id) {
  const uint8_t s = state_[id].load(std::memory_order_relaxed);
  if (s == kWriting) {
    drop_after_write_[id] = 1;  // FinishWrite removes it
  } else if (s == kReady) {
    state_[id].store(kAbsent, std::memory_order_release);
    char path[kMaxPath];
    FormatPath(path, options_.tier.path, kEntryFormat, id, size_[id], hash_[id]);
    unlink(path);
  }
}

void DiskTier::Admit(uint64_t id, std::span<const std::byte> data, uint64_t now) {
  if (data.empty() || data.size() > buffer_bytes_) return;
  if (state_[id].load(std::memory_order_acquire) != kAbsent) return;
  uint32_t buffer;
  {
    std::lock_guard lock(mu_);
    if (state_[id].load(std::memory_order_relaxed) != kAbsent || policy_->Contains(id)) return;
    if (free_buffers_.empty()) {
      write_drops_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    evicted_.clear();
    if (!policy_->Admit(id, RoundUp(data.size(), kBlockBytes), now, evicted_)) return;
    for (uint64_t v : evicted_) RemoveFileLocked(v);  // the policy already forgot v
    buffer = free_buffers_.back();
    free_buffers_.pop_back();
    writes_in_flight_++;
    state_[id].store(kWriting, std::memory_order_relaxed);
    drop_after_write_[id] = 0;
  }
  std::byte* b = buffers_[buffer];
  std::memcpy(b, data.data(), data.size());
  if (direct_) std::memset(b + data.size(), 0, RoundUp(data.size(), kBlockBytes) - data.size());
  size_[id] = data.size();
  hash_[id] = XXH3_64bits(data.data(), data.size());
  Write& w = writer_->slot(buffer);
  w.id = id;
  w.buffer = buffer;
  FormatPath(w.final, options_.tier.path, kEntryFormat, id, size_[id], hash_[id]);
  FormatPath(w.tmp, options_.tier.path, kTmpFormat, id, static_cast<uint64_t>(getpid()), buffer);
  writer_->Enqueue(buffer);
}

void DiskTier::FinishWrite(Write& w) {
  const uint64_t id = w.id;
  std::lock_guard lock(mu_);
  if (w.error != 0) {
    unlink(w.tmp);
    policy_->Remove(id, RoundUp(size_[id], kBlockBytes));
    state_[id].store(kAbsent, std::memory_order_release);
  } else if (drop_after_write_[id]) {
    unlink(w.final);
    state_[id].store(kAbsent, std::memory_order_release);
  } else {
    state_[id].store(kReady, std::memory_order_release);  // durable: now visible
  }
  drop_after_write_[id] = 0;
  free_buffers_.push_back(w.buffer);
  if (--writes_in_flight_ == 0) idle_cv_.notify_all();
}

void DiskTier::Flush() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return writes_in_flight_ == 0; });
}

TierStats DiskTier::Stats() const {
  TierStats s;
  s.name = "disk";
  s.policy = NameOf(options_.tier.policy);
  s.capacity = options_.tier.capacity;
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.bytes_served = served_.load(std::memory_order_relaxed);
  s.write_drops = write_drops_.load(std::memory_order_relaxed);
  s.bad_entries = bad_.load(std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  s.entries_at_start = entries_at_start_;
  s.evictions = policy_->evictions();
  s.bytes_held = policy_->used_bytes();
  return s;
}

std::string DiskTier::Describe() const {
  return fmt::format("disk {} {:.1f} MiB {}{} ({} entries at start)", options_.tier.path,
                     static_cast<double>(options_.tier.capacity) / (1 << 20),
                     NameOf(options_.tier.policy), direct_ ? " O_DIRECT" : "", entries_at_start_);
}

}  // namespace stallscope
