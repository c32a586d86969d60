// The table and the result JSON on hand-made VariantResults: every number a user reads is
// the one put in, under its own name. Each field gets its own value, so a field written under
// another's name fails.
#include "report/report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace stallscope {
namespace {

// A fetch-bound variant with two cache tiers and three epochs; no value repeats.
VariantResult ColdVariant() {
  VariantResult v;
  v.name = "cold";
  v.device = "emulated";
  v.gpu_idle_fraction = 0.375;
  v.au = 0.5671;
  v.window_seconds = 12.5;
  v.wall_seconds = 14.25;
  v.busy_seconds = 7.09;
  v.steps = 87;
  v.samples_per_second = 1234.4;
  v.bytes_per_second = 55.5e6;
  v.bytes_storage = 111111;
  v.bytes_by_tier = {{"memory", 222222}, {"disk", 333333}};
  v.stall = {.fetch = 3.25, .preprocess = 0.75, .transfer = 0.4375, .other = 0.0625};
  v.bottleneck_stage = "fetch";
  v.bottleneck_text = "fetch-bound: storage delivers 41% of what the GPU consumes";
  v.capacity_fetch = 3500;
  v.capacity_preprocess = std::nullopt;  // no preprocessing: the stage did no work
  v.capacity_transfer = 90000;
  v.capacity_gpu = 5120;
  v.fetch_batches_in_flight = 4.25;
  v.cache = {{.name = "memory",
              .policy = "fill-once",
              .hits = 700,
              .misses = 300,
              .evictions = 5,
              .hit_ratio = 0.7,
              .bytes = 4444},
             {.name = "disk",
              .policy = "lru",
              .hits = 90,
              .misses = 210,
              .evictions = 17,
              .hit_ratio = 0.3,
              .bytes = 5555,
              .write_drops = 3}};
  v.cache_hit_ratio = 0.79;
  v.samples_delivered = 5568;
  v.samples_verified = 5566;
  v.integrity_errors = 1;
  v.samples_skipped = 2;
  v.skipped_samples = {42, 4242};
  v.read_errors = 3;
  v.step_wait_p50 = 0.031;
  v.step_wait_p99 = 0.092;
  v.epochs = {
      {.epoch = 0,
       .tiers = {{.lookups = 100, .hits = 10, .bytes = 1000, .evictions = 0, .hit_ratio = 0.1},
                 {.lookups = 90, .hits = 9, .bytes = 900, .evictions = 1, .hit_ratio = 0.11}},
       .gpu_idle_fraction = 0.81,
       .cache_hit_ratio = 0.19,
       .samples_per_second = 1500,
       .window_seconds = 4.5},
      {.epoch = 1,
       .tiers = {{.lookups = 200, .hits = 186, .bytes = 18600, .evictions = 2, .hit_ratio = 0.93},
                 {.lookups = 14, .hits = 4, .bytes = 400, .evictions = 6, .hit_ratio = 0.29}},
       .gpu_idle_fraction = 0.22,
       .cache_hit_ratio = 0.95,
       .samples_per_second = 2500,
       .window_seconds = 4.0},
      {.epoch = 2,
       .tiers = {{.lookups = 300, .hits = 291, .bytes = 29100, .evictions = 3, .hit_ratio = 0.97},
                 {.lookups = 9, .hits = 7, .bytes = 700, .evictions = 8, .hit_ratio = 0.78}},
       .gpu_idle_fraction = 0.08,
       .cache_hit_ratio = 0.99,
       .samples_per_second = 2700,
       .window_seconds = 3.5}};
  return v;
}

// A compute-bound variant with only a disk tier, every capacity known but the GPU's.
VariantResult CachedVariant() {
  VariantResult v;
  v.name = "cached";
  v.device = "cuda:ignored, the document takes the first variant's";
  v.gpu_idle_fraction = 0.125;
  v.au = 0.8612;
  v.window_seconds = 6.5;
  v.samples_per_second = 2048.25;
  v.stall = {.fetch = 0.51, .preprocess = 0.27, .transfer = 0.09, .other = 0.03};
  v.bottleneck_stage = "gpu";
  v.bottleneck_text = "compute-bound: the GPU is busy 88% of the window";
  v.capacity_fetch = 9100;
  v.capacity_preprocess = 12000;
  v.capacity_transfer = 80000;
  v.capacity_gpu = 0;  // unknown
  v.cache = {{.name = "disk", .policy = "lru", .hits = 1, .misses = 2, .evictions = 9}};
  v.cache_hit_ratio = 0.6;
  v.epochs = {{.epoch = 0, .tiers = {}, .gpu_idle_fraction = 0.44},
              {.epoch = 1, .tiers = {}, .gpu_idle_fraction = 0.02}};
  return v;
}

// Cold, as measured on a real GPU: CUPTI busy time, H2D copies, a model and its loss.
VariantResult ColdOnAGpu() {
  VariantResult v = ColdVariant();
  v.device = "cuda:NVIDIA H200";
  v.gpu.busy_source = "cupti";
  v.event_busy_fraction = 0.61;
  v.gpu.h2d_bytes = 3'000'000'000;
  v.gpu.h2d_seconds = 0.5;
  v.gpu.h2d_overlap_seconds = 0.4;
  v.gpu.loss = {2.5f, 2.25f, 2.0f};
  v.gpu.facts = {{"hidden_width", 4096}, {"calibrated_step_seconds", 0.03}};
  v.gpu.notes = {"CUPTI activity API"};
  v.loss_first = 2.3456;
  v.loss_last = 0.125;
  return v;
}

// The cells of the table row labelled `label` (columns are parted by two spaces or more);
// `label` "" is the header. Empty when there is no such row.
std::vector<std::string> Cells(const std::string& table, const std::string& label) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(label + "  ", 0) != 0) continue;
    const std::string rest = line.substr(label.size());
    std::vector<std::string> cells;
    for (size_t i = rest.find_first_not_of(' '); i != std::string::npos;) {
      const size_t end = rest.find("  ", i);
      cells.push_back(rest.substr(i, end == std::string::npos ? end : end - i));
      i = end == std::string::npos ? end : rest.find_first_not_of(' ', end);
    }
    return cells;
  }
  return {};
}

using Strings = std::vector<std::string>;

TEST(VariantToJson, WritesEveryDesignFieldWithTheValuePutIn) {
  const nlohmann::json j = VariantToJson(ColdVariant());
  EXPECT_EQ(j["name"], "cold");
  EXPECT_EQ(j["device"], "emulated");
  EXPECT_DOUBLE_EQ(j["gpu_idle_fraction"].get<double>(), 0.375);
  EXPECT_DOUBLE_EQ(j["au"].get<double>(), 0.5671);
  EXPECT_DOUBLE_EQ(j["window_seconds"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(j["wall_seconds"].get<double>(), 14.25);
  EXPECT_DOUBLE_EQ(j["busy_seconds"].get<double>(), 7.09);
  EXPECT_EQ(j["steps"], 87);
  EXPECT_DOUBLE_EQ(j["samples_per_second"].get<double>(), 1234.4);
  EXPECT_DOUBLE_EQ(j["bytes_per_second"].get<double>(), 55.5e6);
  EXPECT_EQ(j["bytes_read"],
            (nlohmann::json{{"storage", 111111}, {"memory", 222222}, {"disk", 333333}}));
  const auto& stall = j["stall_seconds"];
  EXPECT_DOUBLE_EQ(stall["fetch"].get<double>(), 3.25);
  EXPECT_DOUBLE_EQ(stall["preprocess"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(stall["transfer"].get<double>(), 0.4375);
  EXPECT_DOUBLE_EQ(stall["other"].get<double>(), 0.0625);
  EXPECT_EQ(j["bottleneck"]["stage"], "fetch");
  EXPECT_EQ(j["bottleneck"]["text"], "fetch-bound: storage delivers 41% of what the GPU consumes");
  const auto& capacity = j["bottleneck"]["capacity_samples_per_second"];
  EXPECT_DOUBLE_EQ(capacity["fetch"].get<double>(), 3500);
  EXPECT_DOUBLE_EQ(capacity["transfer"].get<double>(), 90000);
  EXPECT_DOUBLE_EQ(capacity["gpu"].get<double>(), 5120);
  EXPECT_DOUBLE_EQ(j["fetch_batches_in_flight"].get<double>(), 4.25);
  EXPECT_EQ(j["cache"]["memory"], (nlohmann::json{{"policy", "fill-once"},
                                                  {"hits", 700},
                                                  {"misses", 300},
                                                  {"hit_ratio", 0.7},
                                                  {"bytes", 4444},
                                                  {"evictions", 5}}));
  EXPECT_EQ(j["cache"]["disk"]["policy"], "lru");
  EXPECT_EQ(j["cache"]["disk"]["hits"], 90);
  EXPECT_EQ(j["cache"]["disk"]["misses"], 210);
  EXPECT_DOUBLE_EQ(j["cache"]["disk"]["hit_ratio"].get<double>(), 0.3);
  EXPECT_EQ(j["cache"]["disk"]["evictions"], 17);
  EXPECT_EQ(j["cache"]["disk"]["write_drops"], 3);
  EXPECT_DOUBLE_EQ(j["cache_hit_ratio"].get<double>(), 0.79);
  EXPECT_EQ(j["samples_delivered"], 5568);
  EXPECT_EQ(j["samples_verified"], 5566);
  EXPECT_EQ(j["integrity_errors"], 1);
  EXPECT_EQ(j["samples_skipped"], 2);
  EXPECT_EQ(j["skipped_samples"], (nlohmann::json{42, 4242}));
  EXPECT_EQ(j["read_errors"], 3);
  EXPECT_DOUBLE_EQ(j["step_wait_seconds"]["p50"].get<double>(), 0.031);
  EXPECT_DOUBLE_EQ(j["step_wait_seconds"]["p99"].get<double>(), 0.092);
  EXPECT_EQ(j["gpus"], 1);
}

TEST(VariantToJson, AStageThatDidNoWorkHasCapacityNull) {
  const nlohmann::json cold = VariantToJson(ColdVariant());
  const auto& c = cold["bottleneck"]["capacity_samples_per_second"];
  ASSERT_TRUE(c.contains("preprocess"));  // present, and null: not 0 samples/s
  EXPECT_TRUE(c["preprocess"].is_null());
  EXPECT_FALSE(c["fetch"].is_null());
  const nlohmann::json cached = VariantToJson(CachedVariant());
  const auto& d = cached["bottleneck"]["capacity_samples_per_second"];
  EXPECT_TRUE(d["gpu"].is_null());  // capacity_gpu 0: unknown
  EXPECT_DOUBLE_EQ(d["preprocess"].get<double>(), 12000);
}

TEST(VariantToJson, EpochsInOrderWithTheirOwnNumbersAndPerTierCounts) {
  const nlohmann::json epochs = VariantToJson(ColdVariant())["epochs"];
  ASSERT_EQ(epochs.size(), 3u);
  const double idle[] = {0.81, 0.22, 0.08}, hit[] = {0.19, 0.95, 0.99};
  const double rate[] = {1500, 2500, 2700}, window[] = {4.5, 4.0, 3.5};
  for (int e = 0; e < 3; ++e) {
    SCOPED_TRACE(e);
    EXPECT_EQ(epochs[e]["epoch"], e);
    EXPECT_DOUBLE_EQ(epochs[e]["gpu_idle_fraction"].get<double>(), idle[e]);
    EXPECT_DOUBLE_EQ(epochs[e]["cache_hit_ratio"].get<double>(), hit[e]);
    EXPECT_DOUBLE_EQ(epochs[e]["samples_per_second"].get<double>(), rate[e]);
    EXPECT_DOUBLE_EQ(epochs[e]["window_seconds"].get<double>(), window[e]);
  }
  // Tiers by name, in the variant's tier order; misses are the lookups that did not hit.
  const auto& memory = epochs[1]["cache"]["memory"];
  EXPECT_EQ(memory["hits"], 186);
  EXPECT_EQ(memory["misses"], 14);
  EXPECT_DOUBLE_EQ(memory["hit_ratio"].get<double>(), 0.93);
  EXPECT_EQ(memory["bytes"], 18600);
  EXPECT_EQ(memory["evictions"], 2);
  const auto& disk = epochs[2]["cache"]["disk"];
  EXPECT_EQ(disk["hits"], 7);
  EXPECT_EQ(disk["misses"], 2);
  EXPECT_DOUBLE_EQ(disk["hit_ratio"].get<double>(), 0.78);
  EXPECT_EQ(disk["evictions"], 8);
}

TEST(VariantToJson, CostOnlyWithAGpuHourPriceAndPartialOnlyWhenInterrupted) {
  const nlohmann::json plain = VariantToJson(ColdVariant());
  EXPECT_FALSE(plain.contains("cost"));
  EXPECT_FALSE(plain.contains("partial"));
  EXPECT_FALSE(plain.contains("gpu"));  // the emulated device has no GPU measurements

  VariantResult v = ColdVariant();
  v.gpu_hour_cost = 2.5;
  v.gpus = 8;
  v.partial = true;
  const nlohmann::json j = VariantToJson(v);
  ASSERT_TRUE(j.contains("cost"));
  EXPECT_DOUBLE_EQ(j["cost"]["gpu_hour"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j["cost"]["idle_per_1000_gpu_hours"].get<double>(), 937.5);  // .375 × 1000 h
  EXPECT_DOUBLE_EQ(j["cost"]["idle_per_day"].get<double>(), 180.0);  // .375 × 8 GPUs × 24 h
  EXPECT_EQ(j["cost"]["gpus"], 8);
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["partial"], true);
}

TEST(ResultDocument, NamesTheRunAndKeepsTheVariantsInOrder) {
  const nlohmann::json doc =
      ResultDocument("cold-vs-cached", "simulate", {ColdVariant(), CachedVariant()});
  EXPECT_EQ(doc["scenario"], "cold-vs-cached");
  EXPECT_EQ(doc["mode"], "simulate");
  EXPECT_EQ(doc["device"], "emulated");  // the first variant's
  ASSERT_EQ(doc["variants"].size(), 2u);
  EXPECT_EQ(doc["variants"][0]["name"], "cold");
  EXPECT_EQ(doc["variants"][1]["name"], "cached");
  EXPECT_DOUBLE_EQ(doc["variants"][1]["gpu_idle_fraction"].get<double>(), 0.125);
  EXPECT_FALSE(doc.contains("partial"));
  EXPECT_FALSE(doc["variants"][0].contains("cost"));
}

TEST(ResultDocument, AnInterruptedVariantMarksTheDocumentPartial) {
  VariantResult cached = CachedVariant();
  cached.partial = true;
  const nlohmann::json doc = ResultDocument("s", "run", {ColdVariant(), cached});
  EXPECT_EQ(doc["partial"], true);
  EXPECT_FALSE(doc["variants"][0].contains("partial"));
  EXPECT_EQ(doc["variants"][1]["partial"], true);
}

TEST(ResultDocument, EachVariantSavesAgainstTheFirstAtItsClusterSize) {
  VariantResult cold = ColdVariant(), cached = CachedVariant();
  cold.gpu_hour_cost = cached.gpu_hour_cost = 2.5;
  cold.gpus = cached.gpus = 8;
  const nlohmann::json doc = ResultDocument("s", "run", {cold, cached});
  // Idle per day: cold .375 × 8 × 24 × 2.5 = 180, cached .125 × 8 × 24 × 2.5 = 60.
  EXPECT_DOUBLE_EQ(doc["variants"][1]["cost"]["idle_per_day"].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(doc["variants"][0]["cost"]["saves_per_day_vs_first"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(doc["variants"][1]["cost"]["saves_per_day_vs_first"].get<double>(), 120.0);
}

TEST(FormatTable, OneColumnPerVariantWithItsOwnNumbers) {
  const std::string t = FormatTable({ColdVariant(), CachedVariant()});
  EXPECT_EQ(Cells(t, ""), (Strings{"cold", "cached"}));
  EXPECT_EQ(Cells(t, "GPU idle"), (Strings{"37.5%", "12.5%"}));
  EXPECT_EQ(Cells(t, "AU"), (Strings{"56.7%", "86.1%"}));
  EXPECT_EQ(Cells(t, "samples/s"), (Strings{"1234", "2048"}));
  EXPECT_EQ(Cells(t, "read MB/s"), (Strings{"55.5", "0.0"}));
  EXPECT_EQ(Cells(t, "stall fetch (s)"), (Strings{"3.25", "0.51"}));
  EXPECT_EQ(Cells(t, "stall preprocess (s)"), (Strings{"0.75", "0.27"}));
  EXPECT_EQ(Cells(t, "stall transfer (s)"), (Strings{"0.44", "0.09"}));
  EXPECT_EQ(Cells(t, "stall other (s)"), (Strings{"0.06", "0.03"}));
  EXPECT_EQ(Cells(t, "window (s)"), (Strings{"12.50", "6.50"}));
  EXPECT_EQ(Cells(t, "cache hit"), (Strings{"79.0%", "60.0%"}));
  // A tier the variant does not have is "-", not 0%.
  EXPECT_EQ(Cells(t, "  memory hit / evictions"), (Strings{"70.0% / 5", "-"}));
  EXPECT_EQ(Cells(t, "  disk hit / evictions"), (Strings{"30.0% / 17", "0.0% / 9"}));
  // The disk tier's dropped admissions: a row where any variant dropped one.
  EXPECT_EQ(Cells(t, "  disk admissions dropped"), (Strings{"3", "0"}));
  EXPECT_TRUE(Cells(t, "  memory admissions dropped").empty());
  EXPECT_EQ(Cells(t, "epoch idle"), (Strings{"81% 22% 8%", "44% 2%"}));
  EXPECT_EQ(Cells(t, "verified / bad"), (Strings{"5566 / 1", "0 / 0"}));
  EXPECT_EQ(Cells(t, "bottleneck"), (Strings{"fetch", "gpu"}));
  EXPECT_TRUE(Cells(t, "GPUs").empty());  // one GPU each
}

TEST(FormatTable, EndsWithEachVariantsVerdictInWords) {
  const std::string t = FormatTable({ColdVariant(), CachedVariant()});
  const std::string verdicts =
      "\ncold: fetch-bound: storage delivers 41% of what the GPU consumes\n"
      "cached: compute-bound: the GPU is busy 88% of the window\n";
  ASSERT_GE(t.size(), verdicts.size());
  EXPECT_EQ(t.substr(t.size() - verdicts.size()), verdicts);
}

TEST(FormatTable, CostRowsOnlyWithAGpuHourPrice) {
  const std::string plain = FormatTable({ColdVariant(), CachedVariant()});
  EXPECT_EQ(plain.find("idle $"), std::string::npos);
  EXPECT_EQ(plain.find("saves $"), std::string::npos);

  VariantResult cold = ColdVariant(), cached = CachedVariant();
  cold.gpu_hour_cost = cached.gpu_hour_cost = 2.5;
  cold.gpus = cached.gpus = 8;
  const std::string t = FormatTable({cold, cached});
  EXPECT_EQ(Cells(t, "idle $ per 1000 GPU-h"), (Strings{"$937.50", "$312.50"}));
  EXPECT_EQ(Cells(t, "idle $ per day"), (Strings{"$180.00", "$60.00"}));
  EXPECT_EQ(Cells(t, "saves $ per day vs first"), (Strings{"$0.00", "$120.00"}));
  EXPECT_EQ(Cells(t, "GPUs"), (Strings{"8", "8"}));
}

TEST(VariantToJson, ARealGpusOwnMeasurements) {
  EXPECT_FALSE(VariantToJson(ColdVariant()).contains("gpu"));
  const nlohmann::json g = VariantToJson(ColdOnAGpu())["gpu"];
  EXPECT_EQ(g["busy_source"], "cupti");
  EXPECT_DOUBLE_EQ(g["busy_fraction"].get<double>(), 0.625);  // 1 - idle 0.375
  EXPECT_DOUBLE_EQ(g["event_busy_fraction"].get<double>(), 0.61);
  EXPECT_EQ(g["h2d"]["bytes"], 3'000'000'000u);
  EXPECT_DOUBLE_EQ(g["h2d"]["bytes_per_second"].get<double>(), 6e9);
  EXPECT_DOUBLE_EQ(g["h2d"]["overlap_fraction"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(g["model"]["hidden_width"].get<double>(), 4096);
  EXPECT_DOUBLE_EQ(g["loss"]["first"].get<double>(), 2.3456);
  EXPECT_DOUBLE_EQ(g["loss"]["last"].get<double>(), 0.125);
  EXPECT_EQ(g["loss"]["steps"], 3);
  EXPECT_EQ(g["notes"], (nlohmann::json{"CUPTI activity API"}));
}

TEST(FormatTable, RealGpuRowsOnlyWhenAVariantRanOnOne) {
  EXPECT_TRUE(Cells(FormatTable({ColdVariant(), CachedVariant()}), "loss first / last").empty());
  const std::string t = FormatTable({ColdOnAGpu(), CachedVariant()});
  EXPECT_EQ(Cells(t, "GPU busy CUPTI / events"), (Strings{"62.5% / 61.0%", "-"}));
  EXPECT_EQ(Cells(t, "H2D GB/s, overlapped"), (Strings{"6.0, 80.0%", "-"}));
  EXPECT_EQ(Cells(t, "loss first / last"), (Strings{"2.346 / 0.125", "-"}));
  EXPECT_EQ(Cells(t, "model width, step"), (Strings{"4096, 30.00 ms", "-"}));
}

TEST(FormatTable, AnInterruptedVariantSaysItsNumbersArePartial) {
  VariantResult cached = CachedVariant();
  cached.partial = true;
  const std::string t = FormatTable({ColdVariant(), cached});
  EXPECT_NE(t.find("\ncached: (interrupted, partial) compute-bound: the GPU is busy 88%"),
            std::string::npos);
  EXPECT_NE(t.find("\ncold: fetch-bound"), std::string::npos);  // the other is not marked
  EXPECT_EQ(t.find("cold: (interrupted"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
