// CuptiRecorder: the GPU's own record of when kernels and host-to-device copies ran.
//
// CUPTI's activity API (CONCURRENT_KERNEL and MEMCPY records) timestamps every kernel and
// copy on the device. Intervals are converted to MonotonicSeconds() with an offset measured
// at Start() and again at Collect() (linear between the two, so clock drift cancels).
// CUPTI's activity state is per process, so there is one recorder: Instance().
//
// Thread-safety: Start/Collect/Stop from one thread; CUPTI's buffer callbacks run on its own
// thread and append under a mutex.
#ifndef STALLSCOPE_GPU_CUPTI_BUSY_H_
#define STALLSCOPE_GPU_CUPTI_BUSY_H_

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace stallscope::gpu {

struct Interval {
  double start = 0, end = 0;  // MonotonicSeconds()
  uint64_t bytes = 0;         // copies only
};

class CuptiRecorder {
 public:
  static CuptiRecorder& Instance();

  // Enables kernel and memcpy activity records. Returns false (with the reason in *why)
  // where CUPTI is unavailable; callers then fall back to CUDA events.
  bool Start(std::string* why);
  // Flushes CUPTI's buffers and moves out everything recorded since the last Collect().
  void Collect(std::vector<Interval>* kernels, std::vector<Interval>* h2d);
  void Stop();
  uint64_t dropped() const { return dropped_; }

  // Called by CUPTI (public for the C callbacks).
  void OnBuffer(const uint8_t* buffer, size_t valid_bytes);

 private:
  CuptiRecorder() = default;
  double ToMonotonic(uint64_t ns) const;
  void MeasureOffset(double* at, double* offset) const;

  std::mutex mu_;
  bool started_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> kernels_;  // CUPTI ns
  std::vector<std::pair<uint64_t, uint64_t>> h2d_;
  std::vector<uint64_t> h2d_bytes_;
  uint64_t dropped_ = 0;
  std::FILE* dump_ = nullptr;  // STALLSCOPE_CUPTI_KERNELS (kept open to the process's end)
  double offset_at_ = 0, offset0_ = 0, offset_at1_ = 0, offset1_ = 0;
};

// Sorted, disjoint intervals covering exactly what `intervals` cover.
std::vector<Interval> Merge(std::vector<Interval> intervals);
// Seconds of [from, to] covered by `merged` (from Merge()): the union's length there.
double CoveredSeconds(const std::vector<Interval>& merged, double from, double to);
// The first start and last end of `merged` inside [from, to] (clipped to it); {to, from} when
// nothing falls there.
Interval Extent(const std::vector<Interval>& merged, double from, double to);
// Seconds during which both an interval of `a` and one of `b` were active.
double OverlapSeconds(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace stallscope::gpu

#endif  // STALLSCOPE_GPU_CUPTI_BUSY_H_
