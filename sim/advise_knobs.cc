#include "sim/advise_knobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/units.h"

namespace stallscope {
namespace {

constexpr double kGiB = 1073741824.0;

std::string TierYaml(const TierOptions& t) {
  std::string y = fmt::format("{{kind: {}, policy: {}", NameOf(t.kind), NameOf(t.policy));
  if (t.kind != TierKind::kDistributed) y += ", capacity: " + ExactSize(t.capacity);
  if (!t.path.empty()) y += fmt::format(", path: \"{}\"", t.path);
  if (t.clear) y += ", clear: true";
  if (t.overcommit) y += ", overcommit: true";
  if (t.kind == TierKind::kDisk) {
    y += fmt::format(", bandwidth: {}, latency: {:.9f}s", ExactRate(t.read_bandwidth),
                     t.read_latency);
  }
  return y + "}";
}

int MemoryTier(const Scenario& s) {
  for (size_t i = 0; i < s.cache_tiers.size(); ++i) {
    if (s.cache_tiers[i].kind == TierKind::kMemory) return static_cast<int>(i);
  }
  return -1;
}

// Adds a rung that sets `key` to `value`.
void Rung(Knob& k, const std::string& key, const std::string& value, const std::string& text,
          AdviseChange extra = {}) {
  extra.key = key;
  extra.value = value;
  extra.text = text;
  extra.rung = static_cast<int>(k.rungs.size());
  k.rungs.push_back(extra);
  k.rungs.back().sets = {{key, value}};
}

// The knobs past the loader and the cache: the storage, checkpoints, the node.
void AddStorageAndNodeKnobs(const Scenario& s, std::vector<Knob>& knobs) {
  const double nodes = s.cluster.nodes;
  // Faster storage: simulated storage, or a directory modelled from its storage profile (a
  // faster disk). Its IOPS, where it has a limit, scale with the bandwidth.
  const double bw = s.storage.model.bandwidth_bytes_per_second, iops = s.storage.model.iops;
  if (s.storage.kind != StorageKind::kMemory && bw > 0) {
    Knob k{"bandwidth"};
    for (double f : {1.5, 2.0, 4.0}) {
      AdviseChange c;
      c.storage_gbps = bw * (f - 1) / 1e9;
      Rung(k, "storage.bandwidth", ExactRate(bw * f),
           fmt::format("faster storage: {} → {}{}", FormatRate(bw), FormatRate(bw * f),
                       iops > 0 ? fmt::format(", {:.0f} → {:.0f} IOPS", iops, iops * f) : ""),
           c);
      if (iops > 0)
        k.rungs.back().sets.emplace_back("storage.iops", fmt::format("{:.0f}", iops * f));
    }
    knobs.push_back(k);
  }
  if (s.checkpoint.enabled()) {
    // Checkpoints that hold the GPU: written beside the next steps (async), then less often.
    Knob k{"checkpoint"};
    const CheckpointOptions& c = s.checkpoint;
    const bool sync = c.mode == CheckpointMode::kSync;
    if (sync) Rung(k, "checkpoint.mode", "async", "checkpoint.mode sync → async");
    for (int f : {2, 4}) {
      const std::string key = c.every ? "checkpoint.every" : "checkpoint.interval";
      const std::string from = c.every ? std::to_string(c.every) : FormatDuration(c.interval);
      const std::string to =
          c.every ? std::to_string(c.every * f) : fmt::format("{:.6f}s", c.interval * f);
      const std::string text = fmt::format("{}checkpoint every {} → {}", sync ? "async, " : "",
                                           from, c.every ? to : FormatDuration(c.interval * f));
      Rung(k, key, to, text);
      if (sync) k.rungs.back().sets.emplace_back("checkpoint.mode", "async");
    }
    knobs.push_back(k);
  }
  {
    Knob k{"cores"};
    const uint32_t c0 = s.cluster.node.cores;
    for (uint32_t f : {2u, 4u}) {
      AdviseChange c;
      c.cores = static_cast<double>(c0) * (f - 1) * nodes;
      Rung(k, "cluster.node.cores", std::to_string(c0 * f),
           fmt::format("cluster.node.cores {} → {}", c0, c0 * f), c);
    }
    knobs.push_back(k);
  }
  if (s.cluster.nodes > 1 && s.storage.kind == StorageKind::kSimulated) {
    Knob k{"nic"};
    Rung(k, "cluster.node.nic", ExactRate(s.cluster.node.nic * 2),
         fmt::format("cluster.node.nic {} → {}", FormatRate(s.cluster.node.nic),
                     FormatRate(s.cluster.node.nic * 2)));
    knobs.push_back(k);
  }
}

}  // namespace

std::vector<Knob> KnobsOf(const Scenario& s, uint64_t dataset_bytes) {
  std::vector<Knob> knobs;
  const double nodes = s.cluster.nodes;
  const int mem = MemoryTier(s);
  // A distributed tier first: it rewrites cache.tiers, which the other cache knobs then edit.
  if (s.cluster.nodes > 1 && mem >= 0 && !s.has_distributed_tier()) {
    Knob k{"distributed"};
    std::string list;
    for (const TierOptions& t : s.cache_tiers) list += TierYaml(t) + ", ";
    Rung(k, "cache.tiers", "[" + list + "{kind: distributed}]",
         "a distributed tier: the nodes' RAM tiers serve each other's misses");
    if (s.cluster.network_bandwidth <= 0) {
      k.rungs.back().sets.emplace_back("cluster.network_bandwidth", ExactRate(s.cluster.node.nic));
    }
    knobs.push_back(k);
  }
  {
    Knob k{"prefetch"};
    uint32_t v = s.loader.prefetch;
    for (int i = 0; i < 6; ++i) {  // up to 32 from 0, 64× from the scenario's value
      v = v == 0 ? 1 : std::min<uint32_t>(v * 2, kMaxPrefetch);
      if (!k.rungs.empty() && k.rungs.back().value == std::to_string(v)) break;
      Rung(k, "loader.prefetch", std::to_string(v),
           fmt::format("loader.prefetch {} → {}", s.loader.prefetch, v));
    }
    knobs.push_back(k);
  }
  {
    Knob k{"workers"};
    const uint32_t w = std::max<uint32_t>(s.loader.workers, 1);
    for (uint32_t v : {w + 1, w * 2, w * 4}) {
      v = std::min(v, kMaxWorkers);
      if (v <= w || (!k.rungs.empty() && std::stoul(k.rungs.back().value) >= v)) continue;
      Rung(k, "loader.workers", std::to_string(v), fmt::format("loader.workers {} → {}", w, v));
    }
    knobs.push_back(k);
  }
  if (s.loader.preprocess.kind == PreprocessKind::kJpegDecode &&
      s.loader.preprocess.normalize_on == NormalizeOn::kHost) {
    // The decode's normalization on the GPU, as DALI's crop-mirror-normalize: the workers
    // hand over the crop's uint8 pixels (the node's jpeg_decode_device rate). The whole
    // preprocess map is set: a scenario may give it as a single value.
    const PreprocessOptions& p = s.loader.preprocess;
    Knob k{"normalize_on"};
    Rung(k, "loader.preprocess",
         fmt::format("{{kind: jpeg-decode, cost: {:.9f}s, size: {}, normalize_on: device}}", p.cost,
                     p.image_size),
         "jpeg-decode normalized on the device (the workers hand over uint8 pixels)");
    knobs.push_back(k);
  }
  if (s.storage.kind == StorageKind::kDirectory) {
    // A directory's reads in flight are the loader's (a simulated storage's are its own
    // max_inflight): deeper hides the disk's latency.
    Knob k{"io_depth"};
    uint32_t v = s.loader.io.io_depth;
    while (v < 256) {  // ×4 up to 256
      v = std::min<uint32_t>(v * 4, 256);
      Rung(k, "loader.io_depth", std::to_string(v),
           fmt::format("loader.io_depth {} → {}", s.loader.io.io_depth, v));
    }
    if (!k.rungs.empty()) knobs.push_back(k);
  }
  if (dataset_bytes > 0) {
    Knob k{"ram"};
    const uint64_t have = mem >= 0 ? s.cache_tiers[mem].capacity : 0;
    for (double f : {0.25, 0.5, 1.1}) {
      const uint64_t cap = static_cast<uint64_t>(std::ceil(dataset_bytes * f / 1048576.0)) << 20;
      if (cap <= have) continue;
      AdviseChange c;
      c.ram_gib = (cap - have) / kGiB * nodes;
      const std::string text =
          mem >= 0
              ? fmt::format("RAM tier {} → {}", FormatBinaryBytes(have), FormatBinaryBytes(cap))
              : fmt::format("a RAM tier of {} (fill-once), {:.0f}% of the dataset",
                            FormatBinaryBytes(cap), std::min(f, 1.0) * 100);
      if (mem >= 0) {
        Rung(k, fmt::format("cache.tiers.{}.capacity", mem), ExactSize(cap), text, c);
      } else if (s.cache_tiers.empty()) {
        Rung(k, "cache.tiers",
             fmt::format("[{{kind: memory, capacity: {}, policy: fill-once}}]", ExactSize(cap)),
             text, c);
      }
    }
    if (!k.rungs.empty()) knobs.push_back(k);
  }
  if (mem >= 0 && s.cache_tiers[mem].policy != PolicyKind::kFillOnce) {
    Knob k{"policy"};
    Rung(k, fmt::format("cache.tiers.{}.policy", mem), "fill-once",
         fmt::format("RAM tier policy {} → fill-once", NameOf(s.cache_tiers[mem].policy)));
    knobs.push_back(k);
  }
  AddStorageAndNodeKnobs(s, knobs);
  return knobs;
}

}  // namespace stallscope
