#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/units.h"

namespace stallscope {

// JSON of the analysis' structs, by field name (found by argument-dependent lookup, so in the
// structs' own namespace). A rank's entry of the `ranks` array is read back by rank 0, so
// both directions come from this one list.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StageSeconds, fetch, preprocess, transfer, sync, checkpoint,
                                   other)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RankResult, rank, node, gpu_idle_fraction, au, window_seconds,
                                   samples_per_second, bytes_per_second, stall_seconds,
                                   cache_hit_ratio, samples_delivered, samples_verified,
                                   integrity_errors, samples_skipped, read_errors, bottleneck_stage,
                                   bottleneck_text, allreduce_seconds, restored_step)

namespace {

nlohmann::json Capacity(const std::optional<double>& c) {
  return c ? nlohmann::json(*c) : nlohmann::json(nullptr);
}

}  // namespace

// The real GPU's measurements: busy time two ways, the H2D copies, the model and its loss.
static nlohmann::json GpuToJson(const VariantResult& v) {
  const DeviceReport& g = v.gpu;
  nlohmann::json model = nlohmann::json::object();
  for (const auto& [key, value] : g.facts) model[key] = value;
  nlohmann::json curve = nlohmann::json::array();
  const size_t stride = std::max<size_t>(1, g.loss.size() / 200);
  for (size_t k = 0; k < g.loss.size(); k += stride) curve.push_back({k, g.loss[k]});
  return {
      {"busy_source", g.busy_source},
      {"busy_fraction", 1 - v.gpu_idle_fraction},
      {"event_busy_fraction", v.event_busy_fraction},
      {"h2d",
       {{"bytes", g.h2d_bytes},
        {"seconds", g.h2d_seconds},
        {"bytes_per_second", g.h2d_seconds > 0 ? g.h2d_bytes / g.h2d_seconds : 0.0},
        {"overlap_fraction", g.h2d_seconds > 0 ? g.h2d_overlap_seconds / g.h2d_seconds : 0.0}}},
      {"allreduce",
       {{"bytes", g.allreduce_bytes},
        {"seconds", g.allreduce_seconds},
        {"bytes_per_second",
         g.allreduce_seconds > 0 ? g.allreduce_bytes / g.allreduce_seconds : 0.0}}},
      {"model", model},
      {"loss",
       {{"first", v.loss_first},
        {"last", v.loss_last},
        {"steps", g.loss.size()},
        {"curve", curve}}},
      {"notes", g.notes},
  };
}

nlohmann::json RankToJson(const RankResult& r) { return r; }

RankResult RankFromJson(const nlohmann::json& j) { return j.get<RankResult>(); }

nlohmann::json VariantToJson(const VariantResult& v) {
  nlohmann::json bytes = {{"storage", v.bytes_storage}};
  for (const auto& [tier, n] : v.bytes_by_tier) bytes[tier] = n;
  nlohmann::json cache = nlohmann::json::object();
  for (const TierResult& t : v.cache) {
    cache[t.name] = {{"policy", t.policy},       {"hits", t.hits},   {"misses", t.misses},
                     {"hit_ratio", t.hit_ratio}, {"bytes", t.bytes}, {"evictions", t.evictions}};
    // A disk tier's admissions dropped while every write buffer waited on the disk.
    // and the entries it found on disk at start (a warm start).
    if (t.name.starts_with("disk")) {
      cache[t.name]["write_drops"] = t.write_drops;
      cache[t.name]["entries_at_start"] = t.entries_at_start;
    }
  }
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochResult& e : v.epochs) {
    nlohmann::json tiers = nlohmann::json::object();
    for (size_t t = 0; t < e.tiers.size() && t < v.cache.size(); ++t) {
      const TierEpoch& te = e.tiers[t];
      tiers[v.cache[t].name] = {{"hits", te.hits},
                                {"misses", te.lookups - te.hits},
                                {"hit_ratio", te.hit_ratio},
                                {"bytes", te.bytes},
                                {"evictions", te.evictions}};
    }
    epochs.push_back({{"epoch", e.epoch},
                      {"cache", tiers},
                      {"gpu_idle_fraction", e.gpu_idle_fraction},
                      {"cache_hit_ratio", e.cache_hit_ratio},
                      {"samples_per_second", e.samples_per_second},
                      {"window_seconds", e.window_seconds},
                      {"stall_seconds", e.stall}});
  }
  nlohmann::json timeline = nlohmann::json::array();
  for (const TimelinePoint& p : v.timeline) {
    timeline.push_back({{"t", p.t},
                        {"utilization", p.utilization},
                        {"queue_ready", p.queue_ready},
                        {"queue_preprocessing", p.queue_preprocessing},
                        {"queue_fetching", p.queue_fetching}});
  }
  nlohmann::json out = {
      {"timeline", timeline},
      {"name", v.name},
      {"device", v.device},
      {"gpu_idle_fraction", v.gpu_idle_fraction},
      {"au", v.au},
      {"window_seconds", v.window_seconds},
      {"wall_seconds", v.wall_seconds},
      {"busy_seconds", v.busy_seconds},
      {"steps", v.steps},
      {"samples_per_second", v.samples_per_second},
      {"bytes_per_second", v.bytes_per_second},
      {"bytes_read", bytes},
      {"stall_seconds", v.stall},
      {"bottleneck",
       {{"stage", v.bottleneck_stage},
        {"text", v.bottleneck_text},
        {"capacity_samples_per_second",
         {{"fetch", Capacity(v.capacity_fetch)},
          {"preprocess", Capacity(v.capacity_preprocess)},
          {"transfer", Capacity(v.capacity_transfer)},
          {"gpu",
           v.capacity_gpu > 0 ? nlohmann::json(v.capacity_gpu) : nlohmann::json(nullptr)}}}}},
      {"fetch_batches_in_flight", v.fetch_batches_in_flight},
      {"cache", cache},
      {"cache_hit_ratio", v.cache_hit_ratio},
      {"samples_delivered", v.samples_delivered},
      {"samples_verified", v.samples_verified},
      {"integrity_errors", v.integrity_errors},
      {"samples_skipped", v.samples_skipped},
      {"skipped_samples", v.skipped_samples},
      {"dataset_entries_skipped",
       {{"count", v.entries_skipped}, {"first", v.entries_skipped_first}}},
      {"read_errors", v.read_errors},
      {"step_wait_seconds", {{"p50", v.step_wait_p50}, {"p99", v.step_wait_p99}}},
      {"epochs", epochs},
  };
  out["gpus"] = v.gpus;
  if (v.gpu_hour_cost) {
    const IdleCost c = IdleCostOf(v);
    out["cost"] = {{"gpu_hour", *v.gpu_hour_cost},
                   {"idle_per_1000_gpu_hours", c.per_1000_gpu_hours},
                   {"idle_per_day", c.per_day},
                   {"gpus", v.gpus}};
  }
  if (!v.gpu.busy_source.empty()) out["gpu"] = GpuToJson(v);
  if (v.checkpoints) {
    const CheckpointResult& c = *v.checkpoints;
    out["checkpoints"] = {{"count", c.count},
                          {"bytes", c.bytes},
                          {"seconds", c.seconds},
                          {"bytes_per_second", c.bytes_per_second},
                          {"mode", c.mode},
                          {"target", c.target},
                          {"device_wait_seconds", c.device_wait_seconds},
                          {"waited_for_previous", c.waited_for_previous},
                          {"failed", c.failed},
                          {"fetch_stall_during_writes_seconds", c.fetch_stall_during_writes}};
    if (!c.error.empty()) out["checkpoints"]["error"] = c.error;
    if (c.restore.done) {
      out["checkpoints"]["restore"] = {
          {"step", c.restore.step}, {"bytes", c.restore.bytes}, {"seconds", c.restore.seconds}};
    }
  }
  if (v.partial) out["partial"] = true;
  if (v.time_limit_reached) out["stopped_by"] = "run.time_limit";
  if (!v.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankResult& r : v.ranks) ranks.push_back(RankToJson(r));
    out["ranks"] = ranks;
  }
  return out;
}

nlohmann::json ResultDocument(const std::string& scenario, const std::string& mode,
                              const std::vector<VariantResult>& variants) {
  nlohmann::json doc = {{"scenario", scenario},
                        {"mode", mode},
                        {"device", variants.empty() ? "" : variants.front().device},
                        {"variants", nlohmann::json::array()}};
  for (const VariantResult& v : variants) doc["variants"].push_back(VariantToJson(v));
  // What each variant saves per day against the first, at its cluster size.
  if (!variants.empty() && variants.front().gpu_hour_cost) {
    const double first = IdleCostOf(variants.front()).per_day;
    for (size_t i = 0; i < variants.size(); ++i) {
      auto& v = doc["variants"][i];
      if (v.contains("cost"))
        v["cost"]["saves_per_day_vs_first"] = first - IdleCostOf(variants[i]).per_day;
    }
  }
  if (std::any_of(variants.begin(), variants.end(),
                  [](const VariantResult& v) { return v.partial; })) {
    doc["partial"] = true;  // interrupted: what was measured before the stop
  }
  return doc;
}

namespace {

// A table with one column per variant, built a row at a time.
class VariantTable {
 public:
  explicit VariantTable(const std::vector<VariantResult>& variants) : variants_(variants) {}

  // A row labelled `label`, its cells `cell(variant)`.
  template <typename Cell>
  void Add(std::string label, Cell cell) {
    Row r{std::move(label), {}};
    for (const VariantResult& v : variants_) r.cells.push_back(cell(v));
    rows_.push_back(std::move(r));
  }

  // The labels left-aligned, each column right-aligned to its widest cell.
  std::string Text() const {
    size_t label_w = 0;
    std::vector<size_t> col_w(variants_.size(), 0);
    for (const Row& r : rows_) {
      label_w = std::max(label_w, r.label.size());
      for (size_t i = 0; i < r.cells.size(); ++i) {
        col_w[i] = std::max(col_w[i], r.cells[i].size());
      }
    }
    std::string out;
    for (const Row& r : rows_) {
      out += fmt::format("{:<{}}", r.label, label_w + 2);
      for (size_t i = 0; i < r.cells.size(); ++i) {
        out += fmt::format("  {:>{}}", r.cells[i], col_w[i]);
      }
      out += "\n";
    }
    return out;
  }

 private:
  struct Row {
    std::string label;
    std::vector<std::string> cells;
  };
  const std::vector<VariantResult>& variants_;
  std::vector<Row> rows_;
};

std::string Percent(double x) { return fmt::format("{:.1f}%", x * 100); }

// One row per cache tier name, in the order first seen: hit ratio and evictions.
void AddTierRows(VariantTable& table, const std::vector<VariantResult>& vs) {
  std::vector<std::string> tier_names;
  for (const VariantResult& v : vs) {
    for (const TierResult& t : v.cache) {
      if (std::find(tier_names.begin(), tier_names.end(), t.name) == tier_names.end()) {
        tier_names.push_back(t.name);
      }
    }
  }
  for (const std::string& name : tier_names) {
    table.Add("  " + name + " hit / evictions", [&](const VariantResult& v) {
      for (const TierResult& t : v.cache) {
        if (t.name == name) return fmt::format("{} / {}", Percent(t.hit_ratio), t.evictions);
      }
      return std::string("-");
    });
    // A disk tier drops an admission when every write buffer waits on the disk (it never
    // holds up the pipeline): shown where any variant dropped one.
    const auto dropped = [&](const VariantResult& v) {
      for (const TierResult& t : v.cache) {
        if (t.name == name) return t.write_drops;
      }
      return uint64_t{0};
    };
    if (std::any_of(vs.begin(), vs.end(), [&](const VariantResult& v) { return dropped(v) > 0; })) {
      table.Add("  " + name + " admissions dropped",
                [dropped](const VariantResult& v) { return fmt::format("{}", dropped(v)); });
    }
  }
}

// Multi-rank runs: one row per rank, its idle, sync wait and own bottleneck stage.
void AddRankRows(VariantTable& table, const std::vector<VariantResult>& vs) {
  size_t ranks = 0;
  for (const VariantResult& v : vs) ranks = std::max(ranks, v.ranks.size());
  for (size_t k = 0; k < ranks; ++k) {
    table.Add(fmt::format("rank {} idle / sync / stage", k), [k](const VariantResult& v) {
      if (k >= v.ranks.size()) return std::string("-");
      const RankResult& r = v.ranks[k];
      return fmt::format("{} / {:.2f} s / {}", Percent(r.gpu_idle_fraction), r.stall_seconds.sync,
                         r.bottleneck_stage);
    });
  }
  const bool reduced = std::any_of(vs.begin(), vs.end(), [](const VariantResult& v) {
    return std::any_of(v.ranks.begin(), v.ranks.end(),
                       [](const RankResult& r) { return r.allreduce_seconds > 0; });
  });
  for (size_t k = 0; reduced && k < ranks; ++k) {
    table.Add(fmt::format("rank {} all-reduce (s)", k), [k](const VariantResult& v) {
      return k < v.ranks.size() ? fmt::format("{:.3f}", v.ranks[k].allreduce_seconds)
                                : std::string("-");
    });
  }
}

// With cost.gpu_hour on the first variant: idle time in dollars, and what each saves.
void AddCostRows(VariantTable& table, const std::vector<VariantResult>& vs) {
  if (vs.empty() || !vs.front().gpu_hour_cost) return;
  auto usd = [](double x) { return fmt::format("${:.2f}", x); };
  table.Add("idle $ per 1000 GPU-h", [&](const VariantResult& v) {
    return v.gpu_hour_cost ? usd(IdleCostOf(v).per_1000_gpu_hours) : std::string("-");
  });
  table.Add("idle $ per day", [&](const VariantResult& v) {
    return v.gpu_hour_cost ? usd(IdleCostOf(v).per_day) : std::string("-");
  });
  const double first = IdleCostOf(vs.front()).per_day;
  table.Add("saves $ per day vs first", [&](const VariantResult& v) {
    return v.gpu_hour_cost ? usd(first - IdleCostOf(v).per_day) : std::string("-");
  });
}

// When any variant ran on a real GPU: its own measurements ("-" for the others).
void AddGpuRows(VariantTable& table, const std::vector<VariantResult>& vs) {
  const bool any_gpu = std::any_of(
      vs.begin(), vs.end(), [](const VariantResult& v) { return !v.gpu.busy_source.empty(); });
  if (!any_gpu) return;
  auto gpu = [&](std::string label, auto cell) {
    table.Add(std::move(label), [cell](const VariantResult& v) {
      return v.gpu.busy_source.empty() ? std::string("-") : cell(v);
    });
  };
  gpu("GPU busy CUPTI / events", [&](const VariantResult& v) {
    return fmt::format("{} / {}", Percent(1 - v.gpu_idle_fraction), Percent(v.event_busy_fraction));
  });
  gpu("H2D GB/s, overlapped", [&](const VariantResult& v) {
    const double s = v.gpu.h2d_seconds;
    return fmt::format("{:.1f}, {}", s > 0 ? v.gpu.h2d_bytes / s / 1e9 : 0.0,
                       Percent(s > 0 ? v.gpu.h2d_overlap_seconds / s : 0.0));
  });
  if (std::any_of(vs.begin(), vs.end(),
                  [](const VariantResult& v) { return v.gpu.allreduce_bytes > 0; })) {
    gpu("all-reduce s, GB/s (rank 0)", [](const VariantResult& v) {
      const double s = v.gpu.allreduce_seconds;
      return fmt::format("{:.3f}, {:.1f}", s, s > 0 ? v.gpu.allreduce_bytes / s / 1e9 : 0.0);
    });
  }
  gpu("loss first / last", [](const VariantResult& v) {
    return fmt::format("{:.3f} / {:.3f}", v.loss_first, v.loss_last);
  });
  gpu("model width, step", [](const VariantResult& v) {
    double width = 0, step = 0;
    for (const auto& [k, x] : v.gpu.facts) {
      if (k == "hidden_width") width = x;
      if (k == "calibrated_step_seconds" || k == "measured_step_seconds") step = x;
    }
    return fmt::format("{:.0f}, {}", width, FormatDuration(step));
  });
}

}  // namespace

std::string FormatTable(const std::vector<VariantResult>& vs) {
  VariantTable table(vs);
  auto secs = [](double x) { return fmt::format("{:.2f}", x); };
  table.Add("", [](const VariantResult& v) { return v.name; });
  table.Add("GPU idle", [&](const VariantResult& v) { return Percent(v.gpu_idle_fraction); });
  table.Add("AU", [&](const VariantResult& v) { return Percent(v.au); });
  table.Add("samples/s",
            [](const VariantResult& v) { return fmt::format("{:.0f}", v.samples_per_second); });
  table.Add("read MB/s",
            [](const VariantResult& v) { return fmt::format("{:.1f}", v.bytes_per_second / 1e6); });
  table.Add("stall fetch (s)", [&](const VariantResult& v) { return secs(v.stall.fetch); });
  table.Add("stall preprocess (s)",
            [&](const VariantResult& v) { return secs(v.stall.preprocess); });
  table.Add("stall transfer (s)", [&](const VariantResult& v) { return secs(v.stall.transfer); });
  if (std::any_of(vs.begin(), vs.end(),
                  [](const VariantResult& v) { return v.ranks.size() > 1 || v.gpus > 1; })) {
    table.Add("stall sync (s)", [&](const VariantResult& v) { return secs(v.stall.sync); });
  }
  const bool checkpoints = std::any_of(vs.begin(), vs.end(), [](const VariantResult& v) {
    return v.checkpoints.has_value() || v.stall.checkpoint > 0;
  });
  if (checkpoints) {
    table.Add("stall checkpoint (s)",
              [&](const VariantResult& v) { return secs(v.stall.checkpoint); });
  }
  table.Add("stall other (s)", [&](const VariantResult& v) { return secs(v.stall.other); });
  table.Add("window (s)", [&](const VariantResult& v) { return secs(v.window_seconds); });
  table.Add("cache hit", [&](const VariantResult& v) {
    return v.cache.empty() ? std::string("-") : Percent(v.cache_hit_ratio);
  });
  AddTierRows(table, vs);
  table.Add("step wait p50 / p99", [](const VariantResult& v) {
    return FormatDuration(v.step_wait_p50) + " / " + FormatDuration(v.step_wait_p99);
  });
  table.Add("epoch idle", [](const VariantResult& v) {
    std::string s;
    for (const EpochResult& e : v.epochs) {
      s += (s.empty() ? "" : " ") + fmt::format("{:.0f}%", e.gpu_idle_fraction * 100);
    }
    return s;
  });
  table.Add("verified / bad", [](const VariantResult& v) {
    return fmt::format("{} / {}", v.samples_verified, v.integrity_errors);
  });
  table.Add("bottleneck", [](const VariantResult& v) { return v.bottleneck_stage; });
  if (std::any_of(vs.begin(), vs.end(), [](const VariantResult& v) { return v.gpus > 1; })) {
    table.Add("GPUs", [](const VariantResult& v) { return fmt::format("{}", v.gpus); });
  }
  if (checkpoints) {
    table.Add("checkpoints, MB/s", [](const VariantResult& v) {
      if (!v.checkpoints) return std::string("-");
      const CheckpointResult& c = *v.checkpoints;
      return fmt::format("{} {} x {}, {:.1f}", c.count, c.mode,
                         FormatBinaryBytes(c.count ? static_cast<double>(c.bytes) / c.count : 0),
                         c.bytes_per_second / 1e6);
    });
  }
  AddCostRows(table, vs);
  AddGpuRows(table, vs);
  AddRankRows(table, vs);

  std::string out = table.Text() + "\n";
  for (const VariantResult& v : vs) {
    out += fmt::format("{}: {}{}\n", v.name,
                       v.time_limit_reached ? "(run.time_limit reached, partial) "
                       : v.partial          ? "(interrupted, partial) "
                                            : "",
                       v.bottleneck_text);
  }
  return out;
}

}  // namespace stallscope
