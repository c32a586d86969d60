// Writing a verifiable dataset directory (`stallscope gen`).
//
// Files are laid out ImageNet-style, `class_NNN/sample_NNNNNNN.bin`, sample i in class
// i % classes. Each file's bytes are FillContent(ContentKey(seed, PathKey(relative path))),
// and a manifest (DirectoryStorage::kManifestName) records the seed, so DirectoryStorage can
// verify every byte it reads back. With format "jpeg" the files are `.jpg` images of
// width × height: a colour and checker period per class plus per-file noise (learnable,
// not verifiable byte for byte).
//
// Thread-safety: a plain function; concurrent calls must use different directories.
#ifndef STALLSCOPE_STORAGE_GENERATE_H_
#define STALLSCOPE_STORAGE_GENERATE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/seed.h"

namespace stallscope {

struct GenerateOptions {
  std::string dir;
  uint64_t samples = 0;
  uint64_t size_mean = 0;
  uint64_t size_stdev = 0;
  uint32_t classes = 10;
  uint64_t seed = kDefaultSeed;
  std::string format = "raw";                   // raw | jpeg
  int width = 256, height = 256, quality = 90;  // jpeg images
};

struct GenerateResult {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

// One image as `gen --format jpeg` writes it (class `cls`, noise from `key`), encoded.
std::vector<std::byte> SampleJpeg(uint32_t cls, uint64_t key, int width, int height, int quality);

// Writes the dataset; calls `progress(files_written)` now and then when given. Throws
// StorageError naming the path on any write failure.
GenerateResult GenerateDataset(const GenerateOptions& options,
                               const std::function<void(uint64_t)>& progress = {});

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_GENERATE_H_
