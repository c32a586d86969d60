#include "storage/generate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "storage/content.h"
#include "storage/directory_storage.h"
#include "storage/jpeg.h"

namespace stallscope {

namespace fs = std::filesystem;

namespace {

// A class-coloured image: each class has its own base colour and checker period, plus
// per-file noise, so a model can learn the classes and no two files are alike.
void DrawImage(uint32_t cls, uint64_t key, int width, int height, std::vector<uint8_t>& rgb,
               std::vector<std::byte>& noise) {
  rgb.resize(static_cast<size_t>(width) * height * 3);
  noise.resize(rgb.size());
  FillContent(key, noise);
  int base[3];
  for (int c = 0; c < 3; ++c) base[c] = static_cast<int>((ContentKey(cls + 1, c) >> 24) & 0xff);
  const int px = 6 + static_cast<int>(cls % 7), py = 6 + static_cast<int>((cls / 7) % 7);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int stripe = ((x / px) + (y / py)) % 2 ? 40 : -40;
      for (int c = 0; c < 3; ++c) {
        const size_t i = (static_cast<size_t>(y) * width + x) * 3 + c;
        const int v = base[c] + stripe + (static_cast<int>(noise[i]) & 31) - 16;
        rgb[i] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
}

void WriteFile(const std::string& path, const std::byte* data, size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw StorageError(fmt::format("{}: cannot create: {}", path, strerror(errno)));
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      throw StorageError(fmt::format("{}: write failed: {}", path, strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace

std::vector<std::byte> SampleJpeg(uint32_t cls, uint64_t key, int width, int height, int quality) {
  std::vector<uint8_t> rgb;
  std::vector<std::byte> noise;
  DrawImage(cls, key, width, height, rgb, noise);
  return JpegEncoder().Encode(rgb.data(), width, height, quality);
}

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
  std::vector<uint8_t> rgb;
  const bool jpeg = o.format == "jpeg";
  std::unique_ptr<JpegEncoder> encoder;
  if (jpeg) encoder = std::make_unique<JpegEncoder>();
  for (uint64_t i = 0; i < o.samples; ++i) {
    const uint32_t cls = static_cast<uint32_t>(i % classes);
    const std::string rel =
        fmt::format("class_{:03}/sample_{:07}.{}", cls, i, jpeg ? "jpg" : "bin");
    const uint64_t key = ContentKey(o.seed, PathKey(rel));
    if (jpeg) {
      DrawImage(cls, key, o.width, o.height, rgb, buffer);
      buffer = encoder->Encode(rgb.data(), o.width, o.height, o.quality);
    } else {
      buffer.resize(SampleSizeOf(o.seed, i, o.size_mean, o.size_stdev));
      FillContent(key, buffer, ClassKeyOf(rel));
    }
    WriteFile(o.dir + "/" + rel, buffer.data(), buffer.size());
    result.files++;
    result.bytes += buffer.size();
    if (progress && (i + 1) % 1000 == 0) progress(i + 1);
  }
  // Raw files are verifiable from the seed (content version 2); JPEG files are not.
  nlohmann::json manifest = {{"seed", o.seed}, {"samples", o.samples}, {"classes", classes}};
  if (jpeg) {
    manifest.update(
        {{"format", "jpeg"}, {"width", o.width}, {"height", o.height}, {"quality", o.quality}});
  } else {
    manifest.update({{"content", 2},
                     {"format", "raw"},
                     {"size_mean", o.size_mean},
                     {"size_stdev", o.size_stdev}});
  }
  std::ofstream out(fs::path(o.dir) / DirectoryStorage::kManifestName);
  out << manifest.dump(2) << "\n";
  if (!out) throw StorageError(fmt::format("{}: cannot write manifest", o.dir));
  return result;
}

}  // namespace stallscope
