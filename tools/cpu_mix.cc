// cpu_mix: what sharing this host's cores costs each of a loader's threads (issue #18).
//
//   build/tools/cpu_mix MIX [SECONDS=3] [DIR]
//
// MIX names the threads to run together, one letter each:
//   w  a worker: verify + normalize a 112 KiB sample into a 64 MiB staging region, then 50 us
//      of CPU (real_directory.yaml's preprocess: normalize, cost 50us), over and over;
//   c  an emulated device's input copy: 45 MB (a direct-qd1 batch's staging slot), then 5 ms
//      asleep (the step); C the same copy back to back;
//   r  a reader: DIR's files one at a time, O_DIRECT, open + pread + close (the one-in-flight
//      read of direct-qd1);
//   b  the same buffered and cold: each file dropped from the page cache (POSIX_FADV_DONTNEED)
//      before its read (cold-qd1's read; the loader drops the whole directory each epoch);
//   s  `calibrate --dir`'s busy neighbour: integer work in registers, in 1 ms bursts with a
//      20 us sleep between (app/bench_dir.cc's Spinners).
// For each thread: units done, its CPU time per unit (CLOCK_THREAD_CPUTIME_ID) and its wall
// rate. Run the letters alone, then together (e.g. `r`, then `wwcr`): on the 2-core VM the
// reader fell from 9,427 to 5,588 files/s beside the other three (docs/status.md, issue #18).
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/preprocess.h"
#include "storage/content.h"

namespace {

using stallscope::ContentKey;

double Now(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

std::atomic<bool> stop{false};

struct Tally {
  double cpu = 0, wall = 0;
  long units = 0;
};

// Runs `unit` until stop, timing the thread's CPU and wall clock.
template <typename F>
void Loop(Tally& r, F unit) {
  const double c0 = Now(CLOCK_THREAD_CPUTIME_ID), w0 = Now(CLOCK_MONOTONIC);
  while (!stop && unit()) r.units++;
  r.cpu = Now(CLOCK_THREAD_CPUTIME_ID) - c0;
  r.wall = Now(CLOCK_MONOTONIC) - w0;
}

void Worker(Tally& r) {
  constexpr size_t kBytes = 112 * 1024;
  std::vector<std::byte> raw(kBytes);
  const uint64_t key = ContentKey(1, 1);
  stallscope::FillContent(key, raw, 7);
  std::vector<float> region((64 << 20) / sizeof(float));
  size_t at = 0;
  volatile bool ok = true;
  Loop(r, [&] {
    ok = ok && stallscope::MatchesContent(key, raw, 7);
    if (at + kBytes > region.size()) at = 0;
    stallscope::NormalizeBytes(raw.data(), kBytes, region.data() + at);
    at += kBytes;
    const double b = Now(CLOCK_THREAD_CPUTIME_ID);
    while (Now(CLOCK_THREAD_CPUTIME_ID) - b < 50e-6) {
    }
    return true;
  });
}

void Copier(Tally& r, double pause) {
  constexpr size_t kBytes = 45 << 20;
  std::vector<std::byte> from(kBytes, std::byte{1}), to(kBytes, std::byte{2});
  Loop(r, [&] {
    std::memcpy(to.data(), from.data(), kBytes);
    if (pause > 0) std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    return true;
  });
}

struct File {
  std::string path;
  size_t bytes = 0;  // rounded up to 4 KiB: one O_DIRECT read of the whole file
};

void Spinner(Tally& r) {
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  double burst = Now(CLOCK_MONOTONIC);
  Loop(r, [&] {
    if (Now(CLOCK_MONOTONIC) - burst > 1e-3) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      burst = Now(CLOCK_MONOTONIC);
    }
    for (int k = 0; k < 512; ++k) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    return x != 0;  // never 0
  });
}

void Reader(Tally& r, const std::vector<File>& files, bool direct) {
  size_t most = 4096;
  for (const File& f : files) most = std::max(most, f.bytes);
  void* buf = std::aligned_alloc(4096, most);
  size_t i = 0;
  Loop(r, [&] {
    const File& f = files[i++ % files.size()];
    const int fd = open(f.path.c_str(), O_RDONLY | (direct ? O_DIRECT : 0));
    if (fd < 0) return false;
    if (!direct) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    const bool ok = pread(fd, buf, f.bytes, 0) >= 0;
    close(fd);
    return ok;
  });
  std::free(buf);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cpu_mix MIX [SECONDS] [DIR]   (MIX: letters w, c, C, r, b, s)\n");
    return 2;
  }
  const std::string mix = argv[1];
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3;
  std::vector<File> files;
  if (argc > 3) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(argv[3])) {
      if (e.is_regular_file())
        files.push_back({e.path().string(), (e.file_size() + 4095) / 4096 * 4096});
    }
  }
  if (mix.find_first_not_of("wcCrbs") != std::string::npos || seconds <= 0 ||
      (mix.find_first_of("rb") != std::string::npos && files.empty())) {
    std::fprintf(stderr,
                 "cpu_mix: MIX is letters w, c, C, r, b, s; r and b need a DIR with files\n");
    return 2;
  }
  std::vector<Tally> tally(mix.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < mix.size(); ++k) {
    Tally& t = tally[k];
    switch (mix[k]) {
      case 'w':
        threads.emplace_back(Worker, std::ref(t));
        break;
      case 'c':
        threads.emplace_back(Copier, std::ref(t), 0.005);
        break;
      case 'C':
        threads.emplace_back(Copier, std::ref(t), 0.0);
        break;
      case 's':
        threads.emplace_back(Spinner, std::ref(t));
        break;
      default:
        threads.emplace_back(Reader, std::ref(t), std::cref(files), mix[k] == 'r');
        break;
    }
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < mix.size(); ++k) {
    const Tally& t = tally[k];
    std::printf("%s %c: %ld units, CPU per unit %.1f us, %.0f units/s, %.2f of a core\n",
                mix.c_str(), mix[k], t.units, t.units ? t.cpu / t.units * 1e6 : 0.0,
                t.wall > 0 ? t.units / t.wall : 0.0, t.wall > 0 ? t.cpu / t.wall : 0.0);
  }
  return 0;
}
