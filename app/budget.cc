#include "app/budget.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "base/align.h"
#include "base/errors.h"
#include "base/units.h"
#include "cache/memory_tier.h"
#include "cache/policy.h"
#include "pipeline/analysis.h"
#include "pipeline/pipeline.h"

namespace stallscope {
namespace {

// The first whole number in a /proc or /sys file after `key` (or the file's first token
// when `key` is empty); nullopt when the file or the number is missing ("max" included).
std::optional<uint64_t> ReadNumber(const char* path, const std::string& key) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string word;
  if (!key.empty()) {
    while (in >> word && word != key) {
    }
    if (!in) return std::nullopt;
  }
  uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

std::string Binary(uint64_t bytes) { return FormatBinaryBytes(static_cast<double>(bytes)); }

// `x` in bytes, saturating at UINT64_MAX (sums of sizes and counts from the scenario).
uint64_t Saturate(long double x) {
  return x >= 0x1p64L ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(x);
}

}  // namespace

std::optional<uint64_t> ReadHostMemory() {
  std::optional<uint64_t> available;
  if (auto kib = ReadNumber("/proc/meminfo", "MemAvailable:")) available = *kib * 1024;
  // cgroup v2: this process's group is the root of the unified hierarchy in a container.
  const auto max = ReadNumber("/sys/fs/cgroup/memory.max", "");
  const auto current = ReadNumber("/sys/fs/cgroup/memory.current", "");
  if (max && current) {
    const uint64_t room = *max > *current ? *max - *current : 0;
    if (!available || room < *available) available = room;
  }
  return available;
}

uint64_t MemoryTierNeed(const TierOptions& t, const RunPlan& plan, uint64_t num_samples,
                        uint64_t max_sample_bytes) {
  const uint64_t reads = std::min<uint64_t>(num_samples, plan.total_batches * plan.batch_size);
  const uint64_t per_sample =
      RoundUp(std::max<uint64_t>(max_sample_bytes, 1), MemoryTier::BlockBytes(max_sample_bytes));
  const uint64_t most = reads > t.capacity / per_sample ? t.capacity : reads * per_sample;
  return std::min(t.capacity, most);
}

uint64_t StepRecordBytes() {
  // The record, the slot map and two flags, the device's timing, and the analysis's rows
  // (per-step idle and stall seconds, a few doubles each).
  return sizeof(BatchRecord) + sizeof(int) + 2 + sizeof(StepTiming) + 16 * sizeof(double);
}

uint64_t DatasetHostBytes(const Scenario& s) {
  if (s.storage.kind == StorageKind::kDirectory) return 0;
  const long double n = s.dataset.samples;
  long double bytes = n * (8 + 3 * 8);
  for (const TierOptions& t : s.cache_tiers) {
    if (t.policy == PolicyKind::kBelady) {
      bytes += n * 4 * s.run.epochs;
      break;
    }
  }
  if (s.storage.kind == StorageKind::kMemory) {
    bytes += n * (8 + static_cast<long double>(s.dataset.sample_size) +
                  3 * static_cast<long double>(s.dataset.sample_size_stdev));
  }
  return Saturate(bytes);
}

uint64_t OpenFilesNeed(const Scenario& s) {
  const uint64_t depth = s.loader.io.io_depth;
  uint64_t need = 64 + 2;  // the process itself; a checkpoint and its directory
  if (s.storage.kind == StorageKind::kDirectory) need += depth * s.loader.io.io_threads;
  for (const TierOptions& t : s.cache_tiers) {
    if (t.kind == TierKind::kDisk) need += depth + 2;
  }
  return need;
}

void CheckOpenFiles(const Scenario& s) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const uint64_t need = OpenFilesNeed(s);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= need) return;
  if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= need) {
    limit.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) return;
  }
  throw BadInput(fmt::format(
      "{}: loader.io_depth: {} files in flight per reader ({} I/O thread(s){}) need {} open "
      "files; this process may open {} (ulimit -n; its hard limit)",
      s.file, s.loader.io.io_depth, s.loader.io.io_threads,
      s.cache_tiers.empty() ? "" : " and the disk tiers", need,
      static_cast<unsigned long long>(limit.rlim_max)));
}

void CheckDatasetFits(const Scenario& s, uint64_t available) {
  // The staging slots at the mean sample size: a floor of what CheckBudget will count, checked
  // before the dataset's index of 10^8 samples of 1 TiB is made only to be refused.
  const long double rows = static_cast<long double>(s.loader.prefetch + 1) * s.loader.batch_size *
                           static_cast<long double>(s.dataset.sample_size);
  if (s.storage.kind != StorageKind::kDirectory && rows > available) {
    throw BadInput(fmt::format(
        "{}: loader.batch_size × (loader.prefetch + 1) staging needs at least {} ({} × {} "
        "samples of {}); {} available",
        s.file, Binary(Saturate(rows)), s.loader.prefetch + 1, s.loader.batch_size,
        Binary(s.dataset.sample_size), Binary(available)));
  }
  const uint64_t need = DatasetHostBytes(s);
  if (need <= available) return;
  const bool memory = s.storage.kind == StorageKind::kMemory;
  throw BadInput(fmt::format(
      "{}: dataset.{}: {} samples{} need {} of host memory before the run starts (their sizes "
      "and shuffled order{}); {} available",
      s.file, memory ? "sample_size" : "samples", s.dataset.samples,
      memory ? fmt::format(" of {} each, held in memory (storage.kind memory),",
                           Binary(s.dataset.sample_size))
             : "",
      Binary(need), memory ? ", and their bytes" : "", Binary(available)));
}

RunBudget BudgetOf(const Scenario& s, const RunPlan& plan, uint64_t num_samples,
                   uint64_t max_sample_bytes) {
  RunBudget b;
  b.staging_bytes = plan.staging_bytes();
  b.step_bytes = Saturate(static_cast<long double>(plan.total_batches) * StepRecordBytes());
  for (const TierOptions& t : s.cache_tiers) {
    if (t.kind == TierKind::kMemory && !t.overcommit) {
      b.ram_tier_bytes += MemoryTierNeed(t, plan, num_samples, max_sample_bytes);
    }
  }
  return b;
}

uint64_t CheckpointHostBytes(const CheckpointOptions& c, uint64_t rank_bytes, bool state_on_host) {
  if (!c.enabled() && !c.restore) return 0;
  const uint64_t one = RoundUp(std::max<uint64_t>(rank_bytes, 1), kBlockBytes);
  const bool snapshot = c.mode == CheckpointMode::kAsync || !state_on_host || c.restore;
  return (state_on_host ? one : 0) + (snapshot ? one : 0);
}

void CheckBudget(const Scenario& s, const RunPlan& plan, uint64_t num_samples,
                 uint64_t max_sample_bytes, uint64_t host_available, uint32_t ranks_on_host,
                 uint64_t checkpoint_bytes) {
  const RunBudget b = BudgetOf(s, plan, num_samples, max_sample_bytes);
  ranks_on_host = std::max<uint32_t>(ranks_on_host, 1);
  const uint64_t available = host_available / ranks_on_host;
  const std::string share =
      ranks_on_host == 1 ? ""
                         : fmt::format(" (for each of the {} ranks on this host)", ranks_on_host);
  if (b.staging_bytes > available) {
    throw BadInput(fmt::format(
        "{}: loader.batch_size × (loader.prefetch + 1) staging needs {} ({} × {} samples of up "
        "to {}{}); {} available{}",
        s.file, Binary(b.staging_bytes), plan.slots, plan.batch_size, Binary(plan.raw_stride),
        plan.normalize ? " and their float rows"
        : plan.staged  ? " and their pixels"
                       : "",
        Binary(available), share));
  }
  if (b.step_bytes > available) {
    throw BadInput(fmt::format(
        "{}: run.epochs: {} steps ({} epoch(s) of {}{}) keep a record of {} B each, {}; {} "
        "available{} (lower run.epochs or set run.max_steps)",
        s.file, plan.total_batches, s.run.epochs, plan.batches_per_epoch,
        s.run.max_steps > 0 ? fmt::format(", cut by run.max_steps {}", s.run.max_steps) : "",
        StepRecordBytes(), Binary(b.step_bytes), Binary(available), share));
  }
  for (size_t i = 0; i < s.cache_tiers.size(); ++i) {
    const TierOptions& t = s.cache_tiers[i];
    if (t.kind != TierKind::kMemory || t.overcommit) continue;
    const uint64_t need = MemoryTierNeed(t, plan, num_samples, max_sample_bytes);
    if (need > available) {
      throw BadInput(fmt::format(
          "{}: cache.tiers.{}.capacity: a memory tier of {} would hold {} in this run; {} "
          "available{} (cache.tiers.{}.overcommit: true allows it: its pages are taken as it "
          "fills)",
          s.file, i, Binary(t.capacity), Binary(need), Binary(available), share, i));
    }
  }
  if (b.staging_bytes + b.ram_tier_bytes + b.step_bytes > available) {
    throw BadInput(fmt::format(
        "{}: staging ({}), the memory tiers ({}) and the step records ({}) need {}; {} "
        "available{}",
        s.file, Binary(b.staging_bytes), Binary(b.ram_tier_bytes), Binary(b.step_bytes),
        Binary(b.staging_bytes + b.ram_tier_bytes + b.step_bytes), Binary(available), share));
  }
  if (checkpoint_bytes > 0 &&
      b.staging_bytes + b.ram_tier_bytes + b.step_bytes + checkpoint_bytes > available) {
    throw BadInput(fmt::format(
        "{}: checkpoint.{}: each checkpoint's {} of state and snapshot need {} of host memory "
        "beside staging and the memory tiers ({}); {} available{}",
        s.file, s.checkpoint.model.empty() ? "size" : "model",
        s.checkpoint.model.empty() ? Binary(s.checkpoint.bytes) : s.checkpoint.model,
        Binary(checkpoint_bytes), Binary(b.staging_bytes + b.ram_tier_bytes), Binary(available),
        share));
  }
}

}  // namespace stallscope
