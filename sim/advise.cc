#include "sim/advise.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <set>
#include <thread>

#include "base/errors.h"
#include "base/start_thread.h"
#include "base/units.h"
#include "sim/rank_loop.h"

namespace stallscope {
namespace {

constexpr double kGiB = 1073741824.0;

// A knob: its name and its ladder of rungs (each a change from the scenario).
struct Knob {
  std::string name;
  std::vector<AdviseChange> rungs;
};

std::string TierYaml(const TierOptions& t) {
  std::string y = fmt::format("{{kind: {}, policy: {}", NameOf(t.kind), NameOf(t.policy));
  if (t.kind != TierKind::kDistributed) y += fmt::format(", capacity: {}", t.capacity);
  if (!t.path.empty()) y += fmt::format(", path: \"{}\"", t.path);
  if (t.clear) y += ", clear: true";
  if (t.overcommit) y += ", overcommit: true";
  if (t.kind == TierKind::kDisk) {
    y += fmt::format(", bandwidth: {:.0f}B/s, latency: {:.9f}s", t.read_bandwidth, t.read_latency);
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
      Rung(k, "storage.bandwidth", fmt::format("{:.0f}B/s", bw * f),
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
    Rung(k, "cluster.node.nic", fmt::format("{:.0f}B/s", s.cluster.node.nic * 2),
         fmt::format("cluster.node.nic {} → {}", FormatRate(s.cluster.node.nic),
                     FormatRate(s.cluster.node.nic * 2)));
    knobs.push_back(k);
  }
}

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
      k.rungs.back().sets.emplace_back("cluster.network_bandwidth",
                                       fmt::format("{:.0f}B/s", s.cluster.node.nic));
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
        Rung(k, fmt::format("cache.tiers.{}.capacity", mem), std::to_string(cap), text, c);
      } else if (s.cache_tiers.empty()) {
        Rung(k, "cache.tiers",
             fmt::format("[{{kind: memory, capacity: {}, policy: fill-once}}]", cap), text, c);
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

// The search's state: the space, and every point simulated so far.
class Search {
 public:
  Search(const ScenarioFile& file, const AdviseOptions& o, Simulator& sim)
      : file_(file), o_(o), sim_(sim) {
    base_ = file.Resolve(o.variant, o.sets);
    uint64_t bytes = 0;
    for (uint64_t b : LoadDataset(base_).sizes) bytes += b;
    for (Knob& k : KnobsOf(base_, bytes)) {
      if (o.knobs.empty() || std::count(o.knobs.begin(), o.knobs.end(), k.name)) {
        knobs_.push_back(std::move(k));
      }
    }
    result_.space = 1;
    for (const Knob& k : knobs_) {
      result_.space *= k.rungs.size() + 1;
      result_.knobs.push_back(k.name);
    }
    budget_ = o.max_simulations ? o.max_simulations : std::max<uint64_t>(20, result_.space / 10);
  }

  using Point = std::vector<int>;  // per knob: its rung, -1 = unchanged

  // The point's index in result_.points (simulating it the first time); -1 past the budget
  // or where the scenario cannot be simulated (a RAM tier larger than the node's memory).
  int Eval(const Point& p, bool unbudgeted = false) { return EvalMany({p}, unbudgeted)[0]; }

  // Eval of each point, the new ones simulated side by side on up to one thread per core
  // (each with a simulator of its own: every point starts from empty disk tiers, as the
  // scenario as it is does, so no answer depends on the order of the search). Points enter
  // result_.points, and the budget, in the order given.
  std::vector<int> EvalMany(const std::vector<Point>& ps, bool unbudgeted = false);

  double Idle(int i) const { return i < 0 ? 2.0 : result_.points[i].idle; }

  AdviseResult Run();
  AdviseResult RunAll();

 private:
  void Price(AdvisePoint& p) const {
    const auto& pr = base_.prices;
    p.reaches = p.idle <= o_.target_idle + 1e-12;
    p.priced = pr.any();
    for (const AdviseChange& c : p.changes) {
      p.size += 1 + c.rung;
      p.cost_per_day +=
          c.ram_gib * pr.ram_gib_day.value_or(0) + c.disk_gib * pr.disk_gib_day.value_or(0) +
          c.storage_gbps * pr.storage_gbps_day.value_or(0) + c.cores * pr.core_day.value_or(0);
    }
  }
  void Finish();
  void Shrink(Point p);
  void Swap(const std::vector<int>& best_rung, const std::vector<double>& best);
  // The point's changes and what they cost, not simulated.
  AdvisePoint Unsimulated(const Point& p) const {
    AdvisePoint a;
    SetsOf(p, a.changes);
    Price(a);
    return a;
  }
  std::vector<Override> SetsOf(const Point& p, std::vector<AdviseChange>& changes) const {
    std::vector<Override> sets = o_.sets;
    for (size_t k = 0; k < knobs_.size(); ++k) {
      if (p[k] < 0) continue;
      changes.push_back(knobs_[k].rungs[p[k]]);
      for (const auto& [key, value] : knobs_[k].rungs[p[k]].sets) {
        sets.push_back(ParseSetArgument(key + "=" + value));
      }
    }
    return sets;
  }

  const ScenarioFile& file_;
  const AdviseOptions& o_;
  Simulator& sim_;
  Scenario base_;
  std::vector<Knob> knobs_;
  std::map<Point, int> seen_;
  AdviseResult result_;
  uint64_t budget_ = 0;
};

std::vector<int> Search::EvalMany(const std::vector<Point>& ps, bool unbudgeted) {
  std::vector<int> out(ps.size(), -1);
  struct Job {
    size_t at;  // index into ps
    Scenario scenario;
    AdvisePoint point;
    bool bad = false;
    std::exception_ptr error;
  };
  std::vector<Job> jobs;
  std::set<Point> queued;  // a point given twice is simulated once
  for (size_t n = 0; n < ps.size(); ++n) {
    if (seen_.count(ps[n]) || queued.count(ps[n])) continue;
    if (!unbudgeted && result_.simulations >= budget_) continue;
    ++result_.simulations;
    Job j;
    j.at = n;
    try {
      j.scenario = file_.Resolve(o_.variant, SetsOf(ps[n], j.point.changes));
    } catch (const BadInput&) {
      j.bad = true;
    }
    queued.insert(ps[n]);
    jobs.push_back(std::move(j));
  }
  const auto simulate = [](Job& j, Simulator& sim) {
    if (j.bad) return;
    try {
      const VariantResult v = sim.RunVariant(j.scenario);
      j.point.idle = v.gpu_idle_fraction;
      j.point.au = v.au;
      j.point.bottleneck = v.bottleneck_stage;
      j.point.verdict = v.bottleneck_text;
      for (const TierResult& t : v.cache) j.point.disk_entries_at_start += t.entries_at_start;
    } catch (const BadInput&) {
      j.bad = true;
    } catch (...) {
      j.error = std::current_exception();
    }
  };
  const size_t threads = std::min<size_t>(
      jobs.size(), o_.threads ? o_.threads : std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    for (Job& j : jobs) {
      sim_.ForgetDisks();
      simulate(j, sim_);
    }
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) {
      pool.push_back(StartThread("an advise simulation thread", [&] {
        Simulator sim;
        for (size_t n; (n = next++) < jobs.size();) {
          sim.ForgetDisks();
          simulate(jobs[n], sim);
        }
      }));
    }
    for (std::thread& t : pool) t.join();
  }
  for (Job& j : jobs) {
    if (j.error) std::rethrow_exception(j.error);
    int& index = seen_[ps[j.at]];
    if (j.bad) {
      index = -1;
    } else {
      Price(j.point);
      result_.points.push_back(std::move(j.point));
      index = static_cast<int>(result_.points.size() - 1);
    }
  }
  for (size_t n = 0; n < ps.size(); ++n) {
    if (auto it = seen_.find(ps[n]); it != seen_.end()) out[n] = it->second;
  }
  return out;
}

AdviseResult Search::Run() {
  const size_t K = knobs_.size();
  const Point none(K, -1);
  const int base = Eval(none, true);
  if (base < 0) throw BadInput("advise: the scenario itself cannot be simulated");
  const bool done = result_.points[base].reaches;
  // 1. Each knob alone, up its ladder while it gains: every climbing knob's next rung in one
  // wave.
  std::vector<int> best_rung(K, -1), next(K, done ? -1 : 0);
  std::vector<double> last(K, Idle(base)), best(K, Idle(base));
  while (true) {
    std::vector<size_t> climbing;
    std::vector<Point> wave;
    for (size_t k = 0; k < K; ++k) {
      if (next[k] < 0 || next[k] >= static_cast<int>(knobs_[k].rungs.size())) continue;
      climbing.push_back(k);
      wave.push_back(none);
      wave.back()[k] = next[k];
    }
    if (wave.empty()) break;
    const std::vector<int> got = EvalMany(wave);
    for (size_t w = 0; w < wave.size(); ++w) {
      const size_t k = climbing[w];
      const int i = got[w];
      if (i >= 0 && Idle(i) < best[k]) {
        best[k] = Idle(i);
        best_rung[k] = next[k];
      }
      if (i < 0 || result_.points[i].reaches || last[k] - Idle(i) < 0.005) {
        next[k] = -1;
      } else {
        last[k] = Idle(i);
        ++next[k];
      }
    }
  }
  // 2. Greedy: add the knob that gains most, up to three knobs.
  Point cur = none;
  int cur_i = base;
  for (size_t k = 0; k < K; ++k) {
    if (best_rung[k] >= 0) {
      Point p = none;
      p[k] = best_rung[k];
      if (Idle(Eval(p)) < Idle(cur_i)) {
        cur = p;
        cur_i = Eval(p);
      }
    }
  }
  for (int round = 0; round < 2 && !done && !result_.points[cur_i].reaches; ++round) {
    std::vector<Point> candidates;
    for (size_t k = 0; k < K; ++k) {
      if (cur[k] >= 0) continue;
      const int top = static_cast<int>(knobs_[k].rungs.size()) - 1;
      for (int r : {best_rung[k], 0, top}) {
        if (r < 0) continue;
        candidates.push_back(cur);
        candidates.back()[k] = r;
      }
    }
    const std::vector<int> got = EvalMany(candidates);
    Point pick = cur;
    int pick_i = cur_i;
    for (size_t n = 0; n < candidates.size(); ++n) {
      if (got[n] >= 0 && Idle(got[n]) < Idle(pick_i)) {
        pick = candidates[n];
        pick_i = got[n];
      }
    }
    if (pick_i == cur_i) break;
    cur = pick;
    cur_i = pick_i;
  }
  // 3. Shrink every point that reaches the target to its smallest sufficient rungs.
  std::vector<Point> reaching;
  for (const auto& [p, i] : seen_) {
    if (i >= 0 && result_.points[i].reaches && p != none) reaching.push_back(p);
  }
  for (const Point& p : reaching) Shrink(p);
  Swap(best_rung, best);
  Finish();
  return result_;
}

void Search::Shrink(Point p) {
  for (size_t k = 0; k < knobs_.size(); ++k) {
    while (p[k] >= 0) {
      Point q = p;
      q[k]--;
      const int i = Eval(q);
      if (i < 0 || !result_.points[i].reaches) break;
      p = q;
    }
  }
}

// 4. Swap: the cheapest reaching point with one knob lowered (or dropped) and the first rung of
// one of the two knobs that gained most alone added, where that costs less (a knob that
// reaches the target alone high up its ladder may be beaten by two low rungs).
void Search::Swap(const std::vector<int>& best_rung, const std::vector<double>& best) {
  const size_t K = knobs_.size();
  const Point none(K, -1);
  const Point* top = nullptr;
  for (const auto& [p, i] : seen_) {
    if (i >= 0 && result_.points[i].reaches && p != none &&
        (!top || CheaperPoint(result_.points[i], result_.points[seen_.at(*top)]))) {
      top = &p;
    }
  }
  if (!top) return;
  std::vector<size_t> gainers;
  for (size_t j = 0; j < K; ++j) {
    if (best_rung[j] >= 0 && (*top)[j] < 0) gainers.push_back(j);
  }
  std::sort(gainers.begin(), gainers.end(), [&](size_t a, size_t b) { return best[a] < best[b]; });
  gainers.resize(std::min<size_t>(gainers.size(), 2));
  const AdvisePoint now = result_.points[seen_.at(*top)];  // points grow below
  std::vector<Point> swaps;
  for (size_t k = 0; k < K; ++k) {
    for (int r = -1; r < (*top)[k]; ++r) {
      for (size_t j : gainers) {
        Point q = *top;
        q[k] = r;
        q[j] = 0;
        AdvisePoint cost = Unsimulated(q);
        cost.idle = now.idle;
        if (CheaperPoint(cost, now) && !CheaperPoint(now, cost)) swaps.push_back(q);
      }
    }
  }
  const std::vector<int> got = EvalMany(swaps);
  for (size_t n = 0; n < swaps.size(); ++n) {
    if (got[n] >= 0 && result_.points[got[n]].reaches) Shrink(swaps[n]);
  }
}

AdviseResult Search::RunAll() {
  const size_t K = knobs_.size();
  Point p(K, -1);
  std::vector<Point> chunk;  // simulated side by side, 64 points at a time
  while (true) {
    chunk.push_back(p);
    size_t k = 0;
    while (k < K && ++p[k] == static_cast<int>(knobs_[k].rungs.size())) p[k++] = -1;
    if (k == K || chunk.size() == 64) {
      EvalMany(chunk, true);
      chunk.clear();
    }
    if (k == K) break;
  }
  Finish();
  return result_;
}

void Search::Finish() {
  result_.current = result_.points.front();
  for (AdvisePoint& p : result_.points) {
    if (base_.gpu_hour_cost) {
      const double gpus = static_cast<double>(base_.cluster.nodes) * base_.cluster.gpus_per_node;
      p.saves_per_day = (result_.current.idle - p.idle) * gpus * 24 * *base_.gpu_hour_cost;
    }
  }
  for (size_t i = 1; i < result_.points.size(); ++i) {
    if (result_.points[i].reaches) result_.ranked.push_back(i);
    if (result_.points[i].idle < result_.points[result_.closest].idle) result_.closest = i;
  }
  std::sort(result_.ranked.begin(), result_.ranked.end(),
            [&](size_t a, size_t b) { return CheaperPoint(result_.points[a], result_.points[b]); });
}

}  // namespace

std::vector<Override> PointSets(const AdvisePoint& p) {
  std::vector<Override> sets;
  for (const AdviseChange& c : p.changes) {
    for (const auto& [key, value] : c.sets) sets.push_back(ParseSetArgument(key + "=" + value));
  }
  return sets;
}

std::string PointSetText(const AdvisePoint& p) {
  std::string text;
  for (const AdviseChange& c : p.changes) {
    for (const auto& [key, value] : c.sets) text += (text.empty() ? "" : " ") + key + "=" + value;
  }
  return text;
}

bool CheaperPoint(const AdvisePoint& a, const AdvisePoint& b) {
  if (a.priced && b.priced && std::abs(a.cost_per_day - b.cost_per_day) > 1e-9) {
    return a.cost_per_day < b.cost_per_day;
  }
  if (a.size != b.size) return a.size < b.size;
  return a.idle < b.idle;
}

AdviseResult Advise(const ScenarioFile& file, const AdviseOptions& options, Simulator& sim) {
  Search search(file, options, sim);
  return search.Run();
}

AdviseResult AdviseExhaustive(const ScenarioFile& file, const AdviseOptions& options,
                              Simulator& sim) {
  Search search(file, options, sim);
  return search.RunAll();
}

}  // namespace stallscope
