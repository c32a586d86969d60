// HostModel: what CPU work costs on a host, as the simulator charges it (sim/simulator.h): the
// rates of bytes→float normalization, content verification, memcpy, copying into fresh pages,
// landing a read's bytes, and the calibrated CPU work of loader.preprocess.cost.
//
// Thread-safety: a plain value; Measure() uses the calling thread (and, briefly, every core).
#ifndef STALLSCOPE_SIM_HOST_MODEL_H_
#define STALLSCOPE_SIM_HOST_MODEL_H_

#include <cstdint>

namespace stallscope {

// What CPU work costs on this host (measured by Measure(), or set by a test). The defaults
// charge nothing (1e12 B/s).
struct HostModel {
  uint32_t cores = 1;                        // std::thread::hardware_concurrency()
  double normalize_bytes_per_second = 1e12;  // NormalizeBytes: input bytes per second
  double verify_bytes_per_second = 1e12;     // Storage::Verify on synthetic content
  double memcpy_bytes_per_second = 1e12;     // a RAM-tier hit's copy; the emulated device's copy
  double burn_seconds_per_second = 1;        // what 1 s of loader.preprocess.cost takes
  double burn_all_cores_seconds_per_second = 1;  // the same with every core busy
  double fresh_write_bytes_per_second = 1e12;    // copying into never-touched memory (a RAM tier)
  // Landing a storage read's bytes on the receiving thread (the simulated storage generates
  // them there; a real network or disk path copies them): bytes per second.
  double receive_bytes_per_second = 1e12;
  // Measures the rates on buffers of `sample_bytes` (at most 16 MiB); takes about 0.1 s.
  static HostModel Measure(uint64_t sample_bytes);
  // The mean of two measurements (e.g. taken before and after a real run it is compared with).
  static HostModel Mean(const HostModel& a, const HostModel& b);
};

// The pinned host-to-device rate charged for a `gpu.device: cuda` copy: measured on the H200
// (docs/gpu, bench_h2d: 52.3 GB/s through the pipeline).
constexpr double kSimulatedH2DBytesPerSecond = 52.3e9;

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_HOST_MODEL_H_
