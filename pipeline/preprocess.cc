#include "pipeline/preprocess.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/clock.h"
#include "pipeline/device.h"

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

namespace {

// The centre crop of torchvision's Resize(size * 256 / 224) + CenterCrop(size) in the decoded
// image: the scale from decoded to resized pixels and the source coordinates of the crop's
// top-left output pixel centre; `plain` when no resize is needed (a copy of a window).
struct Crop {
  float s = 1, x0 = 0, y0 = 0;
  bool plain = false;
  int cx = 0, cy = 0;  // the window's corner when plain
};

// Decodes at the smallest DCT scale that still covers the resize; false for data that does
// not decode.
bool DecodeForCrop(JpegDecoder& decoder, RgbImage& img, const std::byte* data, size_t n, int size,
                   Crop* crop, std::string* error) {
  const int resize = (size * 256 + 223) / 224;  // the shorter side before the centre crop
  if (!decoder.Decode(data, n, resize, &img, error)) return false;
  const int w = img.width, h = img.height;
  crop->s = static_cast<float>(resize) / static_cast<float>(std::min(w, h));
  crop->x0 = (static_cast<float>(w) - static_cast<float>(size) / crop->s) / 2;
  crop->y0 = (static_cast<float>(h) - static_cast<float>(size) / crop->s) / 2;
  crop->plain = crop->s == 1.0f && w >= size && h >= size;
  crop->cx = (w - size) / 2;
  crop->cy = (h - size) / 2;
  return true;
}

// Calls put(y, x, c, value) with the bilinear resample of every output pixel's channels.
template <typename Put>
void Resample(const RgbImage& img, const Crop& crop, int size, Put put) {
  const int w = img.width, h = img.height;
  const uint8_t* px = img.pixels.data();
  for (int y = 0; y < size; ++y) {
    const float sy = std::clamp(crop.y0 + (static_cast<float>(y) + 0.5f) / crop.s - 0.5f, 0.0f,
                                static_cast<float>(h - 1));
    const int ya = static_cast<int>(sy), yb = std::min(ya + 1, h - 1);
    const float fy = sy - static_cast<float>(ya);
    for (int x = 0; x < size; ++x) {
      const float sx = std::clamp(crop.x0 + (static_cast<float>(x) + 0.5f) / crop.s - 0.5f, 0.0f,
                                  static_cast<float>(w - 1));
      const int xa = static_cast<int>(sx), xb = std::min(xa + 1, w - 1);
      const float fx = sx - static_cast<float>(xa);
      for (int c = 0; c < 3; ++c) {
        const float top = px[(static_cast<size_t>(ya) * w + xa) * 3 + c] * (1 - fx) +
                          px[(static_cast<size_t>(ya) * w + xb) * 3 + c] * fx;
        const float bottom = px[(static_cast<size_t>(yb) * w + xa) * 3 + c] * (1 - fx) +
                             px[(static_cast<size_t>(yb) * w + xb) * 3 + c] * fx;
        put(y, x, c, top * (1 - fy) + bottom * fy);
      }
    }
  }
}

}  // namespace

bool DecodeJpegSample(JpegDecoder& decoder, RgbImage& img, const std::byte* data, size_t n,
                      int size, float* out, std::string* error) {
  const int plane = size * size;
  Crop crop;
  if (!DecodeForCrop(decoder, img, data, n, size, &crop, error)) {
    std::fill(out, out + 3 * plane, 0.0f);
    return false;
  }
  const ImageNorm norm = ImageNetNorm();
  const float* scale = norm.scale;
  const float* shift = norm.shift;
  if (crop.plain) {
    // One row's three planes at a time, the channel constants in registers and no aliasing:
    // GCC vectorizes the stride-3 loads (59 µs an image here against 77 µs per channel in
    // the inner loop; the same floats).
    const float s0 = scale[0], s1 = scale[1], s2 = scale[2];
    const float h0 = shift[0], h1 = shift[1], h2 = shift[2];
    for (int y = 0; y < size; ++y) {
      const uint8_t* __restrict row =
          img.pixels.data() + (static_cast<size_t>(crop.cy + y) * img.width + crop.cx) * 3;
      float* __restrict r = out + static_cast<size_t>(y) * size;
      float* __restrict g = r + plane;
      float* __restrict b = g + plane;
      for (int x = 0; x < size; ++x) {
        r[x] = row[3 * x] * s0 + h0;
        g[x] = row[3 * x + 1] * s1 + h1;
        b[x] = row[3 * x + 2] * s2 + h2;
      }
    }
    return true;
  }
  Resample(img, crop, size, [&](int y, int x, int c, float v) {
    out[c * plane + y * size + x] = v * scale[c] + shift[c];
  });
  return true;
}

bool DecodeJpegCrop(JpegDecoder& decoder, RgbImage& img, const std::byte* data, size_t n, int size,
                    uint8_t* out, std::string* error) {
  const size_t row_bytes = static_cast<size_t>(size) * 3;
  Crop crop;
  if (!DecodeForCrop(decoder, img, data, n, size, &crop, error)) {
    std::fill(out, out + row_bytes * size, uint8_t{0});
    return false;
  }
  if (crop.plain) {
    for (int y = 0; y < size; ++y) {
      std::memcpy(out + y * row_bytes,
                  img.pixels.data() + (static_cast<size_t>(crop.cy + y) * img.width + crop.cx) * 3,
                  row_bytes);
    }
    return true;
  }
  Resample(img, crop, size, [&](int y, int x, int c, float v) {
    out[y * row_bytes + x * 3 + c] = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 255.0f)));
  });
  return true;
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

uint64_t CpuBurner::Burn(double seconds, uint64_t salt, const std::atomic<bool>* cancel) const {
  if (seconds <= 0) return 0;
  // Until this thread has used `seconds` of CPU time (its own clock, not an iteration count
  // from the calibration): the calibration is a few ms at process start and moved 5-8% between
  // processes on a host whose clock speed changes, and the simulator's measured host then
  // disagreed with the ranks' burns (CI, 2026-12-02: 3.6 pp on a cost-bound straggler).
  // The slices aim at what is left, at most ~100 us each: a calibration a few % fast then
  // overshoots by a few us, not by a few % (1 ms slices burned 1 ms of cost in 1.03-1.06 ms of
  // CPU here), and a stop request is seen within one slice: a cost of minutes per sample must
  // not hold a run's stop (issue #21).
  const double end = ThreadCpuSeconds() + seconds;
  const double most = std::max(rate_ * 1e-4, 1.0);
  uint64_t x = salt | 1;
  while (!(cancel && cancel->load(std::memory_order_relaxed))) {
    const double left = (end - ThreadCpuSeconds()) * rate_;  // iterations
    if (left < 1) break;
    x = Chain(x, static_cast<uint64_t>(std::min(left, most)));
  }
  return x;
}

const CpuBurner& CpuBurner::Get() {
  static const CpuBurner burner;
  return burner;
}

}  // namespace stallscope
