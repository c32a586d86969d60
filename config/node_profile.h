// Node and storage profiles: the `cluster.node` section of a scenario, and the host profile files
// that `stallscope calibrate` writes and `cluster.node.profile` (or `--node-profile`) reads.
//
// A profile is YAML:
//   profile: {date: 2026-12-01T03:10:00Z, host: NAME, trials: 7, sample_size: 112KiB, ...}
//   node:    {cores: 2, normalize: 1817.2MB/s, ..., memory: 20GiB}   # every key required
//   spread:  {normalize: 0.031, ...}   # (max − min) / median over the trials; informative
// A scenario's own `cluster.node` keys override the profile's.
//
// Thread-safety: plain functions.
#ifndef STALLSCOPE_CONFIG_NODE_PROFILE_H_
#define STALLSCOPE_CONFIG_NODE_PROFILE_H_

#include <map>
#include <string>

#include "config/node_options.h"
#include "config/yaml_section.h"
#include "storage/storage_options.h"

namespace stallscope {

// Reads `cluster.node` into `node`: a profile first (when named), then the section's own keys.
// A relative profile path is relative to the scenario file's folder, or to the working
// directory when it came from the command line. Fails (ScenarioError) naming the file and key
// for a missing file, a profile without one of the keys, a zero or negative rate, zero cores.
void ReadNodeSection(config::Section s, NodeOptions& node);

// What `calibrate` writes beside the rates.
struct ProfileInfo {
  std::string date;  // ISO 8601, UTC
  std::string host;
  int trials = 0;
  uint64_t sample_size = 0;
  uint32_t image_size = 0;
  std::map<std::string, double> spread;      // by rate key: (max − min) / median
  std::map<std::string, std::string> notes;  // by key: a comment after the value
};

// The profile file's text for `node` (round-trips through ReadNodeSection).
std::string NodeProfileYaml(const NodeOptions& node, const ProfileInfo& info);

// Storage profiles: a directory's storage as the simulator models it, measured by `stallscope
// calibrate --dir DIR` (app/bench_dir.h, FitDirectoryStorage) and named by storage.profile:
//   profile: {date:, host:, path: DIR, cold:, direct_io:, io_depth:, io_threads:, io_slice:, ...}
//   storage: {bandwidth: 412.000MB/s, latency: {p50: 180us, p99: 900us}, iops: 0}
// Reads the file `at` names (relative as a node profile) into st.model's bandwidth, latency and
// iops, and sets st.model_source and the read mode it was measured with (profile_cold,
// profile_direct, profile_io_slice: -1 where the profile predates io_slice; profile_io_depth).
// Fails (ScenarioError) naming the file and key.
void ReadStorageProfile(config::Section& s, const YAML::Node& at, StorageOptions& st);

struct StorageProfileInfo {
  std::string date, host, path;
  bool cold = false, direct_io = false;
  uint32_t io_depth = 0, io_threads = 0;
  double io_slice = 0;  // seconds: the I/O threads' scheduler slice (loader.io_slice)
  uint64_t files = 0, probe_files = 0, bytes = 0;
  uint64_t probe_reads = 0;  // the probe's passes over its files, pooled (the comment only)
};
std::string StorageProfileYaml(const SimulatedStorageOptions& m, const StorageProfileInfo& info);

}  // namespace stallscope

#endif  // STALLSCOPE_CONFIG_NODE_PROFILE_H_
