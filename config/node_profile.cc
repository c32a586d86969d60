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
    if (require && !(raw.IsMap() && raw[key].IsDefined())) {
      s.ctx().Fail(raw, s.Path(key),
                   "missing: a profile names every rate (`stallscope calibrate -o FILE` writes "
                   "a complete one)");
    }
  };
  need("cores");
  node.cores = s.Integer<uint32_t>("cores", node.cores, 1, 1u << 20);
  for (const NodeRate& r : kNodeRates) {
    need(r.key);
    double& v = node.*(r.field);
    if (IsFactor(r)) {
      v = s.Number(r.key, v, 1e-6, 1e6);
      continue;
    }
    v = s.Rate(r.key, v);
    if (!(v > 0)) {
      s.ctx().Fail(s.Get(r.key), s.Path(r.key),
                   "must be a positive rate (a node's rates have no 'unlimited'; write a large "
                   "one such as 1TB/s)");
    }
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

void ReadProfile(const Section& s, const YAML::Node& at, const std::string& written,
                 NodeOptions& node) {
  const std::string key = s.Path("profile");
  std::filesystem::path p(written);
  const bool from_command_line = s.ctx().OverrideFor(key, true) != nullptr;
  if (p.is_relative() && !from_command_line && !s.ctx().file.empty()) {
    p = std::filesystem::path(s.ctx().file).parent_path() / p;
  }
  std::ifstream in(p);
  if (!in) {
    s.ctx().Fail(at, key,
                 fmt::format("{}: cannot read the node profile (`stallscope calibrate -o {}` "
                             "measures this host and writes one)",
                             p.string(), written));
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
  const Context ctx{p.string(), nullptr};
  if (!root.IsMap()) ctx.Fail(root, "(top level)", "expected a node profile (profile:, node:)");
  Section top(ctx, root, "");
  const YAML::Node raw = top.Get("node");
  if (!raw.IsDefined() || !raw.IsMap()) {
    ctx.Fail(root, "node", "missing: a profile's rates are under `node:`");
  }
  Section n(ctx, raw, "node");
  ReadNodeKeys(n, raw, node, true);
  n.Finish();
  node.source = fmt::format("profile {}, {}", written, ReadProfileMeta(top));
}

std::string RateText(double v) {
  return v >= 1e9 ? fmt::format("{:.3f}GB/s", v / 1e9) : fmt::format("{:.3f}MB/s", v / 1e6);
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
  YAML::Node none(YAML::NodeType::Map);
  ReadNodeKeys(s, none, node, false);
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
      info.trials, info.date, info.host, info.trials, info.sample_size, info.image_size, node.cores,
      note("cores"));
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

}  // namespace stallscope
