#include "storage/content.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace stallscope {
namespace {

// SplitMix64 finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

inline uint64_t Word(uint64_t key, uint64_t index) { return Mix(key + index * kGolden); }

// Word `index` of a sample of class `class_key`: the keyed hash with the class signature in
// its lowest byte for the first kSignatureWords words.
inline uint64_t ClassWord(uint64_t key, uint64_t class_key, uint64_t index) {
  const uint64_t w = Word(key, index);
  if (class_key == kNoClass || index >= kSignatureWords) return w;
  const uint64_t bit = (Mix(class_key * kGolden + index + 0x7369676e) >> 17) & 1;
  return (w & ~0xffULL) | (bit ? 0xc0 : 0x40);
}

}  // namespace

uint64_t ContentKey(uint64_t seed, uint64_t sample_key) {
  return Mix(Mix(seed ^ 0x5354414c4c53434fULL) + sample_key);
}

uint64_t PathKey(std::string_view relative_path) {
  // FNV-1a, then mixed: stable across builds and platforms.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : relative_path) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return Mix(h);
}

uint64_t ClassKeyOf(std::string_view relative_path) {
  const size_t slash = relative_path.find('/');
  if (slash == std::string_view::npos) return kNoClass;
  return PathKey(relative_path.substr(0, slash));
}

void FillContent(uint64_t key, std::span<std::byte> out, uint64_t class_key) {
  const size_t words = out.size() / 8;
  std::byte* p = out.data();
  for (size_t i = 0; i < words; ++i) {
    const uint64_t w = ClassWord(key, class_key, i);
    std::memcpy(p + i * 8, &w, 8);
  }
  if (const size_t tail = out.size() % 8) {
    const uint64_t w = ClassWord(key, class_key, words);
    std::memcpy(p + words * 8, &w, tail);
  }
}

bool MatchesContent(uint64_t key, std::span<const std::byte> data, uint64_t class_key) {
  const size_t words = data.size() / 8;
  const std::byte* p = data.data();
  uint64_t diff = 0;
  for (size_t i = 0; i < words; ++i) {
    uint64_t got;
    std::memcpy(&got, p + i * 8, 8);
    diff |= got ^ ClassWord(key, class_key, i);
  }
  if (const size_t tail = data.size() % 8) {
    const uint64_t w = ClassWord(key, class_key, words);
    diff |= static_cast<uint64_t>(std::memcmp(p + words * 8, &w, tail) != 0);
  }
  return diff == 0;
}

uint32_t LabelOf(uint64_t key, uint32_t classes) {
  if (classes == 0) return 0;
  return static_cast<uint32_t>(Mix(key ^ 0x6c6162656cULL) % classes);
}

uint64_t SampleSizeOf(uint64_t seed, uint64_t id, uint64_t mean, uint64_t stdev) {
  if (stdev == 0) return mean;
  // Box–Muller from two hashed uniforms: deterministic per (seed, id) on every platform.
  const uint64_t a = Mix(seed * 31 + id * kGolden + 1);
  const uint64_t b = Mix(a + kGolden);
  const double u1 = (static_cast<double>(a >> 11) + 1.0) / 9007199254740993.0;
  const double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  const double size = static_cast<double>(mean) + z * static_cast<double>(stdev);
  const double hi = static_cast<double>(mean) + 6.0 * static_cast<double>(stdev);
  return static_cast<uint64_t>(std::clamp(size, 1.0, hi));
}

}  // namespace stallscope
