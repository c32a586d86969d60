// Deterministic sample content and sizes.
//
// Every byte that SimulatedStorage, MemoryStorage and `stallscope gen` produce is a pure
// function of (seed, sample key), so any consumer can check a delivered sample without
// keeping a copy: that is what `run.verify` does. The generator is a counter-based hash
// (SplitMix64's finalizer over seed-keyed counters), chosen because it is cheap (about one
// multiply pair per 8 bytes) and has no sequential state, so any word can be produced alone.
//
// Thread-safety: all functions are pure and safe to call from any thread.
#ifndef STALLSCOPE_STORAGE_CONTENT_H_
#define STALLSCOPE_STORAGE_CONTENT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace stallscope {

// The key that seeds one sample's bytes.
uint64_t ContentKey(uint64_t seed, uint64_t sample_key);

// A stable 64-bit key for a path relative to a dataset root (used for directory datasets
// written by `stallscope gen`, whose sorted order is not their generation order).
uint64_t PathKey(std::string_view relative_path);

// Samples of one class share a signature so that a model can learn the classes (the CUDA
// device trains on them): the lowest byte of each of the first kSignatureWords 8-byte words
// is 0x40 or 0xC0, by a per-class bit pattern; every other byte is the keyed hash. With
// kNoClass there is no signature.
inline constexpr uint64_t kNoClass = ~0ULL;
inline constexpr size_t kSignatureWords = 512;

// The class key of a file in a class-folder dataset: a hash of its top-level folder's name,
// or kNoClass for a file at the root.
uint64_t ClassKeyOf(std::string_view relative_path);

// Fills `out` with the content of the sample keyed `key` (from ContentKey) of class
// `class_key` (a label, or ClassKeyOf a path).
void FillContent(uint64_t key, std::span<std::byte> out, uint64_t class_key = kNoClass);

// Returns true when `data` is exactly the content FillContent(key, class_key) would write.
bool MatchesContent(uint64_t key, std::span<const std::byte> data, uint64_t class_key = kNoClass);

// The class label of a sample: derived from its content key, uniform over [0, classes).
uint32_t LabelOf(uint64_t key, uint32_t classes);

// Size in bytes of sample `id` when sizes are drawn from a normal distribution with
// `mean` and `stdev` (stdev 0 = fixed size), clipped to [1, mean + 6 * stdev].
uint64_t SampleSizeOf(uint64_t seed, uint64_t id, uint64_t mean, uint64_t stdev);

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_CONTENT_H_
