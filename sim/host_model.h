// Measuring this host as a node (config/node_options.h): what the pipeline's CPU work costs
// here — bytes→float normalization, content verification, JPEG decode at an image size,
// memcpy, copying into fresh pages, landing a read's bytes, and the calibrated CPU work of
// loader.preprocess.cost — each the median of repeated trials, with its spread. Normalization
// and JPEG decode write their floats row after row into a region far larger than the caches,
// as the workers fill a batch's staging slot (cache-resident output measured 1.2–1.8x faster
// on this 2-core VM, 2026-12-04).
// `stallscope calibrate` saves it as a profile; `simulate --against-run` and the simulator's
// validation measure it next to the real runs they compare with. A simulation never measures
// the host on its own.
//
// Thread-safety: MeasureHost uses the calling thread (and, briefly, every core).
#ifndef STALLSCOPE_SIM_HOST_MODEL_H_
#define STALLSCOPE_SIM_HOST_MODEL_H_

#include <cstdint>
#include <map>
#include <string>

#include "config/node_options.h"

namespace stallscope {

struct HostMeasurement {
  NodeOptions node;                      // medians; source "measured on this host, DATE"
  std::map<std::string, double> spread;  // by rate key: (max − min) / median over the trials
  int trials = 0;
};

// Measures this host's rates on samples of `sample_bytes` (clamped to 4 KiB … 16 MiB) and JPEG
// decode to `image_size` (of gen's images, image_size × 256 / 224 pixels square). `nic` is
// not measured (a real run here reads local or in-process storage: 1 TB/s), `h2d` keeps its
// default and `memory` is left to the caller. About 0.1 s per trial.
HostMeasurement MeasureHost(uint64_t sample_bytes, uint32_t image_size, int trials);

// The mean of two measurements' rates (e.g. taken before and after a real run it is compared
// with).
NodeOptions MeanNode(const NodeOptions& a, const NodeOptions& b);

// UTC now as 2026-12-01T03:10:00Z.
std::string UtcNow();
// This host's name (gethostname), for profiles.
std::string HostName();

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_HOST_MODEL_H_
