// ceiling: what this machine does with a dataset directory without stallscope — the plain
// loops a loader cannot beat by much, on the same files, to hold stallscope's rates against
// (tools/bench.sh prints each rate as a fraction of its ceiling).
//
//   read     open / read / close of every file on N threads, one reused 1 MiB buffer per
//            thread, one read per file below 1 MiB
//            (page-cached: after one untimed pass; --cold: every file's pages dropped first
//            with posix_fadvise(DONTNEED), which needs no root for clean pages)
//   jpeg     libjpeg-turbo decode of every file (held in memory) to the smallest DCT scale
//            whose shorter side covers --min-side (stallscope's jpeg-decode rule: 256 for a
//            224 crop), N threads, one decompressor each
//   memcpy   every file's bytes (in memory) copied into a per-thread buffer
//   float    every file's bytes (in memory) converted to float32 / 255 (stallscope's
//            `normalize`)
//
// Files are split among the threads by index (i mod N). Each mode runs --repeat times; the
// median is printed with every run. No stallscope code is used: the point is a baseline
// that owes nothing to the product.
//
//   ceiling DIR [--mode read|jpeg|memcpy|float|all] [--threads N] [--cold] [--min-side S]
//               [--repeat R] [--json]
#include <fcntl.h>
#include <sched.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::atomic<uint64_t> g_sink{0};

struct Options {
  std::string dir;
  std::string mode = "all";
  unsigned threads = 0;  // 0: every core
  bool cold = false;
  int min_side = 256;
  int repeat = 3;
  bool json = false;
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "ceiling: %s\n"
               "usage: ceiling DIR [--mode read|jpeg|memcpy|float|all] [--threads N] [--cold]\n"
               "               [--min-side S] [--repeat R] [--json]\n",
               why.c_str());
  std::exit(2);
}

int PositiveArg(const std::string& flag, const char* value) {
  char* end = nullptr;
  const long v = value ? std::strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || v < 1 || v > 4096) Usage(flag + " needs a whole number, 1 to 4096");
  return static_cast<int>(v);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--help" || a == "-h") Usage("the machine's own rates on a directory's files");
    if (a == "--mode" && next) {
      o.mode = argv[++i];
    } else if (a == "--threads") {
      o.threads = static_cast<unsigned>(PositiveArg(a, next));
      ++i;
    } else if (a == "--min-side") {
      o.min_side = PositiveArg(a, next);
      ++i;
    } else if (a == "--repeat") {
      o.repeat = PositiveArg(a, next);
      ++i;
    } else if (a == "--cold") {
      o.cold = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (!a.empty() && a[0] != '-' && o.dir.empty()) {
      o.dir = a;
    } else {
      Usage("unknown argument " + a);
    }
  }
  if (o.dir.empty()) Usage("a directory is needed");
  if (o.mode != "read" && o.mode != "jpeg" && o.mode != "memcpy" && o.mode != "float" &&
      o.mode != "all") {
    Usage("--mode " + o.mode + ": one of read, jpeg, memcpy, float, all");
  }
  if (o.threads == 0) {  // the cores this process may run on (taskset), as stallscope counts them
    cpu_set_t set;
    CPU_ZERO(&set);
    o.threads = sched_getaffinity(0, sizeof set, &set) == 0
                    ? static_cast<unsigned>(std::max(1, CPU_COUNT(&set)))
                    : std::max(1u, std::thread::hardware_concurrency());
  }
  return o;
}

// Every regular file below `dir`, sorted; hidden files (a generator's manifest) left out.
std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename().string().rfind('.', 0) != 0) {
      files.push_back(it->path().string());
    }
  }
  if (ec) Usage(dir + ": " + ec.message());
  if (files.empty()) Usage(dir + ": no files");
  std::sort(files.begin(), files.end());
  return files;
}

// Runs body(thread, i) for every index i < n, split by i mod threads; returns seconds.
double Parallel(unsigned threads, size_t n, const std::function<void(unsigned, size_t)>& body) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < n; i += threads) body(t, i);
    });
  }
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A regular file's read returns less than asked only at its end, so a file smaller than the
// buffer costs one read: open, read, close, as the plain loop a user would write (reading on
// to a 0-byte read would add a syscall per file and lower the ceiling).
size_t ReadFile(const std::string& path, std::vector<char>& buf) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Usage(path + ": " + std::strerror(errno));
  size_t total = 0;
  for (;;) {
    const ssize_t got = read(fd, buf.data(), buf.size());
    if (got < 0) Usage(path + ": " + std::strerror(errno));
    total += static_cast<size_t>(got);
    if (static_cast<size_t>(got) < buf.size()) break;
  }
  close(fd);
  return total;
}

void DropPages(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    const int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

struct Run {
  double seconds = 0;
  uint64_t items = 0, bytes = 0;
};

Run ReadAll(const Options& o, const std::vector<std::string>& files) {
  if (o.cold) DropPages(files);
  std::vector<std::vector<char>> bufs(o.threads, std::vector<char>(1 << 20));
  std::atomic<uint64_t> bytes{0};
  Run r;
  r.seconds = Parallel(o.threads, files.size(), [&](unsigned t, size_t i) {
    bytes.fetch_add(ReadFile(files[i], bufs[t]), std::memory_order_relaxed);
  });
  r.items = files.size();
  r.bytes = bytes.load();
  return r;
}

// The files' bytes in memory, for the modes that leave the reading out.
std::vector<std::vector<char>> Load(const std::vector<std::string>& files) {
  std::vector<std::vector<char>> data;
  data.reserve(files.size());
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    data.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return data;
}

uint64_t TotalBytes(const std::vector<std::vector<char>>& data) {
  uint64_t n = 0;
  for (const auto& d : data) n += d.size();
  return n;
}

Run DecodeAll(const Options& o, const std::vector<std::vector<char>>& data) {
  std::vector<tjhandle> handles(o.threads);
  for (tjhandle& h : handles) h = tjInitDecompress();
  std::vector<std::vector<unsigned char>> pixels(o.threads);
  std::atomic<uint64_t> bad{0};
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  Run r;
  r.seconds = Parallel(o.threads, data.size(), [&](unsigned t, size_t i) {
    const auto* buf = reinterpret_cast<const unsigned char*>(data[i].data());
    int w = 0, h = 0, sub = 0, space = 0;
    if (tjDecompressHeader3(handles[t], buf, data[i].size(), &w, &h, &sub, &space) != 0) {
      bad.fetch_add(1);
      return;
    }
    int bw = w, bh = h;  // the smallest scale whose shorter side covers min_side
    for (int k = 0; k < count; ++k) {
      const int sw = TJSCALED(w, factors[k]), sh = TJSCALED(h, factors[k]);
      if (std::min(sw, sh) >= o.min_side && int64_t{sw} * sh < int64_t{bw} * bh) {
        bw = sw;
        bh = sh;
      }
    }
    pixels[t].resize(static_cast<size_t>(bw) * bh * 3);
    if (tjDecompress2(handles[t], buf, data[i].size(), pixels[t].data(), bw, 0, bh, TJPF_RGB, 0) !=
        0) {
      bad.fetch_add(1);
    }
  });
  for (tjhandle h : handles) tjDestroy(h);
  if (bad.load() > 0)
    Usage(std::to_string(bad.load()) + " files are not JPEGs libjpeg-turbo reads");
  r.items = data.size();
  r.bytes = TotalBytes(data);
  return r;
}

Run CopyAll(const Options& o, const std::vector<std::vector<char>>& data, bool to_float) {
  size_t largest = 0;
  for (const auto& d : data) largest = std::max(largest, d.size());
  std::vector<std::vector<char>> bytes_out(o.threads, std::vector<char>(largest));
  std::vector<std::vector<float>> floats_out(o.threads, std::vector<float>(to_float ? largest : 0));
  std::atomic<uint64_t> sink{0};
  Run r;
  r.seconds = Parallel(o.threads, data.size(), [&](unsigned t, size_t i) {
    const std::vector<char>& in = data[i];
    if (to_float) {
      float* out = floats_out[t].data();
      const auto* u = reinterpret_cast<const unsigned char*>(in.data());
      for (size_t k = 0; k < in.size(); ++k) out[k] = static_cast<float>(u[k]) * (1.0f / 255.0f);
      sink.fetch_add(static_cast<uint64_t>(out[in.size() / 2]), std::memory_order_relaxed);
    } else {
      std::memcpy(bytes_out[t].data(), in.data(), in.size());
      sink.fetch_add(static_cast<unsigned char>(bytes_out[t][in.size() / 2]),
                     std::memory_order_relaxed);
    }
  });
  r.items = data.size();
  r.bytes = TotalBytes(data);
  g_sink += sink.load();  // what was computed is kept: the compiler cannot drop the work
  return r;
}

void Report(const Options& o, const std::string& mode, std::vector<Run> runs, bool first) {
  std::vector<double> rates;
  for (const Run& r : runs) rates.push_back(static_cast<double>(r.items) / r.seconds);
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double bytes_rate = median * static_cast<double>(runs[0].bytes) / runs[0].items;
  if (o.json) {
    std::string list;
    for (double x : rates) list += (list.empty() ? "" : ", ") + std::to_string(x);
    std::printf(
        "%s{\"mode\": \"%s\", \"threads\": %u, \"files\": %llu, \"bytes\": %llu, "
        "\"files_per_second\": %.1f, \"bytes_per_second\": %.1f, \"runs\": [%s]}",
        first ? "" : ",\n", mode.c_str(), o.threads, static_cast<unsigned long long>(runs[0].items),
        static_cast<unsigned long long>(runs[0].bytes), median, bytes_rate, list.c_str());
    return;
  }
  std::string list;
  for (double x : rates) list += (list.empty() ? "" : ", ") + std::to_string(std::lround(x));
  std::printf("%-22s %2u threads  %9llu files  %10.1f MB  %12.0f files/s  %9.1f MB/s  (runs: %s)\n",
              mode.c_str(), o.threads, static_cast<unsigned long long>(runs[0].items),
              static_cast<double>(runs[0].bytes) / 1e6, median, bytes_rate / 1e6, list.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  const std::vector<std::string> files = List(o.dir);
  const auto want = [&](const char* m) { return o.mode == "all" || o.mode == m; };
  bool first = true;
  if (o.json) std::printf("{\"dir\": \"%s\", \"ceilings\": [\n", o.dir.c_str());
  const auto repeat = [&](const std::string& mode, const std::function<Run()>& one) {
    std::vector<Run> runs;
    for (int k = 0; k < o.repeat; ++k) runs.push_back(one());
    Report(o, mode, std::move(runs), first);
    first = false;
  };
  if (want("read")) {
    if (!o.cold) ReadAll(o, files);  // untimed: the page cache holds the files
    repeat(o.cold ? "read (cold)" : "read (page-cached)", [&] { return ReadAll(o, files); });
  }
  if (want("jpeg") || want("memcpy") || want("float")) {
    const std::vector<std::vector<char>> data = Load(files);
    // (--mode all on files that are not JPEGs leaves the decode out)
    const bool jpegs = data[0].size() > 2 && static_cast<unsigned char>(data[0][0]) == 0xFF &&
                       static_cast<unsigned char>(data[0][1]) == 0xD8;
    if (o.mode == "jpeg" || (want("jpeg") && jpegs)) {
      repeat("jpeg decode", [&] { return DecodeAll(o, data); });
    }
    if (want("memcpy")) repeat("memcpy", [&] { return CopyAll(o, data, false); });
    if (want("float")) repeat("bytes -> float", [&] { return CopyAll(o, data, true); });
  }
  if (o.json) std::printf("\n]}\n");
  return 0;
}
