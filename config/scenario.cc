#include "config/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "base/thread_slice.h"
#include "base/units.h"
#include "cache/policy.h"
#include "config/node_profile.h"
#include "config/yaml_section.h"

namespace stallscope {
namespace {
using config::Context;
using config::Join;
using config::Section;
using config::Show;

void ReadDataset(Section s, DatasetOptions& d) {
  d.samples = s.Integer<uint64_t>("samples", d.samples, 1);
  YAML::Node size = s.Get("sample_size");
  if (size.IsDefined()) {
    if (size.IsMap()) {
      Section m(s.ctx(), size, s.Path("sample_size"));
      d.sample_size = m.Size("mean", d.sample_size, true);
      d.sample_size_stdev = m.Size("stdev", 0, false);
      m.Finish();
    } else if (size.IsScalar()) {
      d.sample_size = s.SizeOf(size, s.Path("sample_size"), true);
    } else {
      s.ctx().Fail(size, s.Path("sample_size"),
                   "expected a size or {mean: SIZE, stdev: SIZE}, got " + Show(size));
    }
  }
  d.path = s.String("path", d.path);
  d.classes = s.Integer<uint32_t>("classes", d.classes, 1);
  s.Finish();
}

void ReadStorage(Section s, StorageOptions& st) {
  st.kind = s.Enum("kind", st.kind, kStorageKindNames);
  SimulatedStorageOptions& m = st.model;
  const YAML::Node profile = s.Get("profile");
  const bool profiled = profile.IsDefined() && !profile.IsNull();
  if (profiled) ReadStorageProfile(s, profile, st);
  const SimulatedStorageOptions from_profile = m;
  m.bandwidth_bytes_per_second = s.Rate("bandwidth", m.bandwidth_bytes_per_second);
  YAML::Node lat = s.Get("latency");
  if (lat.IsDefined()) {
    Section l(s.ctx(), lat, s.Path("latency"));
    // Over a profile, either value alone replaces the profile's (p99 stays at least p50).
    m.latency_p50_seconds = l.Duration("p50", m.latency_p50_seconds);
    m.latency_p99_seconds =
        l.Duration("p99", profiled ? std::max(m.latency_p99_seconds, m.latency_p50_seconds)
                                   : m.latency_p50_seconds);
    l.Finish();
    if (m.latency_p99_seconds < m.latency_p50_seconds) {
      s.ctx().Fail(lat, s.Path("latency.p99"), "must not be below latency.p50");
    }
    if (m.latency_p50_seconds == 0 && m.latency_p99_seconds > 0) {
      s.ctx().Fail(lat, s.Path("latency.p50"), "must be positive when p99 is");
    }
  }
  m.max_inflight = s.Integer<uint32_t>("max_inflight", m.max_inflight, 1);
  m.iops = s.Number("iops", m.iops, 0, 1e12);
  st.direct_io = s.Bool("direct_io", st.direct_io);
  st.cold = s.Bool("cold", st.cold);
  if (profiled) {
    if (st.kind != StorageKind::kDirectory) {
      s.ctx().Fail(profile, s.Path("profile"),
                   "a storage profile models a directory (storage.kind directory); simulated "
                   "storage takes bandwidth, latency and iops keys");
    }
    if (st.cold != st.profile_cold || st.direct_io != st.profile_direct) {
      s.ctx().Fail(
          profile, s.Path("profile"),
          fmt::format("was measured {}{}, but this scenario reads {}{}: measure one the same "
                      "way (stallscope calibrate --dir DIR{}{} -o FILE)",
                      st.profile_cold ? "cold" : "page-cached",
                      st.profile_direct ? " with O_DIRECT" : "", st.cold ? "cold" : "page-cached",
                      st.direct_io ? " with O_DIRECT" : "", st.cold ? " --cold" : "",
                      st.direct_io ? " --direct" : ""));
    }
    if (m.bandwidth_bytes_per_second != from_profile.bandwidth_bytes_per_second ||
        m.latency_p50_seconds != from_profile.latency_p50_seconds ||
        m.latency_p99_seconds != from_profile.latency_p99_seconds || m.iops != from_profile.iops) {
      st.model_source += ", with storage keys";
    }
  }
  YAML::Node faults = s.Get("faults");
  if (faults.IsDefined()) {
    Section f(s.ctx(), faults, s.Path("faults"));
    auto& x = m.faults;
    x.error_rate = f.Number("error_rate", x.error_rate, 0, 1);
    x.timeout_rate = f.Number("timeout_rate", x.timeout_rate, 0, 1);
    x.timeout = f.Duration("timeout", x.timeout);
    x.stall_every = f.Duration("stall_every", x.stall_every);
    x.stall_for = f.Duration("stall_for", x.stall_for);
    x.truncate_rate = f.Number("truncate_rate", x.truncate_rate, 0, 1);
    x.spike_rate = f.Number("spike_rate", x.spike_rate, 0, 1);
    x.spike = f.Duration("spike", x.spike);
    f.Finish();
  }
  YAML::Node write = s.Get("write");
  if (write.IsDefined()) {
    Section w(s.ctx(), write, s.Path("write"));
    auto& x = m.write;
    x.shared = w.Bool("shared", x.shared);
    x.bandwidth = w.Rate("bandwidth", x.bandwidth);
    if (x.shared && x.bandwidth > 0) {
      s.ctx().Fail(write["bandwidth"], w.Path("bandwidth"),
                   "shared writes take storage.bandwidth with the reads; set storage.write.shared: "
                   "false for a write bandwidth of their own");
    }
    YAML::Node wl = w.Get("latency");
    if (wl.IsDefined()) {
      Section l(s.ctx(), wl, w.Path("latency"));
      x.latency_p50 = l.Duration("p50", 0, true);
      x.latency_p99 = l.Duration("p99", x.latency_p50);
      l.Finish();
      if (x.latency_p99 < x.latency_p50) {
        s.ctx().Fail(wl, w.Path("latency.p99"), "must not be below latency.p50");
      }
    }
    w.Finish();
  }
  s.Finish();
}

// checkpoint: present (a mapping) = checkpoints during the run.
void ReadCheckpoint(Section s, CheckpointOptions& c) {
  c.every = s.Integer<uint64_t>("every", c.every, 1);
  c.interval = s.Duration("interval", c.interval, true);
  const YAML::Node node = s.Get("every");
  if (c.every > 0 && c.interval > 0) {
    s.ctx().Fail(node, s.Path("every"), "give every (steps) or interval (a duration), not both");
  }
  const YAML::Node model = s.Get("model");
  c.bytes = s.Size("size", c.bytes, true);
  c.model = s.String("model", c.model);
  if (!c.model.empty()) {
    std::vector<std::string> names;
    const CheckpointPreset* preset = nullptr;
    for (const CheckpointPreset& p : kCheckpointPresets) {
      names.push_back(p.name);
      if (c.model == p.name) preset = &p;
    }
    if (!preset) {
      s.ctx().Fail(model, s.Path("model"),
                   fmt::format("unknown model '{}' (MLPerf Storage presets: {})", c.model,
                               Join(names, ", ")));
    }
    if (c.bytes > 0) s.ctx().Fail(model, s.Path("model"), "give size or model, not both");
    c.bytes = preset->bytes;
  }
  c.mode = s.Enum("mode", c.mode, kCheckpointModeNames);
  c.path = s.String("path", c.path);
  c.fsync = s.Bool("fsync", c.fsync);
  c.direct = s.Bool("direct", c.direct);
  c.keep = s.Integer<uint32_t>("keep", c.keep, 1, 1000);
  c.restore = s.Bool("restore", c.restore);
  c.block = s.Size("block", c.block, true);
  if (c.block % 4096 != 0 || c.block > (1ULL << 30)) {
    s.ctx().Fail(s.Get("block"), s.Path("block"), "must be a multiple of 4 KiB up to 1 GiB");
  }
  c.io_depth = s.Integer<uint32_t>("io_depth", c.io_depth, 1, 1024);
  c.bandwidth = s.Rate("bandwidth", c.bandwidth);
  s.Finish();
  if (!c.enabled() && !c.restore) {
    s.ctx().Fail(s.node(), s.Path("every"),
                 "a checkpoint section needs every (steps between checkpoints) or interval (a "
                 "duration), or restore: true");
  }
  if (c.bytes == 0) {
    s.ctx().Fail(s.node(), s.Path("size"),
                 "a checkpoint needs its size (e.g. 16GiB) or model (e.g. llama3-8b)");
  }
}

void ReadCache(Section s, std::vector<TierOptions>& tiers, CacheScope& scope) {
  scope = s.Enum("scope", scope, kCacheScopeNames);
  YAML::Node list = s.Get("tiers");
  if (list.IsDefined() && !list.IsNull()) {
    if (!list.IsSequence()) {
      s.ctx().Fail(list, s.Path("tiers"), "expected a list of tiers, got " + Show(list));
    }
    if (list.size() > kMaxCacheTiers) {
      s.ctx().Fail(list, s.Path("tiers"), fmt::format("at most {} tiers", kMaxCacheTiers));
    }
    tiers.clear();
    for (size_t i = 0; i < list.size(); ++i) {
      Section t(s.ctx(), list[i], s.Path(fmt::format("tiers.{}", i)));
      TierOptions o;
      o.kind = t.Enum("kind", o.kind, kTierKindNames);
      o.path = t.String("path", o.path);
      // A distributed tier is the union of the other nodes' tiers: it has no capacity of its
      // own (simulate only).
      const bool distributed = o.kind == TierKind::kDistributed;
      o.capacity = t.Size("capacity", o.capacity, !distributed);
      if (!distributed && !list[i]["capacity"].IsDefined()) {
        s.ctx().Fail(list[i], t.Path("capacity"), "every tier needs a capacity");
      }
      if (distributed && i + 1 != list.size()) {
        s.ctx().Fail(list[i], t.Path("kind"),
                     "the distributed tier (the other nodes' caches) must be the last tier");
      }
      o.read_bandwidth = t.Rate("bandwidth", o.read_bandwidth);
      o.read_latency = t.Duration("latency", o.read_latency);
      o.policy = t.Enum("policy", o.policy, kPolicyNames);
      o.clear = t.Bool("clear", o.clear);
      o.overcommit = t.Bool("overcommit", o.overcommit);
      if (o.kind == TierKind::kDisk && o.path.empty()) {
        s.ctx().Fail(list[i], t.Path("path"), "a disk tier needs a path");
      }
      t.Finish();
      tiers.push_back(o);
    }
  }
  s.Finish();
}

void ReadLoader(Section s, LoaderOptions& l) {
  l.batch_size = s.Integer<uint32_t>("batch_size", l.batch_size, 1, kMaxBatchSize);
  l.prefetch = s.Integer<uint32_t>("prefetch", l.prefetch, 0, kMaxPrefetch);
  l.io.io_depth = s.Integer<uint32_t>("io_depth", l.io.io_depth, 1, kMaxIoDepth);
  l.io.io_threads = s.Integer<uint32_t>("io_threads", l.io.io_threads, 1, kMaxIoThreads);
  l.workers = s.Integer<uint32_t>("workers", l.workers, 1, kMaxWorkers);
  YAML::Node pre = s.Get("preprocess");
  PreprocessOptions& p = l.preprocess;
  if (pre.IsDefined()) {
    if (pre.IsScalar()) {
      p.kind = s.EnumOf(pre, s.Path("preprocess"), kPreprocessKindNames);
    } else {
      Section ps(s.ctx(), pre, s.Path("preprocess"));
      p.kind = ps.Enum("kind", p.kind, kPreprocessKindNames);
      p.cost = ps.Duration("cost", p.cost);
      p.image_size = ps.Integer<uint32_t>("size", p.image_size, 8);
      if (p.image_size > 4096) {
        s.ctx().Fail(pre["size"], ps.Path("size"), "expected 8 to 4096 pixels");
      }
      p.normalize_on = ps.Enum("normalize_on", p.normalize_on, kNormalizeOnNames);
      ps.Finish();
    }
  }
  l.on_error = s.Enum("on_error", l.on_error, kOnErrorNames);
  l.retries = s.Integer<uint32_t>("retries", l.retries, 0, kMaxRetries);
  l.retry_backoff = s.Duration("retry_backoff", l.retry_backoff);
  l.io.read_timeout = s.Duration("read_timeout", l.io.read_timeout);
  l.io.io_slice = s.Duration("io_slice", l.io.io_slice);
  if (!IsSliceRequest(l.io.io_slice))
    s.ctx().Fail(s.Get("io_slice"), s.Path("io_slice"), kSliceRange);
  s.Finish();
}

void ReadGpu(Section s, DeviceOptions& g) {
  g.device = s.Enum("device", g.device, kDeviceKindNames);
  g.step_time = s.Duration("step_time", g.step_time);
  YAML::Node model = s.Get("model");
  if (model.IsDefined()) {
    Section m(s.ctx(), model, s.Path("model"));
    g.model.kind = m.Enum("kind", g.model.kind, kModelKindNames);
    g.model.input = m.Integer<uint32_t>("input", g.model.input, 1);
    g.model.hidden = m.Integer<uint32_t>("hidden", g.model.hidden, 0);
    g.model.layers = m.Integer<uint32_t>("layers", g.model.layers, 1);
    g.model.classes = m.Integer<uint32_t>("classes", g.model.classes, 2);
    m.Finish();
  }
  g.gemm = s.Enum("gemm", g.gemm, kGemmKindNames);
  g.graph = s.Bool("graph", g.graph);
  s.Finish();
}

void ReadRun(Section s, RunOptions& r) {
  r.epochs = s.Integer<uint32_t>("epochs", r.epochs, 1);
  r.warmup_steps = s.Integer<uint32_t>("warmup_steps", r.warmup_steps, 0);
  r.max_steps = s.Integer<uint64_t>("max_steps", r.max_steps, 0);
  r.time_limit = s.Duration("time_limit", r.time_limit);
  r.verify = s.Bool("verify", r.verify);
  s.Finish();
}

void ReadCluster(Section s, ClusterOptions& c) {
  c.nodes = s.Integer<uint32_t>("nodes", c.nodes, 1);
  c.gpus_per_node = s.Integer<uint32_t>("gpus_per_node", c.gpus_per_node, 1);
  c.network_bandwidth = s.Rate("network_bandwidth", c.network_bandwidth);
  // (cpus_per_node: the older name of node.cores.)
  c.node.cores = s.Integer<uint32_t>("cpus_per_node", c.node.cores, 1, 1u << 20);
  ReadNodeSection(Section(s.ctx(), s.Get("node"), s.Path("node")), c.node);
  Section st(s.ctx(), s.Get("straggler"), s.Path("straggler"));
  c.straggler.rank = st.Integer<int64_t>("rank", c.straggler.rank, 0, 1 << 24);
  c.straggler.slowdown = st.Number("slowdown", c.straggler.slowdown, 1, 1000);
  st.Finish();
  s.Finish();
}

// A storage profile's reads had the I/O threads' slice the scenario gives them: on shared
// cores the slice moves a read's wait for a core by tens of microseconds.
void CheckProfileSlice(const Context& ctx, const YAML::Node& root, const Scenario& sc) {
  const double measured = sc.storage.profile_io_slice, wanted = sc.loader.io.io_slice;
  if (measured < 0 || std::abs(measured - wanted) < 0.5e-6) return;
  auto text = [](double s) { return fmt::format("{:.0f}us", s * 1e6); };
  ctx.Fail(root["storage"]["profile"], "storage.profile",
           fmt::format("was measured with loader.io_slice {}, but this scenario's is {}: measure "
                       "one the same way (stallscope calibrate --dir DIR ... --io-slice {} -o "
                       "FILE)",
                       text(measured), text(wanted), text(wanted)));
}

Scenario Convert(const Context& ctx, const YAML::Node& root) {
  Scenario sc;
  sc.file = ctx.file;
  Section top(ctx, root, "");
  sc.name = top.String("name", sc.name);
  sc.description = top.String("description", "");
  sc.seed = top.Integer<uint64_t>("seed", sc.seed, 0);
  ReadDataset(Section(ctx, top.Get("dataset"), "dataset"), sc.dataset);
  ReadStorage(Section(ctx, top.Get("storage"), "storage"), sc.storage);
  ReadCache(Section(ctx, top.Get("cache"), "cache"), sc.cache_tiers, sc.cache_scope);
  ReadLoader(Section(ctx, top.Get("loader"), "loader"), sc.loader);
  CheckProfileSlice(ctx, root, sc);
  ReadGpu(Section(ctx, top.Get("gpu"), "gpu"), sc.gpu);
  ReadRun(Section(ctx, top.Get("run"), "run"), sc.run);
  ReadCluster(Section(ctx, top.Get("cluster"), "cluster"), sc.cluster);
  const YAML::Node checkpoint = top.Get("checkpoint");
  if (checkpoint.IsDefined() && !checkpoint.IsNull()) {
    ReadCheckpoint(Section(ctx, checkpoint, "checkpoint"), sc.checkpoint);
    if (sc.checkpoint.path.empty() && sc.storage.kind != StorageKind::kSimulated) {
      ctx.Fail(checkpoint, "checkpoint.path",
               fmt::format("needed with storage.kind {} (without a path, checkpoints go to the "
                           "simulated storage)",
                           NameOf(sc.storage.kind)));
    }
  }
  YAML::Node cost = top.Get("cost");
  if (cost.IsDefined() && !cost.IsNull()) {
    Section c(ctx, cost, "cost");
    if (cost["gpu_hour"].IsDefined()) sc.gpu_hour_cost = c.Number("gpu_hour", 0, 0, 1e9);
    auto price = [&](const char* key, std::optional<double>& out) {
      if (cost[key].IsDefined()) out = c.Number(key, 0, 0, 1e9);
    };
    price("ram_gib_day", sc.prices.ram_gib_day);
    price("disk_gib_day", sc.prices.disk_gib_day);
    price("storage_gbps_day", sc.prices.storage_gbps_day);
    price("core_day", sc.prices.core_day);
    c.Finish();
  }
  top.Get("variants");  // read by ScenarioFile
  top.Finish();
  if (sc.has_distributed_tier() && sc.cache_scope == CacheScope::kRank) {
    ctx.Fail(root["cache"]["scope"], "cache.scope",
             "a distributed cache tier is the union of the nodes' tiers: it needs cache.scope: "
             "node");
  }
  if (sc.has_distributed_tier() && sc.cluster.network_bandwidth <= 0) {
    ctx.Fail(root["cache"]["tiers"], "cluster.network_bandwidth",
             "a distributed cache tier needs cluster.network_bandwidth (the rate of a peer hit's "
             "transfer, e.g. 12.5GB/s for 100 Gb/s)");
  }
  if (sc.cluster.straggler.rank >= 0 && sc.cluster.straggler.slowdown > 1 &&
      sc.loader.preprocess.cost <= 0) {
    ctx.Fail(root["cluster"]["straggler"], "cluster.straggler.slowdown",
             "slows the rank's loader.preprocess.cost, which is 0: set loader.preprocess.cost "
             "(the CPU seconds each sample costs)");
  }
  if (sc.storage.kind == StorageKind::kDirectory && sc.dataset.path.empty()) {
    ctx.Fail(root["storage"]["kind"], "dataset.path",
             "storage.kind directory needs dataset.path (the dataset's root folder)");
  }
  return sc;
}

void Apply(const Context& ctx, YAML::Node& root, const Override& o) {
  std::vector<std::string> parts;
  std::stringstream ss(o.key);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  if (parts.empty() || o.key.empty()) throw ScenarioError(o.origin + ": empty key");
  YAML::Node cur;
  cur.reset(root);
  std::string path;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part.empty()) throw ScenarioError(fmt::format("{}: {}: empty key part", o.origin, o.key));
    path = path.empty() ? part : path + "." + part;
    const bool last = i + 1 == parts.size();
    if (cur.IsSequence()) {
      size_t idx = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), idx);
      if (ec != std::errc() || end != part.data() + part.size() || idx >= cur.size()) {
        throw ScenarioError(fmt::format("{}: {}: '{}' is not an index of this {}-item list",
                                        o.origin, path, part, cur.size()));
      }
      if (last) {
        cur[idx] = o.value;
      } else {
        YAML::Node next = cur[idx];
        cur.reset(next);
      }
      continue;
    }
    if (cur.IsScalar()) {
      throw ScenarioError(
          fmt::format("{}: {}: cannot set a key inside a single value", o.origin, path));
    }
    if (last) {
      cur[part] = o.value;
    } else {
      if (!cur[part].IsDefined() || cur[part].IsNull()) cur[part] = YAML::Node(YAML::NodeType::Map);
      YAML::Node next = cur[part];
      cur.reset(next);
    }
  }
}

}  // namespace

ScenarioFile ScenarioFile::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(fmt::format("{}: cannot open scenario file", path));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

namespace {

// Parses `text`; throws ScenarioError naming the line of a syntax error.
YAML::Node ParseYaml(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(fmt::format("{}:{}:{}: YAML syntax error: {}", name, e.mark.line + 1,
                                    e.mark.column + 1, e.msg));
  }
  if (root.IsNull() || !root.IsDefined()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) Context{name, nullptr}.Fail(root, "(top level)", "expected a mapping of keys");
  return root;
}

// The variants of a parsed document, in file order, as overrides that keep their marks.
std::vector<std::pair<std::string, std::vector<Override>>> VariantsOf(const YAML::Node& root,
                                                                      const std::string& name) {
  std::vector<std::pair<std::string, std::vector<Override>>> out;
  const Context ctx{name, nullptr};
  const YAML::Node& croot = root;
  const YAML::Node variants = croot["variants"];
  if (!variants.IsDefined() || variants.IsNull()) return out;
  if (!variants.IsMap()) {
    ctx.Fail(variants, "variants", "expected a mapping of NAME: {KEY: VALUE, ...}");
  }
  for (const auto& v : variants) {
    const std::string vname = v.first.Scalar();
    std::vector<Override> overrides;
    if (!v.second.IsNull()) {
      if (!v.second.IsMap()) {
        ctx.Fail(v.second, "variants." + vname, "expected a mapping of dotted keys to values");
      }
      for (const auto& kv : v.second) {
        const YAML::Mark m = kv.first.Mark();
        overrides.push_back(
            {kv.first.Scalar(), kv.second,
             fmt::format("{}:{}:{} (variant {})", name, m.line + 1, m.column + 1, vname)});
      }
    }
    out.emplace_back(vname, std::move(overrides));
  }
  return out;
}

}  // namespace

ScenarioFile ScenarioFile::Parse(const std::string& text, const std::string& name) {
  ScenarioFile f;
  f.path_ = name;
  f.text_ = text;
  for (auto& [vname, overrides] : VariantsOf(ParseYaml(text, name), name)) {
    f.variant_names_.push_back(vname);
  }
  return f;
}

std::vector<std::string> ScenarioFile::variant_names() const {
  if (variant_names_.empty()) return {"base"};
  return variant_names_;
}

YAML::Node ScenarioFile::Applied(const std::string& variant, const std::vector<Override>& sets,
                                 std::vector<Override>& all) const {
  // A fresh parse per resolution: overrides edit the tree, and yaml-cpp's Clone() drops the
  // line/column marks that error messages need.
  YAML::Node root = ParseYaml(text_, path_);
  const auto variants = VariantsOf(root, path_);
  if (!variants.empty() || variant != "base") {
    auto it = std::find_if(variants.begin(), variants.end(),
                           [&](const auto& v) { return v.first == variant; });
    if (it == variants.end()) {
      throw ScenarioError(fmt::format("{}: no variant named '{}' (variants: {})", path_, variant,
                                      Join(variant_names(), ", ")));
    }
    all = it->second;
  }
  for (const Override& o : sets) {
    if (o.key.rfind("variants", 0) == 0) {
      throw ScenarioError(o.origin + ": variants cannot be set from the command line");
    }
    all.push_back({o.key, YAML::Clone(o.value), o.origin});
  }
  const Context ctx{path_, &all};
  for (const Override& o : all) Apply(ctx, root, o);
  return root;
}

Scenario ScenarioFile::Resolve(const std::string& variant,
                               const std::vector<Override>& sets) const {
  std::vector<Override> all;
  const YAML::Node root = Applied(variant, sets, all);
  Scenario sc = Convert(Context{path_, &all}, root);
  sc.variant = variant;
  return sc;
}

std::vector<ScenarioKey> ScenarioFile::Keys(const std::string& variant,
                                            const std::vector<Override>& sets) const {
  std::vector<Override> all;
  const YAML::Node root = Applied(variant, sets, all);
  std::vector<ScenarioKey> keys;
  Convert(Context{path_, &all, &keys}, root);
  return keys;
}

std::string ScenarioFile::Emit(const std::string& variant,
                               const std::vector<Override>& sets) const {
  std::vector<Override> all;
  YAML::Node root = Applied(variant, sets, all);
  root.remove("variants");
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

void CheckFaults(const Scenario& s) {
  const auto& f = s.storage.model.faults;
  if (f.any() && s.storage.kind != StorageKind::kSimulated) {
    throw BadInput(fmt::format(
        "{}: storage.faults: faults are injected by the simulated storage only (storage.kind "
        "is {}); a real directory meets real ones",
        s.file, NameOf(s.storage.kind)));
  }
  if (f.error_rate + f.timeout_rate + f.truncate_rate > 1) {
    throw BadInput(fmt::format(
        "{}: storage.faults: error_rate + timeout_rate + truncate_rate is {:.3g}, above 1", s.file,
        f.error_rate + f.timeout_rate + f.truncate_rate));
  }
}

Override ParseSetArgument(const std::string& argument) {
  const auto eq = argument.find('=');
  const std::string origin = "--set '" + argument + "'";
  if (eq == std::string::npos || eq == 0) {
    throw ScenarioError(origin + ": expected KEY=VALUE, e.g. --set loader.prefetch=8");
  }
  Override o;
  o.key = argument.substr(0, eq);
  o.origin = origin;
  try {
    o.value = YAML::Load(argument.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin + ": the value is not valid YAML: " + e.msg);
  }
  if (!o.value.IsDefined() || o.value.IsNull()) {
    if (argument.size() == eq + 1) throw ScenarioError(origin + ": empty value");
  }
  return o;
}

}  // namespace stallscope
