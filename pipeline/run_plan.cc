#include "pipeline/run_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/align.h"
#include "base/errors.h"
#include "pipeline/preprocess.h"

namespace stallscope {

RunPlan MakeRunPlan(const LoaderOptions& loader, const RunOptions& run, const PlanInputs& in) {
  const PreprocessOptions& pre = loader.preprocess;
  if (pre.kind == PreprocessKind::kJpegDecode && (pre.image_size < 8 || pre.image_size > 4096)) {
    throw BadInput("loader.preprocess.size: expected 8 to 4096 pixels");
  }
  RunPlan p;
  p.batch_size = std::max<uint32_t>(loader.batch_size, 1);
  p.batches_per_epoch = (in.samples + p.batch_size - 1) / p.batch_size;
  // Saturating: a count no run could reach is refused by the start-up budget, not wrapped.
  const uint32_t epochs = std::max<uint32_t>(run.epochs, 1);
  p.total_batches = p.batches_per_epoch > ~0ULL / epochs ? ~0ULL : p.batches_per_epoch * epochs;
  if (run.max_steps > 0) p.total_batches = std::min(p.total_batches, run.max_steps);
  p.slots = loader.prefetch + 1;
  p.jpeg = pre.kind == PreprocessKind::kJpegDecode;
  const bool on_host = pre.normalize_on == NormalizeOn::kHost;
  // Both stage float rows, normalized on the host; on the device, jpeg-decode stages the crop's
  // pixels and normalize hands the raw bytes over.
  p.normalize = (pre.kind == PreprocessKind::kNormalize || p.jpeg) && on_host;
  p.image_side = p.jpeg && !on_host ? pre.image_size : 0;
  p.staged = p.normalize || p.jpeg;
  p.verify = run.verify && in.can_verify;
  p.preprocess_stage = p.staged || pre.cost > 0 || p.verify;
  // Block-aligned, block-rounded rows: storage and disk-tier reads may be O_DIRECT.
  p.raw_stride = RoundUp(std::max<uint64_t>(in.max_sample_bytes, 1), kBlockBytes);
  // Staged rows on 64-byte (cache-line) boundaries.
  const uint64_t image_values = JpegSampleFloats(static_cast<int>(pre.image_size));
  p.staged_stride =
      p.jpeg ? RoundUp(image_values * (on_host ? sizeof(float) : sizeof(uint8_t)), 64)
      // (A sample is at most 8 EiB (the parser's bound): its float row is kept from wrapping.)
      : p.normalize
          ? RoundUp(std::min<uint64_t>(in.max_sample_bytes, 1ULL << 60) * sizeof(float), 64)
          : p.raw_stride;
  // Chunks: enough that every worker has work even on a single batch (prefetch 0).
  p.chunks_per_batch = std::min<uint32_t>(p.batch_size, std::max<uint32_t>(loader.workers, 1) * 2);
  p.retries = loader.retries_allowed();
  return p;
}

void RequireMeasuredSteps(const RunPlan& plan, uint32_t warmup_steps, const std::string& file) {
  if (plan.total_batches > warmup_steps) return;
  throw BadInput(fmt::format(
      "{}: run.warmup_steps: the run has {} step(s) and the first {} are warm-up, so nothing "
      "would be measured; lower run.warmup_steps or raise run.epochs / dataset.samples",
      file, plan.total_batches, warmup_steps));
}

}  // namespace stallscope
