#include "config/node_profile.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace stallscope {
namespace {
using config::Context;
using config::Section;

// Reads the node's keys present in `s` over `node`; with `require`, every key must be there.
void ReadNodeKeys(Section& s, const YAML::Node& raw, NodeOptions& node, bool require) {
  auto need = [&](const char* key) {
    if (require && !(raw.IsDefined() && raw.IsMap() && raw[key].IsDefined())) {
      s.ctx().Fail(raw, s.Path(key),
                   "missing: a profile names every rate (`stallscope calibrate -o FILE` writes "
                   "a complete one)");
    }
  };
  need("cores");
  node.cores = s.Integer<uint32_t>("cores", node.cores, 1, 1u << 20);
  for (const NodeRate& r : kNodeRates) {
    if (!r.optional) need(r.key);  // an optional rate a profile lacks keeps its default
    double& v = node.*(r.field);
    if (IsFactor(r)) {
      v = s.Number(r.key, v, 1e-6, 1e6);
      continue;
    }
    v = s.Rate(r.key, v, /*positive=*/true);
  }
  // Written before jpeg_decode_device existed: the decode is most of the work either way.
  // (`raw` is an invalid node where the scenario has no such section.)
  if (raw.IsDefined() && raw.IsMap() && raw["jpeg_decode"].IsDefined() &&
      !raw["jpeg_decode_device"].IsDefined()) {
    node.jpeg_decode_device = node.jpeg_decode;
  }
  need("memory");
  node.memory = s.Size("memory", node.memory, true);
}

// The profile's date (for the source line), or "undated".
std::string ReadProfileMeta(Section top) {
  std::string date = "undated";
  YAML::Node meta = top.Get("profile");
  if (meta.IsDefined() && meta.IsMap()) {
    for (const auto& kv : meta) {
      if (kv.first.Scalar() == "date" && kv.second.IsScalar()) date = kv.second.Scalar();
    }
  }
  top.Get("spread");
  top.Finish();
  return date;
}

// The profile file that `key` of `s` names (`written`): a relative path is taken from the
// scenario's folder unless it came from the command line. Returns the file's top section
// context (its path) and root mapping; fails naming the key for an unreadable file.
YAML::Node LoadProfile(const Section& s, const YAML::Node& at, const std::string& written,
                       const std::string& what, const std::string& hint, std::string* path) {
  const std::string key = s.Path("profile");
  std::filesystem::path p(written);
  const bool from_command_line = s.ctx().OverrideFor(key, true) != nullptr;
  if (p.is_relative() && !from_command_line && !s.ctx().file.empty()) {
    p = std::filesystem::path(s.ctx().file).parent_path() / p;
  }
  std::ifstream in(p);
  if (!in) {
    s.ctx().Fail(at, key, fmt::format("{}: cannot read the {} ({})", p.string(), what, hint));
  }
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    throw ScenarioError(fmt::format("{}:{}:{}: YAML syntax error: {}", p.string(), e.mark.line + 1,
                                    e.mark.column + 1, e.msg));
  }
  *path = p.string();
  return root;
}

// The profile file's one section `name` (required).
Section ProfileSection(const Context& ctx, const YAML::Node& root, Section& top, const char* name,
                       const char* expected) {
  if (!root.IsMap()) ctx.Fail(root, "(top level)", std::string("expected ") + expected);
  const YAML::Node raw = top.Get(name);
  if (!raw.IsDefined() || !raw.IsMap()) {
    ctx.Fail(root, name, fmt::format("missing: expected {}", expected));
  }
  return Section(ctx, raw, name);
}

void ReadProfile(const Section& s, const YAML::Node& at, const std::string& written,
                 NodeOptions& node) {
  std::string path;
  const YAML::Node root = LoadProfile(
      s, at, written, "node profile",
      fmt::format("`stallscope calibrate -o {}` measures this host and writes one", written),
      &path);
  const Context ctx{path, nullptr};
  Section top(ctx, root, "");
  Section n = ProfileSection(ctx, root, top, "node", "a node profile (profile:, node:)");
  ReadNodeKeys(n, n.node(), node, true);
  n.Finish();
  node.source = fmt::format("profile {}, {}", written, ReadProfileMeta(top));
}

std::string RateText(double v) {
  return v >= 1e9   ? fmt::format("{:.3f}GB/s", v / 1e9)
         : v >= 1e6 ? fmt::format("{:.3f}MB/s", v / 1e6)
                    : fmt::format("{:.3f}B/s", v);
}

// A YAML double-quoted scalar: any path or host name reads back as written.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

void ReadNodeSection(Section s, NodeOptions& node) {
  const YAML::Node profile = s.Get("profile");
  if (profile.IsDefined() && !profile.IsNull()) {
    if (!profile.IsScalar()) {
      s.ctx().Fail(profile, s.Path("profile"),
                   "expected a file name, got " + config::Show(profile));
    }
    ReadProfile(s, profile, profile.Scalar(), node);
  }
  const std::string source = node.source;
  const NodeOptions before = node;
  // (The section itself, for the keys a scenario sets over the profile or the defaults.)
  ReadNodeKeys(s, s.node(), node, false);
  s.Finish();
  NodeOptions same = node;
  same.source = before.source;
  const bool profile_read = source.rfind("profile ", 0) == 0;
  node.source = same == before || !profile_read ? source : source + ", with cluster.node keys";
}

std::string NodeProfileYaml(const NodeOptions& node, const ProfileInfo& info) {
  auto note = [&](const std::string& key) {
    const auto it = info.notes.find(key);
    return it == info.notes.end() ? std::string() : "  # " + it->second;
  };
  std::string out = fmt::format(
      "# A node profile: `stallscope calibrate` measured this host ({} trials of each rate; the\n"
      "# value is their median). Name it in a scenario (cluster: {{node: {{profile: FILE}}}}) or\n"
      "# pass --node-profile FILE to `simulate`; cluster.node keys override single values.\n"
      "profile:\n  date: {}\n  host: {}\n  trials: {}\n  sample_size: {}\n  image_size: {}\n"
      "node:\n  cores: {}{}\n",
      info.trials, info.date, Quoted(info.host), info.trials, info.sample_size, info.image_size,
      node.cores, note("cores"));
  for (const NodeRate& r : kNodeRates) {
    const double v = node.*(r.field);
    out += fmt::format("  {}: {}{}\n", r.key, IsFactor(r) ? fmt::format("{:.4f}", v) : RateText(v),
                       note(r.key));
  }
  out += fmt::format("  memory: {}{}\n", node.memory, note("memory"));
  out += "spread:  # (max - min) / median over the trials\n";
  for (const auto& [key, v] : info.spread) out += fmt::format("  {}: {:.4f}\n", key, v);
  return out;
}

void ReadStorageProfile(Section& s, const YAML::Node& at, StorageOptions& st) {
  if (!at.IsScalar()) {
    s.ctx().Fail(at, s.Path("profile"), "expected a file name, got " + config::Show(at));
  }
  const std::string written = at.Scalar();
  std::string path;
  const YAML::Node root = LoadProfile(
      s, at, written, "storage profile",
      fmt::format("`stallscope calibrate --dir DIR -o {}` measures a directory and writes one",
                  written),
      &path);
  const Context ctx{path, nullptr};
  Section top(ctx, root, "");
  Section meta =
      ProfileSection(ctx, root, top, "profile", "a storage profile (profile:, storage:)");
  const std::string date = meta.String("date", "undated");
  meta.String("host", "");
  const std::string dir = meta.String("path", "");
  const bool cold = meta.Bool("cold", false), direct = meta.Bool("direct_io", false);
  const uint32_t depth = meta.Integer<uint32_t>("io_depth", 0, 0);
  const uint32_t threads = meta.Integer<uint32_t>("io_threads", 0, 0);
  // Profiles written before 2026-12-07 do not say (their reads had the kernel's slice).
  const double slice = meta.node()["io_slice"].IsDefined() ? meta.Duration("io_slice", 0) : -1;
  meta.Integer<uint64_t>("files", 0, 0);
  meta.Integer<uint64_t>("probe_files", 0, 0);
  meta.Size("bytes", 0, false);
  meta.Finish();
  Section m = ProfileSection(ctx, root, top, "storage", "a storage profile (profile:, storage:)");
  for (const char* key : {"bandwidth", "latency"}) {
    if (!m.node()[key].IsDefined()) {
      ctx.Fail(m.node(), m.Path(key), "missing: a storage profile names bandwidth and latency");
    }
  }
  SimulatedStorageOptions& x = st.model;
  x.bandwidth_bytes_per_second = m.Rate("bandwidth", 0);
  Section l(ctx, m.Get("latency"), "storage.latency");
  x.latency_p50_seconds = l.Duration("p50", 0, true);
  x.latency_p99_seconds = l.Duration("p99", x.latency_p50_seconds);
  l.Finish();
  if (x.latency_p99_seconds < x.latency_p50_seconds) {
    ctx.Fail(m.node()["latency"], "storage.latency.p99", "must not be below latency.p50");
  }
  x.iops = m.Number("iops", 0, 0, 1e12);
  x.evict_seconds = m.Duration("evict", 0);
  x.cpu_per_read_seconds = m.Duration("cpu_per_read", 0);
  x.host_per_read_seconds = m.Duration("host_per_read", 0);
  x.read_wait_busy_seconds = m.Duration("read_wait_busy", 0);
  x.read_wait_partial_seconds = m.Duration("read_wait_partial", 0);
  if (x.evict_seconds > 0 && !cold) {
    ctx.Fail(m.node()["evict"], "storage.evict", "only a cold profile (profile.cold: true) evicts");
  }
  m.Finish();
  top.Finish();
  st.profile_cold = cold;
  st.profile_direct = direct;
  st.profile_io_slice = slice;
  st.profile_io_depth = depth;
  st.model_source =
      fmt::format("profile {}, {} ({}{}, io_depth {}, {} I/O thread(s), on {})", written, date,
                  cold ? "cold" : "page-cached", direct ? ", O_DIRECT" : "", depth, threads, dir);
}

std::string StorageProfileYaml(const SimulatedStorageOptions& m, const StorageProfileInfo& i) {
  return fmt::format(
      "# A storage profile: `stallscope calibrate --dir` read {} and fitted the simulator's\n"
      "# storage model to it: latency from {} reads of {} files, one at a time (their p50 and "
      "p99,\n"
      "# the p99 at most 4 x the p50), bandwidth from every file read {} in flight, iops (reads\n"
      "# per second whatever their size) from every file's first 4 KiB read as deep. Name it\n"
      "# in a directory scenario (storage: {{profile: FILE}}) read the same way (cold,\n"
      "# direct_io) at this io_depth or below; storage keys override single values. A cold\n"
      "# profile's evict is how long dropping the directory from the page cache took (before\n"
      "# each epoch). cpu_per_read is the CPU time each of the probe's reads took, which the\n"
      "# simulator shares with the node's other busy threads; host_per_read is what each read\n"
      "# cost the other cores beside it (the work lost by a thread on every core busy in 1 ms\n"
      "# bursts, as a loader's workers are, per read, less cpu_per_read), which the simulator\n"
      "# runs on the node's cores; read_wait_busy is how much longer a read took beside those\n"
      "# busy threads, read_wait_partial beside them on every core but one.\n"
      "profile:\n  date: {}\n  host: {}\n  path: {}\n  cold: {}\n  direct_io: {}\n"
      "  io_depth: {}\n  io_threads: {}\n  io_slice: {:.0f}us\n  files: {}\n  probe_files: {}\n  "
      "bytes: {}\n"
      "storage:\n  bandwidth: {}\n  latency: {{p50: {:.3f}us, p99: {:.3f}us}}\n  iops: {:.0f}\n"
      "  cpu_per_read: {:.3f}us\n  host_per_read: {:.3f}us\n  read_wait_busy: {:.3f}us\n  "
      "read_wait_partial: {:.3f}us\n{}",
      i.path, i.probe_reads, i.probe_files, i.io_depth, i.date, Quoted(i.host), Quoted(i.path),
      i.cold, i.direct_io, i.io_depth, i.io_threads, i.io_slice * 1e6, i.files, i.probe_files,
      i.bytes, RateText(m.bandwidth_bytes_per_second), m.latency_p50_seconds * 1e6,
      m.latency_p99_seconds * 1e6, m.iops, m.cpu_per_read_seconds * 1e6,
      m.host_per_read_seconds * 1e6, m.read_wait_busy_seconds * 1e6,
      m.read_wait_partial_seconds * 1e6,
      i.cold ? fmt::format("  evict: {:.3f}us\n", m.evict_seconds * 1e6) : std::string());
}

}  // namespace stallscope
