// bench_pipeline: the pipeline's own speed limits, side by side in one run.
//
//   1. memory      in-memory storage, preprocess none, zero step time: the loader's overhead
//                  per sample (target: >= 1,000,000 samples/s of 4 KiB on 2 cores)
//   2. directory   a page-cached directory of 4 KiB files through io_uring, preprocess none
//                  (target: >= 150,000 files/s)
//   3. dir+float   the same files, bytes -> float32 / 255 on 2 workers: the work PyTorch's
//                  DataLoader does in tools/compare/torch_dataloader.py
//   4. torch       that script on the same files (when python3-torch is installed), and the
//                  ratio of 3 to 4
//
// Each measurement is the median of --repeat runs. Results go to stdout as a table; the
// README records them with the date and this command line.
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "gpu/emulated_device.h"
#include "metrics/metrics.h"
#include "pipeline/pipeline.h"
#include "storage/directory_storage.h"
#include "storage/generate.h"
#include "storage/synthetic.h"

namespace stallscope {
namespace {

struct Options {
  uint64_t samples = 50000;
  uint64_t size = 4096;
  uint32_t batch = 256;
  uint32_t workers = 2;
  uint32_t epochs = 4;
  int repeat = 3;
  std::string dir = "/tmp/stallscope-bench-4k";
  bool torch = true;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Samples per second of `epochs` epochs through the real Pipeline; with `observe`, live
// metrics and the trace recording are on.
double Measure(Storage& storage, const Options& o, const std::string& preprocess,
               bool observe = false) {
  std::vector<double> rates;
  for (int r = 0; r < o.repeat; ++r) {
    Cache cache(Cache::Options{.num_samples = storage.num_samples()});
    EmulatedDevice device(0);
    PipelineOptions p;
    p.loader.batch_size = o.batch;
    p.loader.prefetch = 4;
    p.loader.workers = o.workers;
    p.loader.preprocess.kind = *ValueOf(kPreprocessKindNames, preprocess);
    p.run.epochs = o.epochs;
    p.run.verify = false;
    VariantMetrics metrics("bench", "observed", {});
    if (observe) {
      p.observer = &metrics;
      p.trace = true;
    }
    Pipeline pipeline(p, storage, cache, device);
    const RunRecord rec = pipeline.Run();
    if (rec.failed) {
      std::fprintf(stderr, "bench: run failed: %s\n", rec.error.c_str());
      std::exit(1);
    }
    uint64_t n = 0;
    for (const BatchRecord& b : rec.batches) n += b.samples;
    rates.push_back(static_cast<double>(n) / (rec.end - rec.start));
  }
  return Median(rates);
}

// Runs the PyTorch DataLoader script in its best arrangement (--search) and the environment
// peer_env.py gives it (printed); returns its samples/s, or 0 when torch is missing.
double MeasureTorch(const Options& o) {
  const std::filesystem::path compare = std::filesystem::path(__FILE__).parent_path() / "compare";
  const std::string cmd = fmt::format(
      "/usr/bin/python3 {} -- /usr/bin/python3 {} {} --workers {} --batch {} --epochs {} "
      "--repeat {} --search 2>/dev/null",
      (compare / "peer_env.py").string(), (compare / "torch_dataloader.py").string(), o.dir,
      o.workers, o.batch, std::max<uint32_t>(o.epochs / 2, 1), o.repeat);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 0;
  char line[4096];
  double rate = 0;
  while (std::fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "samples_per_second %lf", &rate) == 1) continue;
    std::printf("   %s", line);  // the peer's environment and the arrangements tried
  }
  pclose(p);
  return rate;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--samples")
      o.samples = std::stoull(next());
    else if (a == "--dir")
      o.dir = next();
    else if (a == "--repeat")
      o.repeat = std::stoi(next());
    else if (a == "--epochs")
      o.epochs = static_cast<uint32_t>(std::stoul(next()));
    else if (a == "--no-torch")
      o.torch = false;
    else {
      std::fprintf(stderr,
                   "usage: bench_pipeline [--samples N] [--dir DIR] [--repeat N] [--epochs N] "
                   "[--no-torch]\n");
      return 2;
    }
  }
  std::printf(
      "bench_pipeline: %llu samples of %llu B, batch %u, %u workers, %u epochs, median "
      "of %d\n",
      (unsigned long long)o.samples, (unsigned long long)o.size, o.batch, o.workers, o.epochs,
      o.repeat);

  MemoryStorage memory({.dataset = {.samples = o.samples, .sample_size = o.size}, .seed = 1});
  const double mem_rate = Measure(memory, o, "none");
  std::printf("%-44s %12.0f samples/s  (%.0f MB/s)\n", "1. memory storage, preprocess none",
              mem_rate, mem_rate * o.size / 1e6);

  const bool fresh =
      !std::filesystem::exists(std::filesystem::path(o.dir) / ".stallscope-gen.json");
  if (fresh) {
    GenerateDataset({.dir = o.dir, .samples = o.samples, .size_mean = o.size, .classes = 10});
  }
  DirectoryStorage dir({.dataset = {.path = o.dir}, .quiet = true});
  if (dir.num_samples() != o.samples) {
    std::fprintf(stderr, "bench: %s holds %llu files, expected %llu\n", o.dir.c_str(),
                 (unsigned long long)dir.num_samples(), (unsigned long long)o.samples);
    return 2;
  }
  Options warm = o;
  warm.repeat = 1;
  warm.epochs = 1;
  Measure(dir, warm, "none");  // fill the page cache
  const double dir_rate = Measure(dir, o, "none");
  std::printf("%-44s %12.0f files/s    (%s)\n", "2. page-cached directory, preprocess none",
              dir_rate, dir.uses_io_uring() ? "io_uring" : "pread");
  const double float_rate = Measure(dir, o, "normalize");
  std::printf("%-44s %12.0f samples/s\n", "3. page-cached directory, bytes -> float", float_rate);
  // Metrics and trace overhead: the same run, alternated with and without, medians.
  std::vector<double> off, on;
  for (int r = 0; r < o.repeat; ++r) {
    Options one = o;
    one.repeat = 1;
    off.push_back(Measure(dir, one, "normalize", false));
    on.push_back(Measure(dir, one, "normalize", true));
  }
  const double off_rate = Median(off), on_rate = Median(on);
  std::printf("%-44s %12.0f samples/s  (%.1f%% of the same run without: overhead %.1f%%)\n",
              "3b. the same with live metrics + trace on", on_rate, 100 * on_rate / off_rate,
              100 * (1 - on_rate / off_rate));
  if (o.torch) {
    const double torch_rate = MeasureTorch(o);
    if (torch_rate > 0) {
      std::printf("%-44s %12.0f samples/s\n", "4. PyTorch DataLoader, bytes -> float", torch_rate);
      std::printf("%-44s %12.1fx\n", "   stallscope (3) / PyTorch (4)", float_rate / torch_rate);
    } else {
      std::printf("4. PyTorch DataLoader: not measured (install python3-torch)\n");
    }
  }
  return 0;
}

}  // namespace
}  // namespace stallscope

int main(int argc, char** argv) { return stallscope::Main(argc, argv); }
