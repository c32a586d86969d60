#include "app/bench_checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <latch>
#include <span>
#include <thread>

#include "base/align.h"
#include "base/errors.h"
#include "storage/content.h"
#include "storage/storage.h"

namespace stallscope {

namespace fs = std::filesystem;

namespace {

// The snapshot's content: each rank's own keyed bytes (storage/content.h), so that no two
// ranks write the same file and nothing below could deduplicate or compress it away.
constexpr uint64_t kContentSeed = 17;

bool Missing(const std::string& path) {
  std::error_code ec;
  return !fs::exists(path, ec);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs body(k) for k in [0, count), each on its own thread, all released together (on the
// calling thread when count is 1: an `mpirun` rank keeps MPI's thread). Returns the first
// exception a body threw; nullptr when none did.
std::exception_ptr OnEveryRank(uint32_t count, const std::function<void(uint32_t)>& body) {
  std::vector<std::exception_ptr> errors(count);
  auto guarded = [&](uint32_t k) {
    try {
      body(k);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  if (count == 1) {
    guarded(0);
  } else {
    std::latch start(count);
    std::vector<std::jthread> threads;
    for (uint32_t k = 0; k < count; ++k) {
      threads.emplace_back([&, k] {
        start.arrive_and_wait();
        guarded(k);
      });
    }
  }  // the threads joined
  for (std::exception_ptr& e : errors) {
    if (e) return e;
  }
  return nullptr;
}

// The share of the file's pages in the page cache (mincore over a mapping that touches none);
// 0 when it cannot tell.
double ResidentFraction(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) return 0;
  const size_t bytes = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  double fraction = 0;
  if (mincore(map, bytes, in_core.data()) == 0) {
    const auto resident =
        std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return (c & 1) != 0; });
    fraction = static_cast<double>(resident) / static_cast<double>(in_core.size());
  }
  munmap(map, bytes);
  return fraction;
}

// Drops the file's pages from the page cache without root: POSIX_FADV_DONTNEED drops clean
// pages only, so a file written without fsync is flushed first (`flush`). Returns the share of
// its pages still resident afterwards.
double EvictFromPageCache(const std::string& path, bool flush) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;  // the read-back will say why
  if (flush) fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const double resident = ResidentFraction(fd);
  close(fd);
  return resident;
}

// syncfs on the directory's filesystem: every change to it so far made durable.
void CommitFilesystem(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  syncfs(fd);
  close(fd);
}

}  // namespace

double CheckpointBenchRun::write_seconds() const {
  double slowest = 0;
  for (const RankTimes& r : ranks) slowest = std::max(slowest, r.write_seconds);
  return slowest;
}

double CheckpointBenchRun::read_seconds() const {
  double slowest = 0;
  for (const RankTimes& r : ranks) slowest = std::max(slowest, r.read_seconds);
  return slowest;
}

CheckpointFrequency MaxCheckpointFrequency(double w, double step, double max_stall) {
  auto stall = [&](uint64_t n) { return w / (static_cast<double>(n) * step + w); };
  // From the closed form N >= w (1 - s) / (s × step), then corrected for rounding.
  CheckpointFrequency f;
  const double exact = std::min(w * (1 - max_stall) / (max_stall * step), 1e15);
  f.every_steps = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(exact)));
  while (f.every_steps > 1 && stall(f.every_steps - 1) <= max_stall) --f.every_steps;
  while (stall(f.every_steps) > max_stall) ++f.every_steps;
  f.stall_fraction = stall(f.every_steps);
  const double async = std::min(w / step, 1e15);
  f.async_every_steps = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(async)));
  while (f.async_every_steps > 1 && static_cast<double>(f.async_every_steps - 1) * step >= w) {
    --f.async_every_steps;
  }
  while (static_cast<double>(f.async_every_steps) * step < w) ++f.async_every_steps;
  return f;
}

void CheckpointBench::AlignedFree::operator()(std::byte* p) const { std::free(p); }

CheckpointBench::CheckpointBench(const CheckpointBenchPlan& plan, uint32_t first, uint32_t count)
    : plan_(plan), first_(first), made_directory_(Missing(plan.path)) {
  for (uint32_t k = 0; k < count; ++k) {
    try {
      // keep 1: a run replaces the previous run's checkpoint.
      stores_.push_back(std::make_unique<DirectoryCheckpointStore>(DirectoryCheckpointOptions{
          plan.path, first + k, plan.fsync, plan.direct, 1, plan.block, plan.io_depth}));
    } catch (const StorageError& e) {
      RemoveDirectoryIfMade();
      std::string what = e.what();
      if (what.starts_with("checkpoint.path: ")) what.erase(0, std::strlen("checkpoint.path: "));
      throw BadInput("DIR: " + what);
    }
  }
}

CheckpointBench::~CheckpointBench() {
  RemoveCheckpoints();
  RemoveDirectoryIfMade();
}

std::optional<uint64_t> CheckpointBench::FreeBytes() const { return stores_.front()->FreeBytes(); }

uint64_t CheckpointBench::DiskBytes() const {
  return stores_.size() * stores_.front()->Footprint(plan_.rank_bytes);
}

uint64_t CheckpointBench::BufferBytes() const {
  // Each rank's snapshot, and the buffers a streamed read-back goes through.
  const uint64_t staging = plan_.read_into_buffer ? 0 : plan_.block * plan_.io_depth;
  return stores_.size() * (RoundUp(plan_.rank_bytes, kBlockBytes) + staging);
}

std::string CheckpointBench::ExistingCheckpoint() const {
  for (const auto& store : stores_) {
    if (const auto step = store->Latest()) return store->NameOf(*step);
  }
  return "";
}

void CheckpointBench::Allocate() {
  // Huge pages where the buffer spans them: a 2 MiB-aligned buffer advised MADV_HUGEPAGE
  // faults in 512 times fewer pages while it is filled (untimed, but seconds for tens of GiB).
  constexpr uint64_t kHugePage = 2 << 20;
  const uint64_t bytes = RoundUp(plan_.rank_bytes, kBlockBytes);
  const uint64_t alignment = bytes >= kHugePage ? kHugePage : kBlockBytes;
  const uint64_t allocated = RoundUp(bytes, alignment);
  for (size_t k = 0; k < stores_.size(); ++k) {
    buffers_.emplace_back(static_cast<std::byte*>(std::aligned_alloc(alignment, allocated)));
    if (!buffers_.back()) {
      throw RunFailed(
          fmt::format("cannot allocate rank {}'s snapshot buffer ({} bytes)", first_ + k, bytes));
    }
    if (alignment == kHugePage) madvise(buffers_.back().get(), allocated, MADV_HUGEPAGE);
  }
  // Filling touches every page too, so that no write is timed with its page faults.
  if (auto error = OnEveryRank(stores_.size(), [&](uint32_t k) {
        FillContent(ContentKey(kContentSeed, first_ + k), {buffers_[k].get(), bytes});
        if (!plan_.read_into_buffer) stores_[k]->PrepareVerify();
      })) {
    std::rethrow_exception(error);
  }
}

std::vector<RankTimes> CheckpointBench::Run(uint32_t run, const Agree& agree) {
  const auto count = static_cast<uint32_t>(stores_.size());
  // The previous run's files go first, untimed: a write then never includes an unlink, and
  // the directory needs room for one checkpoint per rank. Then everything pending on the
  // filesystem is committed (syncfs), untimed too: on a filesystem mounted with `discard`,
  // the journal commit after an unlink discards the freed blocks, and neither that nor
  // another program's dirty pages may land in this run's fsync.
  RemoveCheckpoints();
  CommitFilesystem(plan_.path);
  std::vector<RankTimes> times(count);
  std::vector<double> resident(count, 0.0);
  auto span = [&](uint32_t k) { return std::span(buffers_[k].get(), plan_.rank_bytes); };
  auto stop_if_failed = [&](const std::exception_ptr& error) {
    if (agree(error != nullptr)) {
      if (error) std::rethrow_exception(error);
      throw PeerFailed{};
    }
  };
  stop_if_failed(nullptr);  // every rank starts its write together
  written_run_ = run;       // what a failed write left is removed too
  std::exception_ptr error = OnEveryRank(count, [&](uint32_t k) {
    times[k].rank = first_ + k;
    const auto start = std::chrono::steady_clock::now();
    stores_[k]->Write(run, span(k));
    times[k].write_seconds = SecondsSince(start);
  });
  if (!error) {
    // Untimed: out of the page cache, and the buffer cleared so that only the read can
    // bring its content back (the read-back checks it against the checksum written with it).
    error = OnEveryRank(count, [&](uint32_t k) {
      resident[k] = EvictFromPageCache(stores_[k]->NameOf(run), !plan_.fsync);
      std::memset(buffers_[k].get(), 0, plan_.rank_bytes);
    });
  }
  stop_if_failed(error);  // and every rank starts its read together
  error = OnEveryRank(count, [&](uint32_t k) {
    const auto start = std::chrono::steady_clock::now();
    if (plan_.read_into_buffer) {
      stores_[k]->Read(run, span(k));
    } else {
      stores_[k]->Verify(run, plan_.rank_bytes);
    }
    times[k].read_seconds = SecondsSince(start);
  });
  stop_if_failed(error);
  for (double r : resident) resident_after_evict_ = std::max(resident_after_evict_, r);
  return times;
}

void CheckpointBench::RemoveCheckpoints() {
  if (written_run_ == 0) return;
  std::error_code ec;
  for (const auto& store : stores_) fs::remove(store->NameOf(written_run_), ec);
  written_run_ = 0;
}

void CheckpointBench::RemoveDirectoryIfMade() {
  std::error_code ec;
  if (made_directory_) fs::remove(plan_.path, ec);  // only when empty
}

}  // namespace stallscope
