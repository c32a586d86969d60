// `stallscope bench-dir`: how fast this host reads a dataset directory (app/bench_dir.h) and,
// with --batch or --workload, the real pipeline's training loop over the same files on the
// emulated accelerator, with the number of accelerators they could keep busy.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "app/bench_dir.h"
#include "app/commands.h"
#include "app/errors.h"
#include "app/make_device.h"
#include "app/runner.h"
#include "base/units.h"
#include "report/report.h"
#include "storage/jpeg.h"

namespace stallscope {
namespace {

// MLPerf Storage's H100 workloads: batch size and step time (DLIO's published configs).
struct Workload {
  const char* name;
  uint32_t batch;
  double step_seconds;
};
constexpr Workload kWorkloads[] = {
    {"resnet50", 400, 0.224}, {"unet3d", 7, 0.323}, {"cosmoflow", 1, 0.00350}};

// True when the first regular file found below `dir` starts like a JPEG.
bool DirectoryHoldsJpegs(const std::string& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().filename().string().starts_with(".stallscope")) {
      continue;
    }
    std::ifstream f(it->path(), std::ios::binary);
    char head[3] = {};
    f.read(head, 3);
    return f.gcount() == 3 && LooksLikeJpeg(reinterpret_cast<const std::byte*>(head), 3);
  }
  return false;
}

// The training loop's scenario: the directory as read by the benchmark, one epoch, the
// emulated accelerator. Throws BadInput for a bad --preprocess.
Scenario TrainingScenario(const BenchDirCommandOptions& o, uint32_t batch, double step) {
  Scenario s;
  s.name = "bench-dir";
  s.variant = o.workload.empty() ? "training" : o.workload;
  s.file = o.storage.dataset.path;
  s.dataset = o.storage.dataset;
  s.storage = o.storage.storage;
  s.storage.kind = StorageKind::kDirectory;
  s.loader.batch_size = batch;
  s.loader.workers = o.workers;
  s.loader.io = o.storage.io;
  if (o.preprocess == "auto") {
    s.loader.preprocess.kind =
        DirectoryHoldsJpegs(s.dataset.path) ? PreprocessKind::kJpegDecode : PreprocessKind::kNone;
  } else if (auto kind = ValueOf(kPreprocessKindNames, o.preprocess)) {
    s.loader.preprocess.kind = *kind;
  } else {
    throw BadInput("--preprocess " + o.preprocess +
                   ": expected auto, none, normalize or jpeg-decode");
  }
  s.gpu.device = DeviceKind::kEmulated;
  s.gpu.step_time = step;
  s.run.epochs = 1;
  s.run.verify = false;
  return s;
}

// Runs the training loop, prints its summary and returns its JSON.
nlohmann::json TrainingLoop(const BenchDirCommandOptions& o, uint32_t batch, double step) {
  const Scenario s = TrainingScenario(o, batch, step);
  auto storage = MakeStorage(s, o.storage.quiet);
  auto device = MakeDevice(s);
  const VariantResult v = RunVariant(s, *storage, *device, RunHooks{.quiet = o.storage.quiet});
  // How many accelerators this storage and host could keep at AU >= 90%: the slowest
  // shared stage (storage, CPU preprocessing; each accelerator has its own H2D link)
  // against 90% of one accelerator's demand, from the capacities measured in this run.
  double shared = v.capacity_fetch.value_or(1e300);
  if (v.capacity_preprocess) shared = std::min(shared, *v.capacity_preprocess);
  const double demand = batch / step;
  const uint64_t max_accelerators = v.au < 0.9 ? 0 : static_cast<uint64_t>(shared / (0.9 * demand));
  const char* preprocess = NameOf(s.loader.preprocess.kind);
  nlohmann::json training = VariantToJson(v);
  training["max_accelerators_at_au_0_9"] = max_accelerators;
  training["batch_size"] = batch;
  training["step_seconds"] = step;
  training["preprocess"] = preprocess;
  std::cout << fmt::format(
      "\ntraining loop ({}batch {}, step {}, {} workers, preprocess {}, emulated accelerator):\n"
      "  GPU idle {:.1f}%   AU {:.1f}%   {:.0f} samples/s\n  {}\n"
      "  accelerators this storage and host could keep at AU >= 90%: {}\n",
      o.workload.empty() ? "" : o.workload + ", ", batch, FormatDuration(step), o.workers,
      preprocess, v.gpu_idle_fraction * 100, v.au * 100, v.samples_per_second, v.bottleneck_text,
      max_accelerators);
  return training;
}

}  // namespace

int BenchDirCommand(const BenchDirCommandOptions& o) {
  uint32_t batch = o.batch;
  std::string step_text = o.step_time;
  if (!o.workload.empty()) {
    const Workload* w = nullptr;
    for (const Workload& k : kWorkloads) {
      if (o.workload == k.name) w = &k;
    }
    if (!w) throw BadInput("--workload " + o.workload + ": expected resnet50, unet3d or cosmoflow");
    batch = w->batch;
    step_text = fmt::format("{}s", w->step_seconds);
  }
  const std::optional<double> step = ParseDuration(step_text);
  if (!step || *step < 0) throw BadInput("--step-time " + step_text + ": expected a duration");
  if (batch > 0 && *step <= 0) {
    throw BadInput("--step-time: the training loop needs a positive step time (or --workload)");
  }
  std::ofstream json_out;
  if (!o.json.empty()) {
    json_out.open(o.json);
    if (!json_out) throw BadInput(o.json + ": cannot write the --json file");
  }
  const BenchDirResult r = BenchDirectory(o.storage);
  std::cout << FormatBenchDir(r) << std::flush;
  nlohmann::json doc = BenchDirToJson(r);
  if (batch > 0) doc["training"] = TrainingLoop(o, batch, *step);
  if (json_out.is_open()) json_out << doc.dump(2) << "\n";
  return r.skipped ? kExitRunFailed : 0;
}

}  // namespace stallscope
