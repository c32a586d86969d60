// `stallscope bench-dir`: how fast this host reads a dataset directory (app/bench_dir.h) and,
// with --batch or --workload, the real pipeline's training loop over the same files on the
// emulated accelerator, with the number of accelerators they could keep busy.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "app/bench_dir.h"
#include "app/commands.h"
#include "app/errors.h"
#include "app/make_device.h"
#include "app/mpi_job.h"
#include "app/outputs.h"
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
  if (auto on = ValueOf(kNormalizeOnNames, o.normalize_on)) {
    s.loader.preprocess.normalize_on = *on;
  } else {
    throw BadInput("--normalize-on " + o.normalize_on + ": expected host or device");
  }
  const auto cost = ParseDuration(o.preprocess_cost);
  if (!cost || *cost < 0 || *cost > 60) {
    throw BadInput("--preprocess-cost " + o.preprocess_cost +
                   ": expected a duration from 0 to 60s, e.g. 2ms");
  }
  s.loader.preprocess.cost = *cost;
  s.gpu.device = DeviceKind::kEmulated;
  s.gpu.step_time = step;
  s.run.epochs = 1;
  s.run.verify = false;
  return s;
}

// How many accelerators could be kept at AU >= 90%: the slowest shared stage (storage, CPU
// preprocessing; each accelerator has its own H2D link) against 90% of one accelerator's
// demand, from the capacities measured in the run (0 when the run itself was below 90%).
double SharedCapacity(const VariantResult& v) {
  double shared = v.capacity_fetch.value_or(1e300);
  if (v.capacity_preprocess) shared = std::min(shared, *v.capacity_preprocess);
  return shared;
}
uint64_t MaxAccelerators(double shared, double demand, double au) {
  return au < 0.9 ? 0 : static_cast<uint64_t>(shared / (0.9 * demand));
}

// The training loop's JSON and its summary on stdout; `clients`: the benchmark's clients.
nlohmann::json TrainingReport(const BenchDirCommandOptions& o, const Scenario& s,
                              const VariantResult& v, uint64_t max_accelerators, int clients) {
  const uint32_t batch = s.loader.batch_size;
  const double step = s.gpu.step_time;
  const double cost = s.loader.preprocess.cost;
  const bool on_device = s.loader.preprocess.normalize_on == NormalizeOn::kDevice &&
                         s.loader.preprocess.kind != PreprocessKind::kNone;
  const std::string preprocess =
      std::string(NameOf(s.loader.preprocess.kind)) +
      (on_device ? " normalized on the device" : "") +
      (cost > 0 ? fmt::format(" + {} of CPU per sample", FormatDuration(cost)) : "");
  nlohmann::json training = VariantToJson(v);
  training["max_accelerators_at_au_0_9"] = max_accelerators;
  training["batch_size"] = batch;
  training["step_seconds"] = step;
  training["preprocess"] = NameOf(s.loader.preprocess.kind);
  training["preprocess_cost_seconds"] = cost;
  training["normalize_on"] = NameOf(kNormalizeOnNames, s.loader.preprocess.normalize_on);
  std::cout << fmt::format(
      "\ntraining loop ({}batch {}, step {}, {} workers, preprocess {}, emulated accelerator{}):\n"
      "  GPU idle {:.1f}%   AU {:.1f}%   {:.0f} samples/s\n  {}\n"
      "  accelerators {} could keep at AU >= 90%: {}\n",
      o.workload.empty() ? "" : o.workload + ", ", batch, FormatDuration(step), o.workers,
      preprocess, clients > 1 ? fmt::format(" per client, {} clients", clients) : "",
      v.gpu_idle_fraction * 100, v.au * 100, v.samples_per_second, v.bottleneck_text,
      clients > 1 ? "this storage and all clients together" : "this storage and host",
      max_accelerators);
  return training;
}

// The batch and step time of --workload or --batch/--step-time. Throws BadInput.
std::pair<uint32_t, double> BatchAndStep(const BenchDirCommandOptions& o) {
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
  return {batch, *step};
}

// `mpirun -np N stallscope bench-dir`: MLPerf Storage's multi-client arrangement. Every rank
// reads its share of the files (listing index rank, rank + N, …), all starting together after
// a barrier; rank 0 reports the clients together and each client. With a training loop, each
// rank trains on its shard with synchronous steps, and the accelerators all clients together
// could keep busy are the clients' summed capacities over one accelerator's demand.
int BenchDirRanks(const BenchDirCommandOptions& o, MpiJob& job) {
  const bool root = job.rank() == 0;
  std::optional<Scenario> training;  // the training loop, when one was asked for
  std::ofstream json_out;
  std::string error;
  try {
    const auto [batch, step] = BatchAndStep(o);
    if (batch > 0) training = TrainingScenario(o, batch, step);
    if (root) json_out = OpenJson(o.json);
  } catch (const BadInput& e) {
    error = ErrorMessage(e);
  }
  if (job.AnyRankRefused(error)) return kExitBadInput;
  BenchDirResult mine;
  try {
    mine = BenchDirectory(o.storage, job.shard(), [&] {
      if (job.AnyRankRefused("")) throw PeerRefused{};  // every rank opened the directory
    });
  } catch (const PeerRefused&) {
    return kExitBadInput;
  } catch (const BadInput& e) {  // before the barrier: agreed as a set-up error
    job.AnyRankRefused(ErrorMessage(e));
    return kExitBadInput;
  }
  const std::vector<std::string> texts = job.GatherAtRoot(BenchDirToJson(mine).dump());
  const std::vector<std::string> lat =
      job.GatherAtRoot(std::string(reinterpret_cast<const char*>(mine.latencies.data()),
                                   mine.latencies.size() * sizeof(double)));
  nlohmann::json doc;
  if (root) {
    std::vector<BenchDirResult> clients(texts.size(), mine);
    nlohmann::json each = nlohmann::json::array();
    for (size_t k = 0; k < texts.size(); ++k) {
      const nlohmann::json j = nlohmann::json::parse(texts[k]);
      BenchDirResult& c = clients[k];
      c.bytes = j["bytes"];
      c.skipped = j["skipped"];
      c.seconds = j["seconds"];
      c.cpu_seconds_per_file = j["cpu_seconds_per_file"];
      c.latencies.resize(lat[k].size() / sizeof(double));
      std::memcpy(c.latencies.data(), lat[k].data(), lat[k].size());
      each.push_back({{"client", k},
                      {"files_read", c.latencies.size()},
                      {"bytes", c.bytes},
                      {"seconds", c.seconds},
                      {"bytes_per_second", j["bytes_per_second"]},
                      {"files_per_second", j["files_per_second"]},
                      {"latency_seconds", j["latency_seconds"]},
                      {"skipped", c.skipped}});
    }
    const BenchDirResult all = CombineClients(clients);
    std::cout << fmt::format(
                     "{} clients (client k reads files k, k + {}, … of the listing), "
                     "together:\n",
                     texts.size(), texts.size())
              << FormatBenchDir(all);
    for (const nlohmann::json& c : each) {
      std::cout << fmt::format(
          "  client {}: {} files, {:.1f} MB/s, p50 {}, p99 {}\n", c["client"].get<int>(),
          c["files_read"].get<uint64_t>(), c["bytes_per_second"].get<double>() / 1e6,
          FormatDuration(c["latency_seconds"]["p50"]), FormatDuration(c["latency_seconds"]["p99"]));
    }
    doc = BenchDirToJson(all);
    doc["clients"] = each;
  }
  bool skipped = job.AnyRank(mine.skipped > 0);
  if (training) {
    Scenario& s = *training;
    s.cluster.gpus_per_node = static_cast<uint32_t>(job.size());  // one accelerator per client
    VariantResult v;
    try {
      auto storage = MakeStorage(s, true);
      auto device = MakeDevice(s);
      RunHooks hooks{.quiet = true};
      hooks.shard = job.shard();
      hooks.step_sync = &job;
      v = RunVariant(s, *storage, *device, hooks);
    } catch (const std::exception& e) {  // the others may be in a collective: end the job
      std::fprintf(stderr, "stallscope: rank %d: the training loop failed: %s\n", job.rank(),
                   e.what());
      job.Abort(kExitRunFailed);
    }
    const std::vector<std::string> parts = job.GatherAtRoot(nlohmann::json{
        {"rank", RankToJson(RankResultOf(v, job.rank(), job.rank()))},
        {"shared", SharedCapacity(v)}}.dump());
    if (root) {
      std::vector<RankResult> ranks;
      double shared = 0;
      for (const std::string& t : parts) {
        const nlohmann::json j = nlohmann::json::parse(t);
        ranks.push_back(RankFromJson(j["rank"]));
        shared += j["shared"].get<double>();
      }
      CombineRanks(v, std::move(ranks));
      const uint64_t max = MaxAccelerators(shared, s.loader.batch_size / s.gpu.step_time, v.au);
      doc["training"] = TrainingReport(o, s, v, max, job.size());
    }
  }
  if (root && json_out.is_open()) json_out << doc.dump(2) << "\n";
  return skipped ? kExitRunFailed : 0;
}

}  // namespace

int BenchDirCommand(const BenchDirCommandOptions& o) {
  if (MpiJob* job = MpiJob::FromLauncher(); job && job->size() > 1) return BenchDirRanks(o, *job);
  const auto [batch, step] = BatchAndStep(o);
  // The training loop's options are checked before anything is read.
  const std::optional<Scenario> training =
      batch > 0 ? std::optional(TrainingScenario(o, batch, step)) : std::nullopt;
  std::ofstream json_out = OpenJson(o.json);
  const BenchDirResult r = BenchDirectory(o.storage);
  std::cout << FormatBenchDir(r) << std::flush;
  nlohmann::json doc = BenchDirToJson(r);
  if (training) {
    const Scenario& s = *training;
    auto storage = MakeStorage(s, o.storage.quiet);
    auto device = MakeDevice(s);
    const VariantResult v = RunVariant(s, *storage, *device, RunHooks{.quiet = o.storage.quiet});
    doc["training"] =
        TrainingReport(o, s, v, MaxAccelerators(SharedCapacity(v), batch / step, v.au), 1);
  }
  if (json_out.is_open()) json_out << doc.dump(2) << "\n";
  return r.skipped ? kExitRunFailed : 0;
}

}  // namespace stallscope
