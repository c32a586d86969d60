// Scenario files: the YAML a user writes, turned into a checked, typed Scenario.
//
// Every key of DESIGN.md is accepted; defaults are documented in place below and in
// scenarios/README.md. A ScenarioFile holds the parsed YAML and its variants; Resolve()
// applies one variant's overrides and the command line's --set overrides (dotted keys, list
// items by index) to the base document and converts it. Any error — unknown key, wrong type,
// bad unit, negative or zero size — throws ScenarioError whose message names the file, line,
// column and key path (or the --set argument that brought the bad value).
//
// Thread-safety: a ScenarioFile is immutable after Load(); Resolve() is const and may run
// concurrently (it parses its own copy of the text).
#ifndef STALLSCOPE_PIPELINE_SCENARIO_H_
#define STALLSCOPE_PIPELINE_SCENARIO_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cache/cache.h"

namespace stallscope {

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Scenario {
  std::string name = "unnamed";
  std::string description;
  std::string variant = "base";  // which variant this is
  std::string file;              // where it came from (for messages)
  uint64_t seed = 42;

  struct Dataset {
    uint64_t samples = 10000;           // simulated/memory storage: how many samples
    uint64_t sample_size = 112 * 1024;  // bytes (mean)
    uint64_t sample_size_stdev = 0;     // bytes; {mean:, stdev:} form
    std::string path;                   // storage.kind directory: the dataset root
    uint32_t classes = 100;             // labels for the training step
  } dataset;

  struct Storage {
    std::string kind = "simulated";           // simulated | directory | memory
    double bandwidth = 0;                     // bytes/s shared by all reads; 0 = unlimited
    double latency_p50 = 0, latency_p99 = 0;  // seconds
    uint32_t max_inflight = 64;
    double iops = 0;         // 0 = unlimited
    bool direct_io = false;  // directory: O_DIRECT
    bool cold = false;       // directory: evict page cache before each epoch
    struct Faults {          // injected by the simulated storage (SimulatedStorageOptions::Faults)
      double error_rate = 0, timeout_rate = 0, timeout = 1.0, stall_every = 0, stall_for = 0;
      double truncate_rate = 0, spike_rate = 0, spike = 0;
    } faults;
  } storage;

  std::vector<TierOptions> cache_tiers;  // searched in order; empty = no cache

  struct Loader {
    uint32_t batch_size = 256;
    uint32_t prefetch = 4;   // batches prepared ahead of the device
    uint32_t io_depth = 64;  // reads in flight (directory)
    uint32_t io_threads = 1;
    uint32_t workers = 2;                  // preprocessing threads
    std::string preprocess = "normalize";  // none | normalize | jpeg-decode
    double preprocess_cost = 0;            // seconds of extra real CPU work per sample
    uint32_t image_size = 224;             // jpeg-decode: output side in pixels (size)
    double retry_backoff = 0.010;          // before the first retry; doubles, at most 1 s
    double read_timeout = 60;              // directory: deadline per file read; 0 = none
    std::string on_error = "retry";        // retry | skip | fail
    uint32_t retries = 3;
  } loader;

  struct Gpu {
    std::string device = "auto";  // auto | cuda | emulated
    double step_time = 0.050;     // seconds
    struct Model {
      std::string kind = "mlp";
      uint32_t input = 1024, hidden = 0, layers = 4, classes = 100;
    } model;
    std::string gemm = "cublas";  // cublas | own
  } gpu;

  struct Run {
    uint32_t epochs = 3;
    uint32_t warmup_steps = 1;  // steps excluded from the measured window
    uint64_t max_steps = 0;     // 0 = whole epochs
    bool verify = true;         // check every delivered sample's content
  } run;

  struct Cluster {
    uint32_t nodes = 1, gpus_per_node = 1;
    double network_bandwidth = 0;  // bytes/s into each node (the distributed tier's transfers)
    uint32_t cpus_per_node = 0;    // preprocessing cores per node; 0 = as many as this host has
  } cluster;

  std::optional<double> gpu_hour_cost;  // cost.gpu_hour, USD
};

// One override: a dotted key path and a YAML value.
struct Override {
  std::string key;
  YAML::Node value;
  std::string origin;  // "--set KEY=VALUE" or "FILE:LINE:COL (variant NAME)"
};

class ScenarioFile {
 public:
  // Reads and parses `path`; throws ScenarioError on I/O or YAML syntax errors.
  static ScenarioFile Load(const std::string& path);
  // Parses YAML text (tests, fuzzing); `name` stands in for the file name in messages.
  static ScenarioFile Parse(const std::string& text, const std::string& name);

  const std::string& path() const { return path_; }
  // Variant names in file order; {"base"} when the file declares none.
  std::vector<std::string> variant_names() const;

  // The scenario for `variant` with `sets` applied on top. Throws ScenarioError.
  Scenario Resolve(const std::string& variant, const std::vector<Override>& sets = {}) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<std::string> variant_names_;
};

// Parses "KEY=VALUE" from the command line (VALUE read as YAML). Throws ScenarioError.
Override ParseSetArgument(const std::string& argument);

}  // namespace stallscope

#endif  // STALLSCOPE_PIPELINE_SCENARIO_H_
