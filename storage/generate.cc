#include "storage/generate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "storage/content.h"
#include "storage/directory_storage.h"

namespace stallscope {

namespace fs = std::filesystem;

GenerateResult GenerateDataset(const GenerateOptions& o,
                               const std::function<void(uint64_t)>& progress) {
  const uint32_t classes = std::max<uint32_t>(o.classes, 1);
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) throw StorageError(fmt::format("{}: cannot create: {}", o.dir, ec.message()));
  for (uint32_t c = 0; c < classes && c < o.samples; ++c) {
    const fs::path d = fs::path(o.dir) / fmt::format("class_{:03}", c);
    fs::create_directories(d, ec);
    if (ec) throw StorageError(fmt::format("{}: cannot create: {}", d.string(), ec.message()));
  }
  GenerateResult result;
  std::vector<std::byte> buffer;
  for (uint64_t i = 0; i < o.samples; ++i) {
    const std::string rel = fmt::format("class_{:03}/sample_{:07}.bin", i % classes, i);
    const uint64_t size = SampleSizeOf(o.seed, i, o.size_mean, o.size_stdev);
    buffer.resize(size);
    FillContent(ContentKey(o.seed, PathKey(rel)), buffer, ClassKeyOf(rel));
    const std::string path = o.dir + "/" + rel;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw StorageError(fmt::format("{}: cannot create: {}", path, strerror(errno)));
    size_t done = 0;
    while (done < size) {
      const ssize_t n = write(fd, buffer.data() + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        close(fd);
        throw StorageError(fmt::format("{}: write failed: {}", path, strerror(err)));
      }
      done += static_cast<size_t>(n);
    }
    close(fd);
    result.files++;
    result.bytes += size;
    if (progress && (i + 1) % 1000 == 0) progress(i + 1);
  }
  nlohmann::json manifest = {{"content", 2}, {"seed", o.seed},           {"samples", o.samples},
                             {"size_mean", o.size_mean}, {"size_stdev", o.size_stdev},
                             {"classes", classes},       {"format", "raw"}};
  std::ofstream out(fs::path(o.dir) / DirectoryStorage::kManifestName);
  out << manifest.dump(2) << "\n";
  if (!out) throw StorageError(fmt::format("{}: cannot write manifest", o.dir));
  return result;
}

}  // namespace stallscope
