// Sampler: the seeded per-epoch shuffle that decides which samples each step reads.
//
// Epoch e's order is a Fisher–Yates permutation of 0..n-1 driven by a counter-based
// generator keyed on (seed, e): every sample exactly once per epoch, a different order each
// epoch, the same order for the same seed on every machine (no std::shuffle, whose output is
// implementation-defined). Because the order is a pure function of (seed, epoch), the future
// is known in advance — the cache's oracle (belady) and the prefetcher's look-ahead.
//
// Thread-safety: const methods; safe from any thread.
#ifndef STALLSCOPE_PIPELINE_SAMPLER_H_
#define STALLSCOPE_PIPELINE_SAMPLER_H_

#include <cstdint>
#include <vector>

namespace stallscope {

class Sampler {
 public:
  Sampler(uint64_t num_samples, uint64_t seed) : n_(num_samples), seed_(seed) {}

  uint64_t num_samples() const { return n_; }
  // Writes epoch `epoch`'s order into `out` (resized to num_samples()).
  void Order(uint64_t epoch, std::vector<uint64_t>& out) const;

 private:
  const uint64_t n_;
  const uint64_t seed_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_SAMPLER_H_
