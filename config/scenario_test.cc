#include "config/scenario.h"

#include <gtest/gtest.h>

#include <string>

namespace stallscope {
namespace {

// Resolves `text` (variant "base" unless given) and returns the error message, or "" if ok.
std::string ErrorOf(const std::string& text, const std::string& variant = "base",
                    const std::vector<std::string>& sets = {}) {
  try {
    std::vector<Override> o;
    for (const auto& s : sets) o.push_back(ParseSetArgument(s));
    ScenarioFile::Parse(text, "s.yaml").Resolve(variant, o);
    return "";
  } catch (const ScenarioError& e) {
    return e.what();
  }
}

// Expects the scenario (with `sets` on `variant`) to be refused with a message containing
// `needle`.
void ExpectError(const std::string& text, const std::string& needle,
                 const std::string& variant = "base", const std::vector<std::string>& sets = {}) {
  const std::string e = ErrorOf(text, variant, sets);
  EXPECT_NE(e.find(needle), std::string::npos) << e;
}

TEST(Scenario, DefaultsAndUnitsAreRead) {
  const Scenario s = ScenarioFile::Parse(R"(
name: t
dataset: {samples: 100, sample_size: {mean: 4KiB, stdev: 1KiB}}
storage: {kind: simulated, bandwidth: 400MB/s, latency: {p50: 4ms, p99: 30ms}}
cache: {tiers: [{kind: memory, capacity: 1GiB}]}
loader: {batch_size: 8, preprocess: {kind: normalize, cost: 100us}}
gpu: {step_time: 50ms}
cost: {gpu_hour: 2.5}
)",
                                         "t.yaml")
                         .Resolve("base");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.dataset.sample_size, 4096u);
  EXPECT_EQ(s.dataset.sample_size_stdev, 1024u);
  EXPECT_DOUBLE_EQ(s.storage.model.bandwidth_bytes_per_second, 400e6);
  EXPECT_DOUBLE_EQ(s.storage.model.latency_p99_seconds, 0.030);
  ASSERT_EQ(s.cache_tiers.size(), 1u);
  EXPECT_EQ(s.cache_tiers[0].capacity, 1073741824u);
  EXPECT_EQ(s.cache_tiers[0].policy, PolicyKind::kFillOnce);
  EXPECT_DOUBLE_EQ(s.loader.preprocess.cost, 100e-6);
  EXPECT_EQ(s.loader.prefetch, 4u);  // default
  EXPECT_DOUBLE_EQ(*s.gpu_hour_cost, 2.5);
}

TEST(Scenario, VariantsAndSetOverrideDottedKeysAndListItems) {
  const ScenarioFile f = ScenarioFile::Parse(R"(
cache: {tiers: [{kind: memory, capacity: 1GiB}]}
variants:
  cold: {cache.tiers: []}
  deep: {loader.prefetch: 16, cache.tiers.0.capacity: 2GiB}
)",
                                             "v.yaml");
  EXPECT_EQ(f.variant_names(), (std::vector<std::string>{"cold", "deep"}));
  EXPECT_TRUE(f.Resolve("cold").cache_tiers.empty());
  const Scenario deep = f.Resolve("deep");
  EXPECT_EQ(deep.loader.prefetch, 16u);
  EXPECT_EQ(deep.cache_tiers[0].capacity, 2u << 30);
  const Scenario set =
      f.Resolve("deep", {ParseSetArgument("loader.prefetch=2"),
                         ParseSetArgument("cache.tiers=[{kind: memory, capacity: 1MB}]")});
  EXPECT_EQ(set.loader.prefetch, 2u);
  EXPECT_EQ(set.cache_tiers[0].capacity, 1000000u);
  EXPECT_NE(ErrorOf("variants: {a: {}}", "b").find("no variant named 'b'"), std::string::npos);
}

TEST(Scenario, UnknownKeyNamesFileLineColumnAndPath) {
  ExpectError("storage:\n  kind: simulated\n  bandwith: 400MB/s\n",
              "s.yaml:3:3: storage.bandwith: unknown key (did you mean 'bandwidth'?)");
}

TEST(Scenario, WrongTypeIsNamed) {
  ExpectError("loader:\n  workers: many\n",
              "s.yaml:2:12: loader.workers: expected a whole number, got 'many'");
  ExpectError("loader: [1, 2]\n", "s.yaml:1:9: loader: expected a mapping");
  ExpectError("run: {verify: perhaps}\n", "run.verify: expected true or false");
  ExpectError("loader: {preprocess: {kind: jpeg-decode, normalize_on: gpu}}\n",
              "loader.preprocess.normalize_on: expected one of host | device, got 'gpu'");
}

TEST(Scenario, NegativeAndZeroSizesAreRefused) {
  ExpectError("dataset:\n  sample_size: -4KiB\n",
              "s.yaml:2:16: dataset.sample_size: a size cannot be negative");
  ExpectError("cache: {tiers: [{kind: memory, capacity: 0}]}\n",
              "cache.tiers.0.capacity: must be a positive size");
  ExpectError("loader: {batch_size: 0}\n", "loader.batch_size: must be at least 1, got 0");
  ExpectError("loader: {workers: -2}\n", "loader.workers: must be at least 1, got -2");
  ExpectError("loader: {io_slice: 50us}\n",
              "s.yaml:1:20: loader.io_slice: expected 0 (the kernel's slice) or 100us to 100ms");
  ExpectError("loader: {io_slice: 1s}\n", "loader.io_slice: expected 0");
}

TEST(Scenario, IoSliceDefaultsTo100usAndZeroLeavesTheKernels) {
  auto slice = [](const std::string& yaml) {
    return ScenarioFile::Parse(yaml, "s.yaml").Resolve("base").loader.io.io_slice;
  };
  EXPECT_DOUBLE_EQ(slice("name: t\n"), 100e-6);
  EXPECT_DOUBLE_EQ(slice("loader: {io_slice: 0}\n"), 0);
  EXPECT_DOUBLE_EQ(slice("loader: {io_slice: 2ms}\n"), 2e-3);
}

// A scenario (or --set) that gives the node's jpeg_decode rate and not jpeg_decode_device
// decodes at that rate with the normalization on the device too; given, each stands.
TEST(Scenario, JpegDecodeDeviceFollowsJpegDecodeUnlessGiven) {
  auto node = [](const std::string& yaml, const std::vector<std::string>& sets = {}) {
    std::vector<Override> o;
    for (const auto& s : sets) o.push_back(ParseSetArgument(s));
    return ScenarioFile::Parse(yaml, "s.yaml").Resolve("base", o).cluster.node;
  };
  EXPECT_DOUBLE_EQ(node("cluster: {node: {jpeg_decode: 3MB/s}}\n").jpeg_decode_device, 3e6);
  EXPECT_DOUBLE_EQ(node("name: t\n", {"cluster.node.jpeg_decode=7MB/s"}).jpeg_decode_device, 7e6);
  const NodeOptions both =
      node("cluster: {node: {jpeg_decode: 3MB/s, jpeg_decode_device: 4MB/s}}\n");
  EXPECT_DOUBLE_EQ(both.jpeg_decode, 3e6);
  EXPECT_DOUBLE_EQ(both.jpeg_decode_device, 4e6);
  EXPECT_DOUBLE_EQ(node("name: t\n").jpeg_decode_device, NodeOptions{}.jpeg_decode_device);
}

TEST(Scenario, BadUnitIsNamed) {
  ExpectError("storage:\n  bandwidth: 400MB\n",
              "s.yaml:2:14: storage.bandwidth: expected a rate such as 400MB/s");
  ExpectError("gpu: {step_time: 50}\n", "gpu.step_time: expected a duration");
  ExpectError("dataset: {sample_size: 4KB8}\n", "dataset.sample_size: expected a size");
}

TEST(Scenario, ErrorsInVariantsAndSetPointAtTheirOrigin) {
  ExpectError("variants:\n  fast:\n    loader.prefetch: lots\n",
              "s.yaml:3:22: loader.prefetch: expected a whole number", "fast");
  ExpectError("variants:\n  fast:\n    loader.prefech: 2\n",
              "s.yaml:3:5 (variant fast): loader.prefech: unknown key", "fast");
  ExpectError("{}", "--set 'storage.bandwidth=fast': storage.bandwidth: expected a rate", "base",
              {"storage.bandwidth=fast"});
  EXPECT_THROW(ParseSetArgument("novalue"), ScenarioError);
}

TEST(Scenario, YamlSyntaxErrorNamesLine) {
  // Line 5 is indented one space, inside no mapping: the error is there, not at the end.
  const std::string e =
      ErrorOf("name: x\nstorage:\n  kind: simulated\n  bandwidth: 1GB/s\n loader: {}\n");
  EXPECT_NE(e.find("s.yaml:5:2: YAML syntax error"), std::string::npos) << e;
  // An unclosed list: where the parser noticed (the end of the text, line 3).
  EXPECT_NE(ErrorOf("storage:\n  kind: [simulated\n").find("s.yaml:3:1: YAML syntax error"),
            std::string::npos);
}

TEST(Scenario, DirectoryStorageNeedsAPath) {
  ExpectError("storage: {kind: directory}\n", "dataset.path");
}

TEST(Scenario, LatencyQuantilesMustBeOrdered) {
  ExpectError("storage: {latency: {p50: 10ms, p99: 5ms}}\n",
              "storage.latency.p99: must not be below latency.p50");
}

}  // namespace
}  // namespace stallscope
