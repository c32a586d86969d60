#include "storage/directory_storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/align.h"
#include "storage/content.h"

namespace stallscope {

namespace fs = std::filesystem;

namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

DirectoryStorage::DirectoryStorage(const DirectoryStorageOptions& options) : options_(options) {
  std::error_code ec;
  const fs::path root(options.dataset.path);
  if (!fs::is_directory(root, ec)) {
    if (fs::exists(root, ec)) throw StorageError(options.dataset.path + ": not a directory");
    throw StorageError(fmt::format(
        "{}: no such directory (`stallscope gen {} --samples 2000 --size 112KiB` makes a test "
        "dataset)",
        options.dataset.path, options.dataset.path));
  }
  ListFiles(root);
  if (files_.empty()) {
    throw StorageError(
        fmt::format("{}: no regular files to read (empty dataset)", options.dataset.path));
  }
  std::sort(files_.begin(), files_.end(),
            [](const File& a, const File& b) { return a.relative < b.relative; });

  // Labels: index of the top-level folder (ImageNet-style class folders), modulo classes.
  std::map<std::string, uint32_t> classes;
  for (const File& f : files_) {
    const auto slash = f.relative.find('/');
    if (slash != std::string::npos) classes.emplace(f.relative.substr(0, slash), 0);
  }
  uint32_t next = 0;
  for (auto& [name, index] : classes) index = next++;

  for (uint64_t i = 0; i < files_.size(); ++i) {
    File& f = files_[i];
    f.full = options.dataset.path + "/" + f.relative;
    const std::string& full = f.full;
    const int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw StorageError(fmt::format("{}: cannot open: {}", full, ErrnoText(errno)));
    const off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    if (size < 0) throw StorageError(fmt::format("{}: cannot stat: {}", full, ErrnoText(errno)));
    f.bytes = static_cast<uint64_t>(size);
    if (options.read_at_most > 0) f.bytes = std::min(f.bytes, options.read_at_most);
    const auto slash = f.relative.find('/');
    if (slash != std::string::npos && options.dataset.classes > 0) {
      f.label = classes[f.relative.substr(0, slash)] % options.dataset.classes;
    }
    max_bytes_ = std::max(max_bytes_, f.bytes);
    total_bytes_ += f.bytes;
  }

  std::ifstream manifest(root / kManifestName);
  if (manifest) {
    const nlohmann::json j = nlohmann::json::parse(manifest, nullptr, /*allow_exceptions=*/false);
    // Content version 2 carries class signatures; older manifests cannot be verified.
    if (j.is_object() && j.value("content", 1) == 2 && j.contains("seed") &&
        j["seed"].is_number_unsigned()) {
      seed_ = j["seed"].get<uint64_t>();
    }
  }

  direct_ = options.storage.direct_io;
  if (direct_) {
    const int fd = open(files_[0].full.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) {
      direct_ = false;
      if (!options.quiet) {
        std::fprintf(stderr, "notice: %s refuses O_DIRECT; reading buffered\n",
                     options.dataset.path.c_str());
      }
    }
    if (fd >= 0) close(fd);
  }

  reader_ = std::make_unique<UringFileReader>(
      static_cast<const FileReadSource&>(*this),
      UringFileReader::Options{options.io.io_threads, options.io.io_depth, direct_,
                               options.use_io_uring, options.io.read_timeout, options.io.io_slice});
  uring_ok_ = reader_->uses_io_uring();
  if (!uring_ok_ && options.use_io_uring && !options.quiet) {
    std::fprintf(stderr, "notice: io_uring refused (%s); reading with pread\n",
                 ErrnoText(reader_->uring_error()).c_str());
  }
}

// Lists the regular files below `root` by their real paths. A symbolic link is never a
// second name for a sample: one that resolves inside the root leads to a file or folder
// that is listed already by its real path (counted as a duplicate; this also makes link
// loops harmless), and one that resolves outside the root, or nowhere, is not part of the
// dataset (counted as outside). Both counts are said once.
void DirectoryStorage::ListFiles(const std::filesystem::path& root) {
  std::error_code ec;
  const fs::path real_root = fs::canonical(root, ec);
  if (ec)
    throw StorageError(fmt::format("{}: cannot resolve: {}", options_.dataset.path, ec.message()));
  const std::string root_prefix = real_root.string() + "/";
  uint64_t outside = 0, duplicates = 0;
  std::vector<fs::path> stack = {root};
  while (!stack.empty()) {
    const fs::path dir = stack.back();
    stack.pop_back();
    fs::directory_iterator it(dir, ec);
    if (ec && dir == root) {
      throw StorageError(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
    }
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code sec;
      if (it->is_symlink(sec)) {
        const std::string target = fs::canonical(it->path(), sec).string();
        const bool in = !sec && (target == real_root.string() || target.rfind(root_prefix, 0) == 0);
        ++(in ? duplicates : outside);
        continue;
      }
      if (it->is_directory(sec)) {
        stack.push_back(it->path());
      } else if (it->is_regular_file(sec)) {
        std::string rel = it->path().lexically_relative(root).generic_string();
        if (rel != kManifestName) files_.push_back({std::move(rel), "", 0, 0});
      } else {
        listing_skips_.Add(it->path().string() + " (not a regular file)");
      }
    }
    if (ec) listing_skips_.Add(fmt::format("{} (cannot list: {})", dir.string(), ec.message()));
    ec.clear();
  }
  if (listing_skips_.count > 0 && !options_.quiet) {
    std::string names;
    for (const std::string& n : listing_skips_.first) names += "\n  " + n;
    std::fprintf(stderr, "notice: %s: %llu entr%s skipped, not samples:%s%s\n",
                 options_.dataset.path.c_str(),
                 static_cast<unsigned long long>(listing_skips_.count),
                 listing_skips_.count == 1 ? "y" : "ies", names.c_str(),
                 listing_skips_.count > listing_skips_.first.size() ? "\n  ..." : "");
  }
  if ((outside || duplicates) && !options_.quiet) {
    std::fprintf(stderr,
                 "notice: %s: skipped %llu symbolic link(s) leading outside it or nowhere, and "
                 "%llu leading to files or folders listed by their real paths\n",
                 options_.dataset.path.c_str(), static_cast<unsigned long long>(outside),
                 static_cast<unsigned long long>(duplicates));
  }
  skipped_links_ = outside;
  duplicate_links_ = duplicates;
}

DirectoryStorage::~DirectoryStorage() = default;

bool DirectoryStorage::Verify(uint64_t sample, std::span<const std::byte> data) const {
  if (!seed_) return true;
  return data.size() == files_[sample].bytes &&
         MatchesContent(ContentKey(*seed_, PathKey(files_[sample].relative)), data,
                        ClassKeyOf(files_[sample].relative));
}

void DirectoryStorage::BeginEpoch(int epoch) {
  if (options_.storage.cold) DropFromPageCache(0, 1);
}

void DirectoryStorage::DropFromPageCache(uint64_t first, uint64_t stride) const {
  for (uint64_t i = first; i < files_.size(); i += std::max<uint64_t>(stride, 1)) {
    const int fd = open(files_[i].full.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the read will report it
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

void DirectoryStorage::Submit(std::span<const ReadRequest> requests, ReadCallback* callback) {
  reader_->Submit(requests, callback);
}

std::string DirectoryStorage::Fingerprint() const {
  return fmt::format("directory v1 {} files={} bytes={} seed={}", options_.dataset.path,
                     files_.size(), total_bytes_, seed_ ? std::to_string(*seed_) : "none");
}

std::string DirectoryStorage::Describe() const {
  return fmt::format("directory: {} ({} files, {:.1f} MB){}{}{}, {} via {}", options_.dataset.path,
                     files_.size(), static_cast<double>(total_bytes_) / 1e6,
                     direct_ ? ", O_DIRECT" : "", options_.storage.cold ? ", cold" : "",
                     seed_ ? ", verifiable" : "", options_.io.io_threads,
                     uring_ok_ ? "io_uring thread(s)" : "pread thread(s)") +
         (listing_skips_.count
              ? fmt::format(", {} entries skipped (not samples)", listing_skips_.count)
              : "");
}

}  // namespace stallscope
