// A rank of a multi-rank test run, started by mpirun from tests/multirank_test.cc:
//
//   rank_main SCENARIO OUT_DIR [straggler]
//
// Each rank runs its shard of SCENARIO's base variant through RunVariant with the MPI
// step barrier, as `stallscope run` does, on a device that records which sample every row
// it received holds (read back from the row's content), and writes OUT_DIR/rank-N.txt (one
// line per step: the epoch, then the sample ids; -1 for a row that is no sample's content)
// and OUT_DIR/rank-N.json (its result, as rank 0 gathers it). With `straggler`, rank 1's
// storage bandwidth is divided by 8: the ground truth that rank 1 is the slow one.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/mpi_job.h"
#include "report/report.h"
#include "tests/test_util.h"

namespace stallscope {
namespace {

// Steps of a fixed length, recording ids like testing::RecordingDevice.
class TimedRecordingDevice final : public Device {
 public:
  TimedRecordingDevice(const SyntheticDataset& d, double step) : recorder_(d), step_(step) {}
  std::string name() const override { return "recording"; }
  void Prepare(uint64_t, uint32_t) override {}
  double CopyIn(int b, const DeviceBatch& batch) override { return recorder_.CopyIn(b, batch); }
  StepTiming Step(int b, const DeviceBatch& batch, double earliest) override {
    return emulated_.Step(b, batch, earliest);
  }
  double nominal_step_seconds() const override { return step_; }
  const std::vector<std::vector<int64_t>>& batches() const { return recorder_.batches(); }

 private:
  testing::RecordingDevice recorder_;
  double step_;
  EmulatedDevice emulated_{step_};
};

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: rank_main SCENARIO OUT_DIR [straggler]\n");
    return 2;
  }
  MpiJob* job = MpiJob::FromLauncher();
  if (!job) {
    std::fprintf(stderr, "rank_main: start me with mpirun\n");
    return 2;
  }
  Scenario s = ScenarioFile::Load(argv[1]).Resolve("base");
  s.cluster.gpus_per_node = job->size();
  if (argc > 3 && std::string(argv[3]) == "straggler" && job->rank() == 1) {
    s.storage.model.bandwidth_bytes_per_second /= 8;
  }
  auto storage = MakeStorage(s, true);
  TimedRecordingDevice device({.dataset = s.dataset, .seed = s.seed}, s.gpu.step_time);
  RunHooks hooks{.quiet = true};
  hooks.shard = job->shard();
  hooks.step_sync = job;
  const VariantResult v = RunVariant(s, *storage, device, hooks);
  const std::string prefix = std::string(argv[2]) + "/rank-" + std::to_string(job->rank());
  std::ofstream ids(prefix + ".txt");
  const uint64_t per_epoch = v.epochs.empty() ? 1 : device.batches().size() / v.epochs.size();
  for (size_t b = 0; b < device.batches().size(); ++b) {
    ids << b / per_epoch;
    for (int64_t id : device.batches()[b]) ids << ' ' << id;
    ids << '\n';
  }
  std::ofstream(prefix + ".json") << RankToJson(RankResultOf(v, job->rank(), 0)).dump();
  return 0;
}

}  // namespace
}  // namespace stallscope

int main(int argc, char** argv) { return stallscope::Main(argc, argv); }
