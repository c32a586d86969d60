// The run plan: what a run of the loader will do, decided once from the options and the
// dataset, by one function that the Pipeline (pipeline/pipeline.h) and the simulator
// (sim/simulator.h) both call — so a decision (how many steps, whether a worker has anything
// to do, how a batch is cut into chunks, how large a staging row is) is the same code in
// both, never a copy kept in step by hand.
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_PIPELINE_RUN_PLAN_H_
#define STALLSCOPE_PIPELINE_RUN_PLAN_H_

#include <cstdint>
#include <string>

#include "pipeline/options.h"

namespace stallscope {

// What the plan is made from, besides the options: the dataset as one loader sees it.
struct PlanInputs {
  uint64_t samples = 0;           // samples each epoch reads (a rank's shard in a cluster)
  uint64_t max_sample_bytes = 0;  // the largest sample of the whole dataset
  bool can_verify = false;        // the storage knows the content (Storage::can_verify)
};

struct RunPlan {
  uint32_t batch_size = 0;
  uint64_t batches_per_epoch = 0;  // the last batch of an epoch may be smaller
  uint64_t total_batches = 0;      // steps of the run (run.epochs, cut by run.max_steps)
  uint32_t slots = 0;              // staging slots: prefetch + 1
  bool jpeg = false;               // preprocess jpeg-decode
  bool normalize = false;          // the rows handed to the device are floats
  uint32_t image_side = 0;         // jpeg-decode normalized on the device: its rows are HWC
                                   // uint8 pixels of this side (0: not)
  bool staged = false;             // the workers write rows of their own (floats or pixels)
  bool verify = false;             // every sample's content is checked
  bool preprocess_stage = false;   // the workers have something to do
  uint64_t raw_stride = 0;         // bytes per sample in a slot's raw area (block-rounded)
  uint64_t staged_stride = 0;      // bytes per row handed to the device
  uint32_t chunks_per_batch = 0;   // a batch is cut into this many worker chunks
  uint32_t retries = 0;            // retries per failed read (0 unless on_error retry)

  // Staging memory the plan holds: every slot's raw rows and, with staged rows, those too
  // (saturating at UINT64_MAX: a plan for samples no host could stage still has a size).
  uint64_t staging_bytes() const {
    const long double b = static_cast<long double>(slots) * batch_size *
                          (static_cast<long double>(raw_stride) + (staged ? staged_stride : 0));
    return b >= 0x1p64L ? ~0ULL : static_cast<uint64_t>(b);
  }

  bool operator==(const RunPlan&) const = default;
};

// Throws BadInput (naming the key) for options no run can have.
RunPlan MakeRunPlan(const LoaderOptions& loader, const RunOptions& run, const PlanInputs& in);

// Throws BadInput naming `file` and run.warmup_steps when the plan has no step after the
// warm-up (nothing would be measured).
void RequireMeasuredSteps(const RunPlan& plan, uint32_t warmup_steps, const std::string& file);

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_RUN_PLAN_H_
