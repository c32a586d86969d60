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

// Fills `out` with the content of the sample keyed `key` (from ContentKey).
void FillContent(uint64_t key, std::span<std::byte> out);

// Returns true when `data` is exactly the content FillContent(key) would write.
bool MatchesContent(uint64_t key, std::span<const std::byte> data);

// The class label of a sample: derived from its content key, uniform over [0, classes).
uint32_t LabelOf(uint64_t key, uint32_t classes);

// Size in bytes of sample `id` when sizes are drawn from a normal distribution with
// `mean` and `stdev` (stdev 0 = fixed size), clipped to [1, mean + 6 * stdev].
uint64_t SampleSizeOf(uint64_t seed, uint64_t id, uint64_t mean, uint64_t stdev);

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_CONTENT_H_
