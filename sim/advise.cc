#include "sim/advise.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <set>
#include <thread>

#include "base/cores.h"
#include "base/errors.h"
#include "base/start_thread.h"
#include "base/units.h"
#include "sim/advise_knobs.h"
#include "sim/rank_loop.h"

namespace stallscope {
namespace {

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
  AdviseResult RunCheapestFirst();
  // Every point of the space, the scenario as it is first.
  std::vector<Point> AllPoints() const;

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
  const size_t threads = std::min<size_t>(jobs.size(), o_.threads ? o_.threads : UsableCores());
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

std::vector<Search::Point> Search::AllPoints() const {
  const size_t K = knobs_.size();
  std::vector<Point> all;
  for (Point p(K, -1);;) {
    all.push_back(p);
    size_t k = 0;
    while (k < K && ++p[k] == static_cast<int>(knobs_[k].rungs.size())) p[k++] = -1;
    if (k == K) return all;
  }
}

AdviseResult Search::RunAll() {
  const std::vector<Point> all = AllPoints();
  for (size_t at = 0; at < all.size(); at += 64) {  // simulated side by side, 64 at a time
    EvalMany({all.begin() + at, all.begin() + std::min(all.size(), at + 64)}, true);
  }
  Finish();
  return result_;
}

AdviseResult Search::RunCheapestFirst() {
  // Every point with its cost, known before it is simulated.
  std::vector<std::pair<AdvisePoint, Point>> all;
  for (const Point& p : AllPoints()) all.emplace_back(Unsimulated(p), p);
  const auto cost = [](const AdvisePoint& a) { return a.priced ? a.cost_per_day : 0.0; };
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    return std::pair(cost(a.first), a.first.size) < std::pair(cost(b.first), b.first.size);
  });
  // One cost at a time (CheaperPoint's ties: cost within 1e-9, then size), side by side; stop
  // after the first cost at which a changed point reaches the target.
  for (size_t at = 0; at < all.size();) {
    size_t end = at + 1;
    while (end < all.size() && all[end].first.size == all[at].first.size &&
           std::abs(cost(all[end].first) - cost(all[at].first)) <= 1e-9) {
      ++end;
    }
    std::vector<Point> level;
    for (size_t n = at; n < end; ++n) level.push_back(all[n].second);
    bool reached = false;
    const std::vector<int> got = EvalMany(level, true);
    for (size_t n = 0; n < level.size(); ++n) {
      reached |= got[n] >= 0 && all[at].first.size > 0 && result_.points[got[n]].reaches;
    }
    if (reached) break;
    at = end;
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

std::string WhyNotRunnableHere(const Scenario& base, const AdvisePoint& p, unsigned usable_cores) {
  std::string why;
  const auto add = [&](const std::string& reason) { why += (why.empty() ? "" : "; ") + reason; };
  for (const AdviseChange& c : p.changes) {
    if (c.key == "cluster.node.cores" && std::stoul(c.value) > usable_cores) {
      add(fmt::format("it needs {} cores and a run here gets {}", c.value, usable_cores));
    } else if (c.key == "storage.bandwidth" && base.storage.kind == StorageKind::kDirectory) {
      add("it needs a faster disk than the directory's");
    } else if (c.key == "cluster.node.nic") {
      add("it needs a faster NIC, and a run here is one rank");
    }
  }
  return why;
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

AdviseResult AdviseGridCheapestFirst(const ScenarioFile& file, const AdviseOptions& options,
                                     Simulator& sim) {
  Search search(file, options, sim);
  return search.RunCheapestFirst();
}

}  // namespace stallscope
