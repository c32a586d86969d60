// Unit tests of the analysis (pipeline/analysis.h) on hand-made run records.
//
// Every expected number is worked out by hand in the comments from DESIGN.md's
// "Definitions", never by calling the analysis' own helpers. Times are round binary
// fractions (0.125, 0.25, ...) wherever possible, so most sums are exact.
#include "pipeline/analysis.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "pipeline/pipeline.h"

namespace stallscope {
namespace {

constexpr uint32_t kBatch = 100;  // samples per batch in every record below
constexpr double kEps = 1e-9;

// One batch of kBatch samples: read over [fetch_start, fetch_done], preprocessed until
// preprocess_done, copied to the device over [preprocess_done, copy_done], trained over
// [step_start, step_end] with the device busy the whole step.
BatchRecord Batch(double fetch_start, double fetch_done, double preprocess_done, double copy_done,
                  double step_start, double step_end) {
  BatchRecord r;
  r.samples = kBatch;
  r.fetch_start = fetch_start;
  r.fetch_done = fetch_done;
  r.preprocess_done = preprocess_done;
  r.copy_start = preprocess_done;
  r.copy_done = copy_done;
  r.copy_seconds = copy_done - preprocess_done;
  r.step_start = step_start;
  r.step_end = step_end;
  r.step_busy = step_end - step_start;
  return r;
}

// A batch that was on the device well before its step: fetched over [-3, -2.75],
// preprocessed by -2.5 and copied by -2.25 relative to its step's start, earlier than the
// end of the previous step in every record below (no gap there is longer than 2 s), so any
// gap before it is `other`.
BatchRecord OnDevice(double step_start, double step_end) {
  return Batch(step_start - 3, step_start - 2.75, step_start - 2.5, step_start - 2.25, step_start,
               step_end);
}

RunRecord Record(std::vector<BatchRecord> batches, double worker_busy_seconds) {
  RunRecord run;
  run.device = "emulated";
  run.batches = std::move(batches);
  run.batches_per_epoch = run.batches.size();
  run.batch_size = kBatch;
  run.warmup_steps = 1;
  run.worker_busy_seconds = worker_busy_seconds;
  run.start = 0;
  run.end = run.batches.back().step_end;
  return run;
}

AnalysisInputs Inputs(double nominal_step_seconds, uint32_t workers = 1, uint32_t prefetch = 1) {
  AnalysisInputs in;
  in.warmup_steps = 1;
  in.batch_size = kBatch;
  in.workers = workers;
  in.prefetch = prefetch;
  in.nominal_step_seconds = nominal_step_seconds;
  return in;
}

// ---------------------------------------------------------------------------------------
// Window, busy, idle, AU.

TEST(AnalysisWindow, StartsAtStepWarmupStepsAndCountsTheGapsInsideAsIdle) {
  // step 0: 0.0 .. 1.0   (warm-up)
  // step 1: 3.0 .. 4.0   (gap 2.0 before it: before the window, not counted)
  // step 2: 5.0 .. 6.0   (gap 1.0)
  // step 3: 6.5 .. 7.5   (gap 0.5)
  // step 4: 7.5 .. 8.5   (no gap)
  const RunRecord run = Record(
      {OnDevice(0, 1), OnDevice(3, 4), OnDevice(5, 6), OnDevice(6.5, 7.5), OnDevice(7.5, 8.5)},
      0.5);
  const VariantResult v = Analyze("window", run, Inputs(1));
  // window = end of step 4 - start of step 1 = 8.5 - 3.0 = 5.5 s
  EXPECT_DOUBLE_EQ(v.window_seconds, 5.5);
  // busy = steps 1..4, 1 s each = 4 s
  EXPECT_DOUBLE_EQ(v.busy_seconds, 4.0);
  // idle = (5.5 - 4) / 5.5 = 1.5 / 5.5 = 3/11 = 0.272727...
  EXPECT_NEAR(v.gpu_idle_fraction, 3.0 / 11.0, kEps);
  // AU = sum of step compute times / window = 4 / 5.5 = 8/11 = 0.727272...
  EXPECT_NEAR(v.au, 8.0 / 11.0, kEps);
  // samples in the window = 4 steps x 100 = 400; 400 / 5.5 = 72.7272... samples/s
  EXPECT_NEAR(v.samples_per_second, 400.0 / 5.5, kEps);
  // The gaps were all while the batch was on the device: 1.0 + 0.5 = 1.5 s of `other`.
  EXPECT_DOUBLE_EQ(v.stall.fetch, 0);
  EXPECT_DOUBLE_EQ(v.stall.preprocess, 0);
  EXPECT_DOUBLE_EQ(v.stall.transfer, 0);
  EXPECT_DOUBLE_EQ(v.stall.other, 1.5);
  // Waits before steps 2, 3, 4 = {1.0, 0.5, 0}; nearest rank: p50 = 2nd of 3 = 0.5,
  // p99 = ceil(2.97) = 3rd of 3 = 1.0.
  EXPECT_DOUBLE_EQ(v.step_wait_p50, 0.5);
  EXPECT_DOUBLE_EQ(v.step_wait_p99, 1.0);

  // Two warm-up steps: the window starts at step 2.
  AnalysisInputs in = Inputs(1);
  in.warmup_steps = 2;
  const VariantResult w = Analyze("window", run, in);
  // window = 8.5 - 5.0 = 3.5 s; busy = steps 2..4 = 3 s; idle = 0.5 / 3.5 = 1/7;
  // AU = 3 / 3.5 = 6/7.
  EXPECT_DOUBLE_EQ(w.window_seconds, 3.5);
  EXPECT_DOUBLE_EQ(w.busy_seconds, 3.0);
  EXPECT_NEAR(w.gpu_idle_fraction, 1.0 / 7.0, kEps);
  EXPECT_NEAR(w.au, 6.0 / 7.0, kEps);
  EXPECT_DOUBLE_EQ(w.stall.other, 0.5);
}

// ---------------------------------------------------------------------------------------
// SplitStall.

TEST(SplitStall, ChargesEachPartOfTheGapToTheStageTheBatchWasIn) {
  // Previous step ended at 10.0, this one starts at 12.0: a 2 s gap.
  //   10.0 .. 10.5   still fetching      -> fetch      0.5
  //   10.5 .. 11.25  preprocessing       -> preprocess 0.75
  //   11.25 .. 11.5  copying to device   -> transfer   0.25
  //   11.5 .. 12.0   on device, waiting  -> other      0.5
  const BatchRecord r = Batch(9.0, 10.5, 11.25, 11.5, 12.0, 13.0);
  const StageSeconds s = SplitStall(10.0, r);
  EXPECT_DOUBLE_EQ(s.fetch, 0.5);
  EXPECT_DOUBLE_EQ(s.preprocess, 0.75);
  EXPECT_DOUBLE_EQ(s.transfer, 0.25);
  EXPECT_DOUBLE_EQ(s.other, 0.5);

  // The same batch, the previous step ending at 10.75 (mid-preprocess): no fetch,
  // preprocess 10.75 .. 11.25 = 0.5, transfer 0.25, other 0.5.
  const StageSeconds late = SplitStall(10.75, r);
  EXPECT_DOUBLE_EQ(late.fetch, 0);
  EXPECT_DOUBLE_EQ(late.preprocess, 0.5);
  EXPECT_DOUBLE_EQ(late.transfer, 0.25);
  EXPECT_DOUBLE_EQ(late.other, 0.5);

  // No gap at all (the step started the moment the previous one ended): nothing charged.
  const StageSeconds none = SplitStall(12.0, r);
  EXPECT_DOUBLE_EQ(none.fetch, 0);
  EXPECT_DOUBLE_EQ(none.preprocess, 0);
  EXPECT_DOUBLE_EQ(none.transfer, 0);
  EXPECT_DOUBLE_EQ(none.other, 0);
}

TEST(SplitStall, BatchAlreadyOnTheDeviceIsAllOther) {
  // Fetched by 5, preprocessed by 6, copied by 7; the gap 10 .. 12 is all launch delay.
  const BatchRecord r = Batch(4.0, 5.0, 6.0, 7.0, 12.0, 13.0);
  const StageSeconds s = SplitStall(10.0, r);
  EXPECT_DOUBLE_EQ(s.fetch, 0);
  EXPECT_DOUBLE_EQ(s.preprocess, 0);
  EXPECT_DOUBLE_EQ(s.transfer, 0);
  EXPECT_DOUBLE_EQ(s.other, 2.0);
}

// ---------------------------------------------------------------------------------------
// Stall seconds by stage over a multi-step window.

TEST(AnalysisStall, SumsEachStageOverTheWindowOnly) {
  //      fetch        pre    copy   step
  // b0:  0.0 .. 0.5   0.75   1.0    1.0 .. 2.0   warm-up
  // b1:  0.5 .. 1.5   2.25   2.5    2.5 .. 3.5   first window step: the gap 2.0 .. 2.5
  //                                              (pre 0.25 + transfer 0.25) is outside
  // b2:  2.5 .. 4.0   4.25   4.375  4.5 .. 5.5   gap 3.5 .. 4.5: fetch 0.5, pre 0.25,
  //                                              transfer 0.125, other 0.125
  // b3:  4.0 .. 5.0   6.0    6.25   6.25 .. 7.25 gap 5.5 .. 6.25: fetch 0, pre 0.5,
  //                                              transfer 0.25; busy only 0.75 of the step
  // b4:  5.0 .. 8.25  8.25   8.5    8.5 .. 9.5   gap 7.25 .. 8.5: fetch 1.0, pre 0,
  //                                              transfer 0.25
  std::vector<BatchRecord> b = {
      Batch(0.0, 0.5, 0.75, 1.0, 1.0, 2.0),   Batch(0.5, 1.5, 2.25, 2.5, 2.5, 3.5),
      Batch(2.5, 4.0, 4.25, 4.375, 4.5, 5.5), Batch(4.0, 5.0, 6.0, 6.25, 6.25, 7.25),
      Batch(5.0, 8.25, 8.25, 8.5, 8.5, 9.5),
  };
  b[3].step_busy = 0.75;  // 0.25 s of the step spent launching, not computing
  const VariantResult v = Analyze("stall", Record(b, 1.0), Inputs(1));
  // fetch      = 0.5 + 0 + 1.0       = 1.5
  // preprocess = 0.25 + 0.5 + 0      = 0.75
  // transfer   = 0.125 + 0.25 + 0.25 = 0.625
  // other      = 0.125 (b2's launch delay) + 0.25 (b3's non-busy step time) = 0.375
  EXPECT_DOUBLE_EQ(v.stall.fetch, 1.5);
  EXPECT_DOUBLE_EQ(v.stall.preprocess, 0.75);
  EXPECT_DOUBLE_EQ(v.stall.transfer, 0.625);
  EXPECT_DOUBLE_EQ(v.stall.other, 0.375);
  // window = 9.5 - 2.5 = 7.0; busy = 1 + 1 + 0.75 + 1 = 3.75; idle = 3.25 / 7 = 0.4642857...
  EXPECT_DOUBLE_EQ(v.window_seconds, 7.0);
  EXPECT_DOUBLE_EQ(v.busy_seconds, 3.75);
  EXPECT_NEAR(v.gpu_idle_fraction, 3.25 / 7.0, kEps);
  // AU = 3.75 / 7 = 0.5357142...
  EXPECT_NEAR(v.au, 3.75 / 7.0, kEps);
}

// ---------------------------------------------------------------------------------------
// Capacities.

TEST(AnalysisCapacity, EachStageRateWhileBusyWithFetchOverTheUnionOfItsIntervals) {
  //      fetch        pre    copy (0.5 s each)  step (0.8 s)
  // b0:  0.0 .. 2.0   2.5    3.0               3.0 .. 3.8
  // b1:  1.0 .. 3.0   3.5    4.0               4.0 .. 4.8   fetch overlaps b0's by 1 s
  // b2:  4.0 .. 5.0   5.5    6.0               6.0 .. 6.8
  // b3:  4.5 .. 6.0   6.5    7.0               7.0 .. 7.8   fetch overlaps b2's by 0.5 s
  const std::vector<BatchRecord> b = {
      Batch(0.0, 2.0, 2.5, 3.0, 3.0, 3.8),
      Batch(1.0, 3.0, 3.5, 4.0, 4.0, 4.8),
      Batch(4.0, 5.0, 5.5, 6.0, 6.0, 6.8),
      Batch(4.5, 6.0, 6.5, 7.0, 7.0, 7.8),
  };
  // Workers were busy 10 s in all, over 4 workers.
  const VariantResult v = Analyze("capacity", Record(b, 10.0), Inputs(0.8, /*workers=*/4));
  // fetch: union of [0,2] [1,3] [4,5] [4.5,6] = [0,3] + [4,6] = 5 s (the plain sum would be
  // 2 + 2 + 1 + 1.5 = 6.5 s); 400 samples / 5 s = 80 samples/s.
  ASSERT_TRUE(v.capacity_fetch.has_value());
  EXPECT_DOUBLE_EQ(*v.capacity_fetch, 80.0);
  // On average 6.5 / 5 = 1.3 batches were being fetched while any was.
  EXPECT_DOUBLE_EQ(v.fetch_batches_in_flight, 1.3);
  // preprocess: 400 samples / 10 worker-seconds x 4 workers = 160 samples/s.
  ASSERT_TRUE(v.capacity_preprocess.has_value());
  EXPECT_DOUBLE_EQ(*v.capacity_preprocess, 160.0);
  // transfer: 400 samples / (4 x 0.5 s) = 200 samples/s.
  ASSERT_TRUE(v.capacity_transfer.has_value());
  EXPECT_DOUBLE_EQ(*v.capacity_transfer, 200.0);
  // gpu: batch 100 / step 0.8 s = 125 samples/s.
  EXPECT_DOUBLE_EQ(v.capacity_gpu, 125.0);
}

TEST(AnalysisCapacity, StageThatDidNoWorkHasNoCapacity) {
  // Nothing to preprocess and the copy took no time: neither stage has a rate.
  std::vector<BatchRecord> b = {Batch(0, 1, 1, 1, 1, 2), Batch(1, 2, 2, 2, 2, 3)};
  RunRecord run = Record(b, 0);
  run.preprocess_stage = false;
  const VariantResult v = Analyze("none", run, Inputs(1));
  EXPECT_FALSE(v.capacity_preprocess.has_value());
  EXPECT_FALSE(v.capacity_transfer.has_value());
  // fetch: 200 samples / union [0,2] = 100 samples/s.
  ASSERT_TRUE(v.capacity_fetch.has_value());
  EXPECT_DOUBLE_EQ(*v.capacity_fetch, 100.0);
}

// ---------------------------------------------------------------------------------------
// Per epoch.

TEST(AnalysisEpochs, ColdEpochThenWarmEpochEachReportTheirOwnIdleAndHitRatio) {
  // Three batches per epoch, one memory tier. Epoch 0 reads from storage and idles;
  // epoch 1 is mostly served from the cache and idles only once.
  //      step           epoch  hits of 100
  // b0:  0.0 .. 1.0     0        0   warm-up
  // b1:  3.0 .. 4.0     0       10   window starts here
  // b2:  6.0 .. 7.0     0       20   gap 2.0
  // b3:  7.25 .. 8.25   1       60   gap 0.25 (counted in epoch 1: it precedes b3's step)
  // b4:  8.25 .. 9.25   1       80
  // b5:  9.25 .. 10.25  1      100
  const uint32_t hits[] = {0, 10, 20, 60, 80, 100};
  std::vector<BatchRecord> b = {OnDevice(0, 1),       OnDevice(3, 4),       OnDevice(6, 7),
                                OnDevice(7.25, 8.25), OnDevice(8.25, 9.25), OnDevice(9.25, 10.25)};
  for (size_t k = 0; k < b.size(); ++k) {
    b[k].epoch = k < 3 ? 0 : 1;
    b[k].cache_lookups[0] = kBatch;
    b[k].cache_hits[0] = hits[k];
    b[k].cache_bytes[0] = hits[k] * 1000ull;
    b[k].storage_bytes = (kBatch - hits[k]) * 1000ull;
  }
  RunRecord run = Record(b, 1.0);
  run.batches_per_epoch = 3;
  TierStats memory;
  memory.name = "memory";
  memory.policy = "fill-once";
  memory.hits = 270;    // 0 + 10 + 20 + 60 + 80 + 100
  memory.misses = 330;  // 600 - 270
  run.cache = {memory};
  AnalysisInputs in = Inputs(1);
  in.have_cache = true;
  const VariantResult v = Analyze("epochs", run, in);

  ASSERT_EQ(v.epochs.size(), 2u);
  // Epoch 0, from the window's start: b1 spans 3 .. 4 = 1 s, b2 spans 4 .. 7 = 3 s;
  // span 4 s, busy 2 s -> idle 0.5; 200 samples / 4 s = 50 samples/s.
  EXPECT_DOUBLE_EQ(v.epochs[0].window_seconds, 4.0);
  EXPECT_DOUBLE_EQ(v.epochs[0].gpu_idle_fraction, 0.5);
  EXPECT_DOUBLE_EQ(v.epochs[0].samples_per_second, 50.0);
  // Hit ratio over all of epoch 0's lookups, warm-up included: (0 + 10 + 20) / 300 = 0.1.
  EXPECT_DOUBLE_EQ(v.epochs[0].cache_hit_ratio, 0.1);
  // Epoch 1: b3 spans 7 .. 8.25 = 1.25 s, b4 and b5 1 s each; span 3.25 s, busy 3 s ->
  // idle 0.25 / 3.25 = 1/13 = 0.0769...; 300 samples / 3.25 s = 92.307... samples/s.
  EXPECT_DOUBLE_EQ(v.epochs[1].window_seconds, 3.25);
  EXPECT_NEAR(v.epochs[1].gpu_idle_fraction, 1.0 / 13.0, kEps);
  EXPECT_NEAR(v.epochs[1].samples_per_second, 300.0 / 3.25, kEps);
  // (60 + 80 + 100) / 300 = 0.8.
  EXPECT_DOUBLE_EQ(v.epochs[1].cache_hit_ratio, 0.8);
  // Per tier in each epoch: epoch 1 looked 300 samples up in memory, hit 240.
  ASSERT_EQ(v.epochs[1].tiers.size(), 1u);
  EXPECT_EQ(v.epochs[1].tiers[0].lookups, 300u);
  EXPECT_EQ(v.epochs[1].tiers[0].hits, 240u);
  EXPECT_DOUBLE_EQ(v.epochs[1].tiers[0].hit_ratio, 0.8);
  // Over the run: 270 hits of 600 lookups = 0.45; bytes from memory 270 x 1000,
  // from storage 330 x 1000.
  EXPECT_DOUBLE_EQ(v.cache_hit_ratio, 0.45);
  EXPECT_EQ(v.bytes_storage, 330000u);
  ASSERT_EQ(v.bytes_by_tier.size(), 1u);
  EXPECT_EQ(v.bytes_by_tier[0].second, 270000u);
}

// ---------------------------------------------------------------------------------------
// Verdict. Verdict() in analysis.cc: the slowest input stage is named when its capacity is
// under 0.97 x the GPU's demand and the GPU idles at least 2%; otherwise `gpu` when the
// GPU idles under 5%; otherwise the most-stalled stage, "by latency".

TEST(AnalysisVerdict, StorageSlowerThanDemandIsFetchBound) {
  // Fetch 1.5 s per batch, one after another; preprocess 0.125 s; copy 0.125 s; step 1 s.
  //      fetch        pre     copy    step
  // b0:  0.0 .. 1.5   1.625   1.75    1.75 .. 2.75
  // b1:  1.5 .. 3.0   3.125   3.25    3.25 .. 4.25
  // b2:  3.0 .. 4.5   4.625   4.75    4.75 .. 5.75
  // b3:  4.5 .. 6.0   6.125   6.25    6.25 .. 7.25
  // b4:  6.0 .. 7.5   7.625   7.75    7.75 .. 8.75
  const std::vector<BatchRecord> b = {
      Batch(0.0, 1.5, 1.625, 1.75, 1.75, 2.75), Batch(1.5, 3.0, 3.125, 3.25, 3.25, 4.25),
      Batch(3.0, 4.5, 4.625, 4.75, 4.75, 5.75), Batch(4.5, 6.0, 6.125, 6.25, 6.25, 7.25),
      Batch(6.0, 7.5, 7.625, 7.75, 7.75, 8.75),
  };
  // One worker, busy 5 x 0.125 = 0.625 s.
  const VariantResult v = Analyze("fetch-bound", Record(b, 0.625), Inputs(1));
  // Each gap in the window (before b2, b3, b4) is 0.5 s: fetch 0.25, pre 0.125, copy 0.125.
  EXPECT_DOUBLE_EQ(v.stall.fetch, 0.75);
  EXPECT_DOUBLE_EQ(v.stall.preprocess, 0.375);
  EXPECT_DOUBLE_EQ(v.stall.transfer, 0.375);
  // window 3.25 .. 8.75 = 5.5 s, busy 4 s: idle 1.5 / 5.5 = 27%.
  EXPECT_NEAR(v.gpu_idle_fraction, 1.5 / 5.5, kEps);
  // Capacities: fetch 500 / 7.5 = 66.67; preprocess 500 / 0.625 = 800; transfer
  // 500 / 0.625 = 800; gpu 100 / 1 = 100. Storage delivers 66.67 / 100 = 66.7% -> "67%".
  EXPECT_NEAR(*v.capacity_fetch, 500.0 / 7.5, kEps);
  EXPECT_EQ(v.bottleneck_stage, "fetch");
  // Fetches never overlapped: 7.5 / 7.5 = 1.0 batch in flight, of prefetch 1 + 1 = 2.
  EXPECT_EQ(v.bottleneck_text,
            "fetch-bound: storage delivers 67% of what the GPU consumes, with 1.0 of 2 batches "
            "in flight on average (loader.prefetch 1)");
}

TEST(AnalysisVerdict, PreprocessingSlowerThanDemandIsPreprocessBound) {
  // Fetch 0.25 s; preprocessing 1.25 s of wall time per batch on 2 workers (2.5
  // worker-seconds); copy 0.125 s; step 1 s. Batch k's preprocessing starts when batch
  // k-1's ends.
  //      fetch          pre     copy    step
  // b0:  0.0 .. 0.25    1.5     1.625   1.625 .. 2.625
  // b1:  1.25 .. 1.5    2.75    2.875   2.875 .. 3.875
  // b2:  2.5 .. 2.75    4.0     4.125   4.125 .. 5.125
  // b3:  3.75 .. 4.0    5.25    5.375   5.375 .. 6.375
  // b4:  5.0 .. 5.25    6.5     6.625   6.625 .. 7.625
  const std::vector<BatchRecord> b = {
      Batch(0.0, 0.25, 1.5, 1.625, 1.625, 2.625), Batch(1.25, 1.5, 2.75, 2.875, 2.875, 3.875),
      Batch(2.5, 2.75, 4.0, 4.125, 4.125, 5.125), Batch(3.75, 4.0, 5.25, 5.375, 5.375, 6.375),
      Batch(5.0, 5.25, 6.5, 6.625, 6.625, 7.625),
  };
  // Workers busy 5 x 2.5 = 12.5 worker-seconds.
  const VariantResult v = Analyze("preprocess-bound", Record(b, 12.5), Inputs(1, /*workers=*/2));
  // Each window gap (before b2, b3, b4) is 0.25 s: pre 0.125, transfer 0.125, no fetch.
  EXPECT_DOUBLE_EQ(v.stall.fetch, 0);
  EXPECT_DOUBLE_EQ(v.stall.preprocess, 0.375);
  EXPECT_DOUBLE_EQ(v.stall.transfer, 0.375);
  // window 2.875 .. 7.625 = 4.75 s, busy 4: idle 0.75 / 4.75 = 15.8%.
  EXPECT_NEAR(v.gpu_idle_fraction, 0.75 / 4.75, kEps);
  // Capacities: fetch 500 / 1.25 = 400; preprocess 500 / 12.5 x 2 = 80; transfer
  // 500 / 0.625 = 800; gpu 100. Preprocessing delivers 80 / 100 = 80%.
  EXPECT_DOUBLE_EQ(*v.capacity_preprocess, 80.0);
  EXPECT_EQ(v.bottleneck_stage, "preprocess");
  EXPECT_EQ(v.bottleneck_text,
            "preprocess-bound: preprocessing delivers 80% of what the GPU consumes");
}

TEST(AnalysisVerdict, NoGapsIsComputeBound) {
  // Every batch is on the device long before its step; steps run back to back.
  //      fetch           pre     copy    step
  // bk:  0.25k .. +0.25  +0.125  +0.125  k + 0.5 .. k + 1.5
  std::vector<BatchRecord> b;
  for (int k = 0; k < 5; ++k) {
    b.push_back(
        Batch(0.25 * k, 0.25 * k + 0.25, 0.25 * k + 0.375, 0.25 * k + 0.5, k + 0.5, k + 1.5));
  }
  const VariantResult v = Analyze("compute-bound", Record(b, 0.625), Inputs(1, 1, 4));
  EXPECT_DOUBLE_EQ(v.gpu_idle_fraction, 0);
  EXPECT_DOUBLE_EQ(v.au, 1);
  // Fetch intervals touch end to end: union [0, 1.25] -> 500 / 1.25 = 400 samples/s, the
  // slowest input (preprocess and transfer: 500 / 0.625 = 800), 400% of the GPU's 100.
  EXPECT_EQ(v.bottleneck_stage, "gpu");
  EXPECT_EQ(v.bottleneck_text,
            "compute-bound: the GPU is busy 100% of the window; the slowest input stage "
            "(fetch) could deliver 400% of what it consumes");
}

// Sequential fetches of `fetch_seconds` each, nothing to preprocess, an instant copy, and a
// 1 s step that starts the moment its batch is fetched (fetch_seconds >= 1, so the previous
// step has always ended by then): batch k is fetched over [k f, (k+1) f] and trained over
// [(k+1) f, (k+1) f + 1].
RunRecord FetchPaced(int batches, double fetch_seconds) {
  std::vector<BatchRecord> b;
  for (int k = 0; k < batches; ++k) {
    const double done = (k + 1) * fetch_seconds;
    b.push_back(Batch(k * fetch_seconds, done, done, done, done, done + 1));
  }
  RunRecord run = Record(b, 0);
  run.preprocess_stage = false;
  return run;
}

TEST(AnalysisVerdict, StorageJustUnder97PercentOfDemandIsFetchBoundJustOverIsGpu) {
  // 10 batches, step 1 s, demand 100 samples/s. Window = step 1 start .. step 9 end =
  // 2f .. 10f + 1 = 8f + 1; busy 9 s; idle = 8 (f - 1).
  //
  // f = 1.03125: storage 1000 / 10.3125 = 96.97 samples/s < 0.97 x 100 = 97, and idle
  // 8 x 0.03125 / 9.25 = 0.25 / 9.25 = 2.7% >= 2%: fetch-bound, 96.97% rounds to "97%".
  const VariantResult under = Analyze("under", FetchPaced(10, 1.03125), Inputs(1));
  EXPECT_NEAR(under.gpu_idle_fraction, 0.25 / 9.25, kEps);
  EXPECT_NEAR(*under.capacity_fetch, 1000.0 / 10.3125, kEps);
  EXPECT_DOUBLE_EQ(under.stall.fetch, 0.25);
  EXPECT_EQ(under.bottleneck_stage, "fetch");
  EXPECT_TRUE(under.bottleneck_text.starts_with(
      "fetch-bound: storage delivers 97% of what the GPU consumes"))
      << under.bottleneck_text;

  // f = 1.03: storage 1000 / 10.3 = 97.09 samples/s, no longer under 97; idle
  // 8 x 0.03 / 9.24 = 0.24 / 9.24 = 2.6% < 5%: compute-bound, busy 97.4% -> "97%".
  const VariantResult over = Analyze("over", FetchPaced(10, 1.03), Inputs(1));
  EXPECT_NEAR(over.gpu_idle_fraction, 0.24 / 9.24, kEps);
  EXPECT_NEAR(*over.capacity_fetch, 1000.0 / 10.3, kEps);
  EXPECT_EQ(over.bottleneck_stage, "gpu");
  EXPECT_EQ(over.bottleneck_text,
            "compute-bound: the GPU is busy 97% of the window; the slowest input stage "
            "(fetch) could deliver 97% of what it consumes");
}

// A RAM cache fills in epoch 0 (fetch stalls) and serves epoch 1 from memory, where the
// preprocessing stalls each step by 0.25 s (or, with `later_gap` 0, never).
//      fetch        pre     copy    step          epoch  hits
// b0:  0.0 .. 0.5   0.5     0.5     0.5 .. 1.5    0      0     (warm-up)
// b1:  0.5 .. 2.5   2.5     2.5     2.5 .. 3.5    0      0
// b2:  2.5 .. 4.5   4.5     4.5     4.5 .. 5.5    0      0     gap 3.5 .. 4.5: fetch 1.0
// b3:  4.5 .. 4.5   5.5+g   5.5+g   ... 1 s each  1      100   gap g: preprocess
// b4, b5 likewise, each g after the previous step's end.
VariantResult CacheFilledThenPreprocessStalls(double later_gap) {
  std::vector<BatchRecord> b = {Batch(0, 0.5, 0.5, 0.5, 0.5, 1.5),
                                Batch(0.5, 2.5, 2.5, 2.5, 2.5, 3.5),
                                Batch(2.5, 4.5, 4.5, 4.5, 4.5, 5.5)};
  double end = 5.5;
  for (int k = 0; k < 3; ++k) {
    const double start = end + later_gap;
    b.push_back(Batch(4.5, 4.5, start, start, start, start + 1));
    end = start + 1;
  }
  for (size_t k = 0; k < b.size(); ++k) {
    b[k].epoch = k < 3 ? 0 : 1;
    b[k].cache_lookups[0] = kBatch;
    b[k].cache_hits[0] = k < 3 ? 0 : kBatch;
  }
  // Preprocessing busy 4 s for 600 samples on one worker: 150 samples/s, above the demand
  // of 100 samples/s, so no stage's capacity is short over the whole run.
  RunRecord run = Record(b, 4.0);
  run.batches_per_epoch = 3;
  TierStats memory;
  memory.name = "memory";
  memory.hits = 300;
  memory.misses = 300;
  run.cache = {memory};
  AnalysisInputs in = Inputs(1);
  in.have_cache = true;
  return Analyze("cache-filled", run, in);
}

TEST(AnalysisVerdict, AfterACacheFillsTheLaterEpochsStallsNameTheBottleneck) {
  const VariantResult v = CacheFilledThenPreprocessStalls(0.25);
  // Epoch 0 (b1, b2): span 1 + 2 = 3 s, busy 2 s, idle 1/3, the 1 s gap all fetch.
  ASSERT_EQ(v.epochs.size(), 2u);
  EXPECT_NEAR(v.epochs[0].gpu_idle_fraction, 1.0 / 3.0, kEps);
  EXPECT_DOUBLE_EQ(v.epochs[0].stall.fetch, 1.0);
  EXPECT_DOUBLE_EQ(v.epochs[0].stall.preprocess, 0.0);
  // Epoch 1: three 1.25 s spans, busy 3 s: idle 0.75 / 3.75 = 20%, all preprocessing.
  EXPECT_DOUBLE_EQ(v.epochs[1].stall.preprocess, 0.75);
  EXPECT_DOUBLE_EQ(v.epochs[1].stall.fetch, 0.0);
  EXPECT_DOUBLE_EQ(v.epochs[1].stall.other, 0.0);
  // Over the run fetch stalled most (1.0 s against 0.75 s), but that was the cache filling:
  // the steady state waits for preprocessing.
  EXPECT_DOUBLE_EQ(v.stall.fetch, 1.0);
  EXPECT_DOUBLE_EQ(v.stall.preprocess, 0.75);
  EXPECT_EQ(v.bottleneck_stage, "preprocess");
  EXPECT_EQ(v.bottleneck_text,
            "preprocess-bound after epoch 0: later epochs idle 20.0%, 750.00 ms of it waiting for "
            "preprocessing; epoch 0 idled 33% while the cache filled (fetch-stalled)");

  const VariantResult busy = CacheFilledThenPreprocessStalls(0);
  EXPECT_EQ(busy.bottleneck_stage, "gpu");
  EXPECT_EQ(busy.bottleneck_text,
            "compute-bound after epoch 0: later epochs idle 0.0%; epoch 0 idled 33% while the "
            "cache filled (fetch-stalled)");
}

// A rank whose batches are on its device 0.5 s before the barrier lets it step: its idle is
// the wait for slower ranks, sync, and its verdict says so (not "fetch by latency").
TEST(AnalysisVerdict, ARankWaitingAtTheBarrierIsSyncBound) {
  // step k: batch on the device at 1.5k - 0.5, barrier passed and step run at 1.5k .. 1.5k+1.
  std::vector<BatchRecord> b;
  for (int k = 0; k < 5; ++k) {
    const double start = 1.5 * k;
    b.push_back(Batch(start - 1, start - 0.75, start - 0.625, start - 0.5, start, start + 1));
    b.back().sync_done = start;
  }
  const VariantResult v = Analyze("rank", Record(b, 0.5), Inputs(1));
  // Window 1.5 .. 7: 5.5 s, busy 4 s; each of the 3 gaps in it is 0.5 s, all sync.
  EXPECT_DOUBLE_EQ(v.stall.sync, 1.5);
  EXPECT_DOUBLE_EQ(v.stall.fetch + v.stall.preprocess + v.stall.transfer + v.stall.other, 0.0);
  EXPECT_EQ(v.bottleneck_stage, "sync");
  EXPECT_TRUE(v.bottleneck_text.starts_with(
      "sync-bound: this rank waited 1.50 s at the step barrier for slower ranks"))
      << v.bottleneck_text;
}

// ---------------------------------------------------------------------------------------
// Quantile and input errors.

TEST(Quantile, NearestRankOnTheSortedValues) {
  // Sorted: 1 2 3 4 5. Rank = ceil(q x 5), at least 1.
  const std::vector<double> five = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(Quantile(five, 0.5), 3);   // ceil(2.5) = 3rd
  EXPECT_DOUBLE_EQ(Quantile(five, 0.75), 4);  // ceil(3.75) = 4th
  EXPECT_DOUBLE_EQ(Quantile(five, 0.99), 5);  // ceil(4.95) = 5th
  EXPECT_DOUBLE_EQ(Quantile(five, 0), 1);     // rank 0 -> the 1st
  EXPECT_DOUBLE_EQ(Quantile(five, 1), 5);
  // Nearest rank never interpolates: the median of 10 20 30 40 is the 2nd value, not 25.
  EXPECT_DOUBLE_EQ(Quantile({40, 10, 30, 20}, 0.5), 20);
  EXPECT_DOUBLE_EQ(Quantile({}, 0.5), 0);
}

TEST(AnalysisInputErrors, ThrowsWhenNoStepIsAfterTheWarmUp) {
  // One step, one warm-up step: nothing to measure.
  EXPECT_THROW(Analyze("x", Record({OnDevice(0, 1)}, 0), Inputs(1)), std::invalid_argument);
  // Three steps, three warm-up steps.
  const RunRecord three = Record({OnDevice(0, 1), OnDevice(1, 2), OnDevice(2, 3)}, 0);
  AnalysisInputs in = Inputs(1);
  in.warmup_steps = 3;
  EXPECT_THROW(Analyze("x", three, in), std::invalid_argument);
  // One step after the warm-up is enough: a 1 s window, all busy.
  in.warmup_steps = 2;
  const VariantResult v = Analyze("x", three, in);
  EXPECT_DOUBLE_EQ(v.window_seconds, 1.0);
  EXPECT_DOUBLE_EQ(v.gpu_idle_fraction, 0);
}

}  // namespace
}  // namespace stallscope
