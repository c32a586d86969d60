// `stallscope gen`: a dataset directory of verifiable raw files or class-coloured JPEGs.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "app/commands.h"
#include "base/errors.h"
#include "base/units.h"
#include "storage/generate.h"

namespace stallscope {

int GenCommand(const GenCommandOptions& options) {
  const std::string& dir = options.dir;
  const uint64_t samples = options.samples, seed = options.seed;
  const std::string &size_text = options.size, &format = options.format;
  const uint32_t classes = options.classes;
  const bool quiet = options.quiet;
  if (format != "raw" && format != "jpeg") {
    throw BadInput("--format " + format + ": expected raw or jpeg");
  }
  if (samples == 0) throw BadInput("--samples: must be at least 1");
  GenerateOptions o;
  o.dir = dir;
  o.samples = samples;
  o.classes = classes;
  o.seed = seed;
  o.format = format;
  if (format == "jpeg") {
    // --size is the image's pixels, WxH (default 256x256).
    const std::string text = size_text.empty() ? "256x256" : size_text;
    int w = 0, h = 0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%dx%d%c", &w, &h, &extra) != 2 || w < 8 || h < 8 || w > 8192 ||
        h > 8192) {
      throw BadInput("--size " + text +
                     ": with --format jpeg, expected the image size WxH in pixels (8 to "
                     "8192), e.g. 256x256");
    }
    o.width = w;
    o.height = h;
  } else {
    const std::string text = size_text.empty() ? "112KiB" : size_text;
    std::string mean_text = text, stdev_text = "0";
    if (const auto colon = text.find(':'); colon != std::string::npos) {
      mean_text = text.substr(0, colon);
      stdev_text = text.substr(colon + 1);
    }
    const auto mean = ParseSize(mean_text);
    const auto stdev = ParseSize(stdev_text);
    if (!mean || *mean < 1 || !stdev || *stdev < 0) {
      throw BadInput("--size " + text +
                     ": expected SIZE or SIZE:STDEV, e.g. 112KiB or 112KiB:20KiB");
    }
    o.size_mean = static_cast<uint64_t>(*mean);
    o.size_stdev = static_cast<uint64_t>(*stdev);
  }
  const bool tty = !quiet && isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  const GenerateResult r = GenerateDataset(o, [&](uint64_t done) {
    if (tty)
      std::fprintf(stderr, "\r\033[Kgen: %llu / %llu files", (unsigned long long)done,
                   (unsigned long long)samples);
  });
  if (tty) std::fprintf(stderr, "\r\033[K");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) {
    std::cout << fmt::format("wrote {} files, {} ({}), {} classes, seed {} to {} in {:.1f} s\n",
                             r.files, FormatBytes(static_cast<double>(r.bytes)),
                             FormatBinaryBytes(static_cast<double>(r.bytes)), classes, seed, dir,
                             secs);
  }
  return 0;
}

}  // namespace stallscope
