#include "pipeline/sampler.h"

#include <numeric>
#include <utility>

namespace stallscope {
namespace {

// SplitMix64 (Steele et al. 2014) as a stream: small, fast, and identical everywhere.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound): Lemire's multiply-shift with rejection, unbiased.
  uint64_t Below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = -bound % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
};

}  // namespace

void Sampler::Order(uint64_t epoch, std::vector<uint64_t>& out) const {
  out.resize(n_);
  std::iota(out.begin(), out.end(), 0);
  // Each epoch's stream starts at a hashed point. (Seeds that differ by the generator's own
  // increment would give shifted copies of one stream, and correlated shuffles.)
  SplitMix64 mixer{seed_};
  SplitMix64 rng{SplitMix64{mixer.Next() ^ (epoch * 0xd1342543de82ef95ULL)}.Next()};
  for (uint64_t i = n_; i > 1; --i) std::swap(out[i - 1], out[rng.Below(i)]);
}

}  // namespace stallscope
