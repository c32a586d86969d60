#include "pipeline/preprocess.h"

#include <algorithm>
#include <chrono>

namespace stallscope {
namespace {

// A serial chain: each step depends on the last, so it cannot be vectorized or skipped.
uint64_t Chain(uint64_t x, uint64_t iterations) {
  for (uint64_t i = 0; i < iterations; ++i) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x += i;
  }
  return x;
}

}  // namespace

void NormalizeBytes(const std::byte* in, size_t n, float* out) {
  const auto* u = reinterpret_cast<const unsigned char*>(in);
  constexpr float kScale = 1.0f / 255.0f;
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(u[i]) * kScale;
}

CpuBurner::CpuBurner() {
  // Fastest of several 2^18-iteration runs: the uncontended speed of one core.
  constexpr uint64_t kIterations = 1 << 18;
  double best = 1e9;
  volatile uint64_t sink = 0;
  for (int i = 0; i < 7; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + Chain(i + 1, kIterations);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, dt);
  }
  rate_ = static_cast<double>(kIterations) / std::max(best, 1e-9);
}

uint64_t CpuBurner::Burn(double seconds, uint64_t salt) const {
  if (seconds <= 0) return 0;
  return Chain(salt | 1, static_cast<uint64_t>(seconds * rate_));
}

const CpuBurner& CpuBurner::Get() {
  static const CpuBurner burner;
  return burner;
}

}  // namespace stallscope
