// Advise: the cheapest changes to a scenario that reach a target GPU idle, found with the
// simulator (`stallscope advise`).
//
// The space: knobs of the loader (prefetch doubled up to six times, workers, io_depth for a
// directory, jpeg-decode normalized on the device), the cache (a RAM
// tier of a quarter, half or all of the dataset, or a larger one than the scenario has;
// fill-once for a tier under another policy; a distributed tier across nodes), the storage
// (bandwidth ×1.5, ×2, ×4: faster storage), checkpoints (sync → async, then every ×2, ×4),
// and the node (cores ×2, ×4; NIC ×2). Each knob is a ladder of values
// from the scenario's own; a point of the space takes one rung (or none) of every knob.
//
// The search (far fewer simulations than the space has points):
//   1. every knob's first rung alone, then up its ladder while each rung still gains ≥ 0.5 pp
//      of idle (a line search per knob);
//   2. greedy combination: from the best point so far, add the rung of another knob that
//      gains most, up to three knobs, until the target is reached;
//   3. shrink: every point that reaches the target is stepped down, knob by knob, while it
//      still does, so the smallest sufficient rung is found.
// Every simulated point is kept. Points that reach the target are ranked by money per day
// where the scenario prices what they add (cost.ram_gib_day, storage_gbps_day, core_day),
// else by size: each changed knob counts 1 + its rung index.
//
// Points that do not depend on each other (each knob's next rung in step 1, a round's
// candidates in step 2, the exhaustive grid) are simulated side by side, one thread per core,
// each point from empty disk tiers: the answer is the same on any number of cores.
//
// Thread-safety: Advise() uses the caller's thread and up to one thread per core; `sim` is
// used on the caller's thread only.
#ifndef STALLSCOPE_SIM_ADVISE_H_
#define STALLSCOPE_SIM_ADVISE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace stallscope {

// One knob's rung: a --set line, and what it adds (for prices).
struct AdviseChange {
  std::string key, value;  // --set KEY=VALUE: the rung's knob
  // Every --set of the rung, key=value first (an async checkpoint written less often sets
  // checkpoint.every and checkpoint.mode).
  std::vector<std::pair<std::string, std::string>> sets;
  std::string text;  // "loader.prefetch 4 → 16"
  int rung = 0;      // 0 = the knob's first step from the scenario's value
  double ram_gib = 0, disk_gib = 0, storage_gbps = 0, cores = 0;  // added, whole job
};

struct AdvisePoint {
  std::vector<AdviseChange> changes;  // empty: the scenario as it is
  double idle = 0, au = 0;
  std::string bottleneck, verdict;
  bool reaches = false;
  double size = 0;           // Σ (1 + rung)
  double cost_per_day = 0;   // what the changes add, USD/day (priced only)
  double saves_per_day = 0;  // idle money saved against the scenario (cost.gpu_hour)
  bool priced = false;
  uint64_t disk_entries_at_start = 0;  // kept disk tiers: entries found on this host's disk
};

struct AdviseOptions {
  std::string variant;         // resolved with the file's sets
  std::vector<Override> sets;  // --set, applied under every point
  double target_idle = 0.05;   // reach idle <= this
  // Knob names to search (prefetch, workers, io_depth, normalize_on, ram, policy,
  // distributed, bandwidth, checkpoint, cores, nic); empty = all that apply.
  std::vector<std::string> knobs;
  uint32_t max_simulations = 0;  // 0 = 10% of the space, at least 20
  uint32_t threads = 0;          // simulations side by side; 0 = one per core
};

struct AdviseResult {
  AdvisePoint current;
  std::vector<AdvisePoint> points;  // every simulated point, in the order simulated
  std::vector<size_t> ranked;       // indexes into points that reach the target, best first
  size_t closest = 0;               // when none reaches: the point with the least idle
  uint64_t simulations = 0;
  uint64_t space = 0;              // points in the whole space (product of (rungs + 1))
  std::vector<std::string> knobs;  // the knobs searched
};

AdviseResult Advise(const ScenarioFile& file, const AdviseOptions& options, Simulator& sim);

// Every point of the same space, simulated (for tests: what Advise must come close to).
AdviseResult AdviseExhaustive(const ScenarioFile& file, const AdviseOptions& options,
                              Simulator& sim);

// The same grid's best point (ranked.front()) without simulating all of it: points are
// simulated cheapest first (cost per day where priced, then size; both known before a point is
// simulated), one cost at a time, until a cost at which a changed point reaches the target.
// No point left out can rank ahead of that one. `ranked` holds the simulated points that reach;
// `closest` is the grid's only when nothing reaches (then every point is simulated).
AdviseResult AdviseGridCheapestFirst(const ScenarioFile& file, const AdviseOptions& options,
                                     Simulator& sim);

// Every --set of the point's changes, in order: what a user pastes.
std::vector<Override> PointSets(const AdvisePoint& p);
std::string PointSetText(const AdvisePoint& p);  // "loader.prefetch=8 checkpoint.mode=async"

// Why a real run on this host (`advise --verify`: one rank, `usable_cores` cores) cannot make the
// point's changes of `base`, empty where it can: more cores than the run gets, a faster disk
// under a real directory (the disk is what it is), a faster NIC (one rank uses none).
std::string WhyNotRunnableHere(const Scenario& base, const AdvisePoint& p, unsigned usable_cores);

// Ranks a's and b's cost: money where priced, else size; then idle.
bool CheaperPoint(const AdvisePoint& a, const AdvisePoint& b);

}  // namespace stallscope

#endif  // STALLSCOPE_SIM_ADVISE_H_
