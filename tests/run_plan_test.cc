// The Pipeline and the simulator take their run plan from the same function
// (pipeline/run_plan.h). For every variant of every shipped scenario, the plan a real Pipeline
// runs (Pipeline::PlanFor over the storage the app builds for it) is the plan the simulator
// gives each rank (Simulator::PlanFor), at one rank; and a few plans are checked against
// numbers worked out here from the scenario files themselves.
#include <gtest/gtest.h>

#include <filesystem>

#include "app/runner.h"
#include "sim/simulator.h"
#include "storage/generate.h"
#include "tests/test_util.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;

TEST(RunPlan, PipelineAndSimulatorPlanEveryShippedScenarioAlike) {
  testing::ScratchDir dir("run-plan");
  // real_directory.yaml reads a `stallscope gen` directory: make a small one.
  const std::string data = (dir.path() / "data").string();
  GenerateDataset({.dir = data, .samples = 300, .size_mean = 9000, .size_stdev = 2000, .seed = 3});
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(STALLSCOPE_SCENARIOS)) {
    if (entry.path().extension() != ".yaml") continue;
    const ScenarioFile file = ScenarioFile::Load(entry.path().string());
    for (const std::string& v : file.variant_names()) {
      SCOPED_TRACE(entry.path().filename().string() + " variant " + v);
      const Scenario s =
          OnThisHost(file.Resolve(v, {ParseSetArgument("dataset.path=" + data)}), NodeOptions{});
      auto storage = MakeStorage(s, /*quiet=*/true);
      const RunPlan real = Pipeline::PlanFor(s.pipeline(), *storage);
      const RunPlan simulated = Simulator::PlanFor(s);
      EXPECT_TRUE(real == simulated);
      EXPECT_EQ(real.batches_per_epoch, simulated.batches_per_epoch);
      EXPECT_EQ(real.staged_stride, simulated.staged_stride);
      EXPECT_EQ(real.preprocess_stage, simulated.preprocess_stage);
      EXPECT_EQ(real.chunks_per_batch, simulated.chunks_per_batch);
      ++compared;
    }
  }
  EXPECT_GE(compared, 20);  // 8 files, 27 variants when this was written
}

TEST(RunPlan, MatchesTheScenarioFilesNumbers) {
  // cold_vs_cached.yaml: 3000 samples of 112 KiB, batch 64, normalize, 2 workers, 3 epochs.
  const Scenario cold =
      ScenarioFile::Load(std::string(STALLSCOPE_SCENARIOS) + "/cold_vs_cached.yaml")
          .Resolve("cold");
  const RunPlan p = Simulator::PlanFor(cold);
  EXPECT_EQ(p.batches_per_epoch, 47u);  // ceil(3000 / 64)
  EXPECT_EQ(p.total_batches, 3u * 47);
  EXPECT_EQ(p.raw_stride, 112u * 1024);         // already a multiple of 4096
  EXPECT_EQ(p.staged_stride, 112u * 1024 * 4);  // float rows
  EXPECT_TRUE(p.normalize);
  EXPECT_EQ(p.chunks_per_batch, 4u);  // 2 workers x 2
  EXPECT_EQ(p.slots, 5u);             // prefetch 4 + 1
  // cluster_what_if.yaml: 1,281,167 samples over 125 x 8 ranks = 1281 per rank, batch 400.
  const Scenario cluster =
      ScenarioFile::Load(std::string(STALLSCOPE_SCENARIOS) + "/cluster_what_if.yaml")
          .Resolve("baseline");
  EXPECT_EQ(Simulator::PlanFor(cluster).batches_per_epoch, 4u);  // ceil(1281 / 400)
  EXPECT_EQ(Simulator::PlanFor(OnThisHost(cluster, NodeOptions{})).batches_per_epoch,
            3203u);  // ceil(n / 400)
}

// normalize_on: device stages jpeg-decode's crop as uint8 pixels, a quarter of its floats'
// bytes, and hands normalize's bytes over as they were read (no float rows, no worker work).
TEST(RunPlan, NormalizingOnTheDeviceStagesBytes) {
  auto plan = [](const std::string& preprocess) {
    return Simulator::PlanFor(
        ScenarioFile::Parse("dataset: {samples: 1000, sample_size: 100KiB}\nrun: {verify: false}\n"
                            "loader: {batch_size: 10, prefetch: 1, preprocess: " +
                                preprocess + "}\n",
                            "t.yaml")
            .Resolve("base"));
  };
  const RunPlan host = plan("jpeg-decode");
  EXPECT_EQ(host.staged_stride, 224u * 224 * 3 * 4);
  EXPECT_TRUE(host.normalize);
  EXPECT_EQ(host.image_side, 0u);
  const RunPlan device = plan("{kind: jpeg-decode, normalize_on: device}");
  EXPECT_EQ(device.staged_stride, 224u * 224 * 3);  // 150,528: a multiple of 64 already
  EXPECT_FALSE(device.normalize);
  EXPECT_EQ(device.image_side, 224u);
  EXPECT_TRUE(device.staged);
  EXPECT_TRUE(device.preprocess_stage);
  EXPECT_EQ(device.staging_bytes(), 2u * 10 * (100 * 1024 + 224 * 224 * 3));
  const RunPlan small = plan("{kind: jpeg-decode, size: 100, normalize_on: device}");
  EXPECT_EQ(small.staged_stride, 30016u);  // 30,000 rounded up to 64
  const RunPlan bytes = plan("{kind: normalize, normalize_on: device}");
  EXPECT_FALSE(bytes.normalize);
  EXPECT_FALSE(bytes.staged);
  EXPECT_FALSE(bytes.preprocess_stage);
  EXPECT_EQ(bytes.staged_stride, bytes.raw_stride);
  EXPECT_EQ(bytes.staging_bytes(), 2u * 10 * 100 * 1024);
}

}  // namespace
}  // namespace stallscope
