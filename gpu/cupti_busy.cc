#include "gpu/cupti_busy.h"

#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "pipeline/device.h"

namespace stallscope::gpu {
namespace {

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CuptiRecorder::Instance().OnBuffer(buffer, valid);
  std::free(buffer);
}

std::string ResultString(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "unknown CUPTI error";
}

}  // namespace

CuptiRecorder& CuptiRecorder::Instance() {
  static CuptiRecorder* recorder = new CuptiRecorder();  // outlives CUPTI's last callback
  return *recorder;
}

void CuptiRecorder::MeasureOffset(double* at, double* offset) const {
  // The closest-bracketed of several readings: CUPTI ns minus steady-clock ns.
  double best_width = 1e9;
  for (int i = 0; i < 7; ++i) {
    const double before = MonotonicSeconds();
    uint64_t ns = 0;
    cuptiGetTimestamp(&ns);
    const double after = MonotonicSeconds();
    if (after - before < best_width) {
      best_width = after - before;
      *at = (before + after) / 2;
      *offset = static_cast<double>(ns) * 1e-9 - *at;
    }
  }
}

double CuptiRecorder::ToMonotonic(uint64_t ns) const {
  const double t = static_cast<double>(ns) * 1e-9;
  if (offset_at1_ <= offset_at_) return t - offset0_;
  // Interpolate the offset between the two measurements (in CUPTI time ≈ monotonic time).
  const double x = (t - offset0_ - offset_at_) / (offset_at1_ - offset_at_);
  return t - (offset0_ + x * (offset1_ - offset0_));
}

bool CuptiRecorder::Start(std::string* why) {
  std::lock_guard lock(mu_);
  if (started_) return true;
  CUptiResult r = cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (r != CUPTI_SUCCESS) {
    if (why) *why = "CUPTI activity records unavailable: " + ResultString(r);
    return false;
  }
  // STALLSCOPE_CUPTI_KERNELS=FILE: every kernel, memset and copy record as "start_ns end_ns
  // stream name" (MEMSET bytes, MEMCPYkind bytes), for looking at the gaps between a step's
  // kernels one by one (gpu/NOTES.md). Tracing memsets slows the steps a little.
  if (const char* path = std::getenv("STALLSCOPE_CUPTI_KERNELS"); path && *path && !dump_) {
    dump_ = std::fopen(path, "w");
    if (dump_) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  MeasureOffset(&offset_at_, &offset0_);
  offset_at1_ = offset_at_;
  offset1_ = offset0_;
  started_ = true;
  return true;
}

void CuptiRecorder::OnBuffer(const uint8_t* buffer, size_t valid_bytes) {
  std::lock_guard lock(mu_);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(const_cast<uint8_t*>(buffer), valid_bytes, &record) ==
         CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      kernels_.emplace_back(k->start, k->end);
      if (dump_) {
        std::fprintf(dump_, "%llu %llu %u %s\n", static_cast<unsigned long long>(k->start),
                     static_cast<unsigned long long>(k->end), k->streamId, k->name ? k->name : "?");
      }
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET && dump_) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      std::fprintf(dump_, "%llu %llu %u MEMSET %llu\n", static_cast<unsigned long long>(m->start),
                   static_cast<unsigned long long>(m->end), m->streamId,
                   static_cast<unsigned long long>(m->bytes));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (dump_) {
        std::fprintf(dump_, "%llu %llu %u MEMCPY%d %llu\n",
                     static_cast<unsigned long long>(m->start),
                     static_cast<unsigned long long>(m->end), m->streamId, m->copyKind,
                     static_cast<unsigned long long>(m->bytes));
      }
      if (m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) {
        h2d_.emplace_back(m->start, m->end);
        h2d_bytes_.push_back(m->bytes);
      }
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) dropped_ += dropped;
}

void CuptiRecorder::Collect(std::vector<Interval>* kernels, std::vector<Interval>* h2d) {
  if (!started_) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard lock(mu_);
  MeasureOffset(&offset_at1_, &offset1_);
  for (const auto& [s, e] : kernels_) kernels->push_back({ToMonotonic(s), ToMonotonic(e), 0});
  for (size_t i = 0; i < h2d_.size(); ++i) {
    h2d->push_back({ToMonotonic(h2d_[i].first), ToMonotonic(h2d_[i].second), h2d_bytes_[i]});
  }
  kernels_.clear();
  h2d_.clear();
  h2d_bytes_.clear();
  if (dump_) std::fflush(dump_);
  // The next collection interpolates from here.
  offset_at_ = offset_at1_;
  offset0_ = offset1_;
}

void CuptiRecorder::Stop() {
  if (!started_) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  std::lock_guard lock(mu_);
  kernels_.clear();
  h2d_.clear();
  h2d_bytes_.clear();
  if (dump_) std::fflush(dump_);
  started_ = false;
}

std::vector<Interval> Merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
      out.back().bytes += i.bytes;
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double CoveredSeconds(const std::vector<Interval>& merged, double from, double to) {
  auto it = std::lower_bound(merged.begin(), merged.end(), from,
                             [](const Interval& i, double t) { return i.end < t; });
  double covered = 0;
  for (; it != merged.end() && it->start < to; ++it) {
    covered += std::max(0.0, std::min(it->end, to) - std::max(it->start, from));
  }
  return covered;
}

Interval Extent(const std::vector<Interval>& merged, double from, double to) {
  Interval e{.start = to, .end = from};
  auto it = std::lower_bound(merged.begin(), merged.end(), from,
                             [](const Interval& i, double t) { return i.end < t; });
  for (; it != merged.end() && it->start < to; ++it) {
    e.start = std::min(e.start, std::max(it->start, from));
    e.end = std::max(e.end, std::min(it->end, to));
  }
  return e;
}

double OverlapSeconds(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  const std::vector<Interval> mb = Merge(b);
  double total = 0;
  for (const Interval& i : Merge(a)) total += CoveredSeconds(mb, i.start, i.end);
  return total;
}

}  // namespace stallscope::gpu
