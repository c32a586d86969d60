// CPU preprocessing: the work each worker does per sample.
//
// `normalize` turns raw bytes into float32 in [0, 1] (x / 255), the usual first step of an
// image pipeline. `cost` adds a calibrated amount of extra real computation per sample (a
// dependent integer hash chain, whose result is folded into the output so the compiler
// cannot drop it): the work really occupies a core, and contention between workers shows
// as it would with real decoding — unlike sleep(), which DLIO uses.
//
// Thread-safety: CpuBurner is immutable after construction and safe from any thread.
#ifndef STALLSCOPE_PIPELINE_PREPROCESS_H_
#define STALLSCOPE_PIPELINE_PREPROCESS_H_

#include <cstddef>
#include <cstdint>

namespace stallscope {

// Writes n floats, out[i] = in[i] / 255.
void NormalizeBytes(const std::byte* in, size_t n, float* out);

class CpuBurner {
 public:
  // Measures this machine's speed on the hash chain (takes ~20 ms).
  CpuBurner();
  // Runs about `seconds` of computation on one core; returns a value that depends on it.
  uint64_t Burn(double seconds, uint64_t salt) const;
  double iterations_per_second() const { return rate_; }

  // The process-wide instance, calibrated on first use.
  static const CpuBurner& Get();

 private:
  double rate_ = 0;
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_PREPROCESS_H_
