// The Pipeline's private parts shared by its two source files (pipeline.cc: set-up, the run,
// workers, copy and device; pipeline_fetch.cc: the fetcher, reads, retries): read tags,
// staging memory and the staging slot. Not for use outside pipeline/.
//
// Thread-safety: see Pipeline::Slot's fields.
#ifndef STALLSCOPE_PIPELINE_PIPELINE_INTERNAL_H_
#define STALLSCOPE_PIPELINE_PIPELINE_INTERNAL_H_

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "base/align.h"
#include "pipeline/pipeline.h"

namespace stallscope {
namespace pipeline_internal {

// A read's tag: slot << 32 | index in the batch, and for a cache tier's read, tier + 1 in
// bits 56..59 (0 = a storage read).
constexpr int kTierShift = 56;
inline uint64_t Tag(int slot, uint32_t i, int tier) {
  return (static_cast<uint64_t>(tier + 1) << kTierShift) | (static_cast<uint64_t>(slot) << 32) | i;
}
inline int TierOf(uint64_t tag) { return static_cast<int>((tag >> kTierShift) & 0xf) - 1; }
inline int SlotOf(uint64_t tag) { return static_cast<int>((tag >> 32) & 0xffffff); }

// A small id per thread that completes reads, for the trace's per-thread tracks.
inline int ThreadIndex() {
  static std::atomic<int> next{0};
  thread_local const int index = next.fetch_add(1);
  return index;
}

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

// Page-aligned (O_DIRECT needs 4096), pre-faulted so no page fault lands on the hot path.
// From 2 MiB up, on transparent huge pages where the kernel gives them (madvise; a no-op where
// THP is off). An O_DIRECT read pins its destination pages (and a VM maps them for its host)
// read by read; on 4 KiB pages spread over a batch's staging that cost a read at a time a
// quarter of its pace (this VM, 2026-12-06, real_directory direct-qd1 without preprocessing:
// 8,542-10,653 files/s on 4 KiB pages, 11,739-12,633 on huge pages, alternated; bench-dir's
// one hot buffer 11,471-12,339).
inline std::unique_ptr<std::byte[], FreeDeleter> AllocateStaging(uint64_t bytes) {
  constexpr uint64_t kHuge = 2u << 20;
  const bool huge = bytes >= kHuge;
  bytes = RoundUp(std::max<uint64_t>(bytes, 1), huge ? kHuge : kBlockBytes);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(huge ? kHuge : kBlockBytes, bytes));
  if (!p) throw std::bad_alloc();
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  return std::unique_ptr<std::byte[], FreeDeleter>(p);
}

}  // namespace pipeline_internal

// One batch's staging memory and in-flight state. The arrays are sized at construction.
struct Pipeline::Slot {
  int index = 0;
  uint64_t batch = 0;
  uint32_t count = 0;        // samples in this batch
  uint64_t fetch_range = 0;  // NVTX range from the first read to the last
  uint32_t delivered = 0;    // rows handed to the device: count less the skipped
  std::unique_ptr<std::byte[], pipeline_internal::FreeDeleter> raw;
  std::unique_ptr<std::byte[], pipeline_internal::FreeDeleter>
      staged;  // null when rows are the raw bytes
  std::vector<uint64_t> ids;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> labels;
  std::vector<uint8_t> attempts;
  std::vector<uint8_t> skipped;
  std::vector<uint64_t> access;       // each sample's position in the run's access sequence
  std::vector<ReadSpan> spans;        // with trace: each sample's read
  std::vector<ReadRequest> requests;  // this batch's storage reads
  std::vector<ReadRequest> tier_requests[kMaxCacheTiers];  // reads of asynchronous tiers
  std::atomic<uint32_t> reads_pending{0};
  std::atomic<uint64_t> storage_bytes{0};
  std::atomic<uint32_t> async_hits[kMaxCacheTiers] = {};
  std::atomic<uint64_t> async_bytes[kMaxCacheTiers] = {};
  uint32_t next_chunk = 0;  // guarded by mu_
  std::atomic<uint32_t> chunks_done{0};

  std::byte* raw_at(uint32_t i, uint64_t stride) const { return raw.get() + i * stride; }
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_PIPELINE_INTERNAL_H_
