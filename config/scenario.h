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
#ifndef STALLSCOPE_CONFIG_SCENARIO_H_
#define STALLSCOPE_CONFIG_SCENARIO_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "base/seed.h"
#include "cache/cache.h"
#include "config/node_options.h"
#include "gpu/device_options.h"
#include "pipeline/options.h"
#include "storage/storage_options.h"

namespace stallscope {

class ScenarioError : public BadInput {
 public:
  using BadInput::BadInput;
};

// cluster.*: the ranks a scenario describes (`simulate` at any size; `run` measures this
// host, one rank).
// cluster.straggler: one rank whose CPU work is slower (a node with a slower or busier CPU):
// its loader.preprocess.cost takes `slowdown` times as long, in real multi-rank runs (the
// rank's workers burn that much longer) and in `simulate` alike. rank < 0: none.
struct StragglerOptions {
  int64_t rank = -1;
  double slowdown = 1;

  bool operator==(const StragglerOptions&) const = default;
};

struct ClusterOptions {
  uint32_t nodes = 1, gpus_per_node = 1;
  StragglerOptions straggler;
  double network_bandwidth = 0;  // bytes/s into each node (the distributed tier's transfers)
  NodeOptions node;              // cluster.node: one client node (config/node_options.h)

  bool operator==(const ClusterOptions&) const = default;
};

// A resolved scenario: the settings of every section, each the owning library's own struct.
// cache.scope: whose the local tiers (memory, disk) are when a node runs several ranks.
// node: one set per node, shared by its ranks; rank: one set per rank.
enum class CacheScope { kNode, kRank };
constexpr NameTable<CacheScope, 2> kCacheScopeNames = {
    {{CacheScope::kNode, "node"}, {CacheScope::kRank, "rank"}}};

struct Scenario {
  std::string name = "unnamed";
  std::string description;
  std::string variant = "base";  // which variant this is
  std::string file;              // where it came from (for messages)
  uint64_t seed = kDefaultSeed;

  DatasetOptions dataset;                // storage/storage_options.h
  StorageOptions storage;                // storage/storage_options.h
  std::vector<TierOptions> cache_tiers;  // cache/cache.h; searched in order; empty = no cache
  CacheScope cache_scope = CacheScope::kNode;
  LoaderOptions loader;  // pipeline/options.h
  DeviceOptions gpu;     // gpu/device_options.h
  RunOptions run;        // pipeline/options.h
  ClusterOptions cluster;
  CheckpointOptions checkpoint;         // pipeline/options.h; not enabled() = no checkpoints
  std::optional<double> gpu_hour_cost;  // cost.gpu_hour, USD
  // cost.*: what the changes `advise` weighs cost, USD per day (none given: unpriced).
  struct Prices {
    std::optional<double> ram_gib_day, disk_gib_day, storage_gbps_day, core_day;
    bool any() const { return ram_gib_day || disk_gib_day || storage_gbps_day || core_day; }
    bool operator==(const Prices&) const = default;
  } prices;

  // The options one Pipeline of this scenario runs with.
  PipelineOptions pipeline() const { return {.seed = seed, .loader = loader, .run = run}; }
  bool has_distributed_tier() const {
    return !cache_tiers.empty() && cache_tiers.back().kind == TierKind::kDistributed;
  }

  bool operator==(const Scenario&) const = default;
};

// One key the parser read (`stallscope validate --keys`): its dotted path (list items by
// index), its type (uint32, uint64, int64, number, size, duration, rate, bool, enum, string),
// the values it accepts and the value it resolved to.
struct ScenarioKey {
  std::string path, type, range, value;
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
  // Every key Resolve() reads for `variant` — those the file sets and those left at their
  // defaults — in the order read. Sections the file leaves out that are read only when present
  // (checkpoint, storage.faults, cost, cache tiers, ...) are not listed. Throws ScenarioError.
  std::vector<ScenarioKey> Keys(const std::string& variant,
                                const std::vector<Override>& sets = {}) const;
  // The same as a scenario file of its own (YAML, no variants): what `advise --write` saves.
  std::string Emit(const std::string& variant, const std::vector<Override>& sets = {}) const;

 private:
  // The document with the variant's and `sets`' overrides applied; `all` gets them.
  YAML::Node Applied(const std::string& variant, const std::vector<Override>& sets,
                     std::vector<Override>& all) const;

  std::string path_;
  std::string text_;
  std::vector<std::string> variant_names_;
};

// Throws BadInput for storage.faults on a storage that cannot inject them, or rates that add
// up to more than 1 (run and simulate alike).
void CheckFaults(const Scenario& scenario);

// Parses "KEY=VALUE" from the command line (VALUE read as YAML). Throws ScenarioError.
Override ParseSetArgument(const std::string& argument);

}  // namespace stallscope

#endif  // STALLSCOPE_CONFIG_SCENARIO_H_
