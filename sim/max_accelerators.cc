#include "sim/max_accelerators.h"

#include <map>

#include "base/errors.h"

namespace stallscope {

MaxAccelerators FindMaxAccelerators(Simulator& simulator, const Scenario& base, double target) {
  MaxAccelerators out;
  const uint64_t g = base.cluster.gpus_per_node;
  const uint64_t samples_needed_per_rank = static_cast<uint64_t>(base.loader.batch_size) *
                                           std::max<uint64_t>(1, base.run.warmup_steps + 1);
  std::map<uint32_t, double> seen;
  auto au_at = [&](uint32_t nodes) {
    if (auto it = seen.find(nodes); it != seen.end()) return it->second;
    Scenario s = base;
    s.cluster.nodes = nodes;
    simulator.ForgetDisks();  // every size starts from the same disks
    const double au = simulator.RunVariant(s).au;
    seen[nodes] = au;
    out.tried.push_back({nodes, nodes * g, au});
    return au;
  };
  // The dataset bounds the search: every rank needs more than its warm-up in samples.
  const uint64_t n = base.storage.kind == StorageKind::kDirectory ? ~0ULL : base.dataset.samples;
  auto fits = [&](uint64_t nodes) { return n / (nodes * g) >= samples_needed_per_rank * 2; };
  if (!fits(1) || au_at(1) < target) return out;
  uint32_t good = 1, bad = 0;
  while (bad == 0) {
    const uint64_t next = static_cast<uint64_t>(good) * 2;
    if (next > (1u << 20)) break;
    if (!fits(next)) {
      out.limited_by_dataset = true;
      break;
    }
    double au;
    try {
      au = au_at(static_cast<uint32_t>(next));
    } catch (const BadInput&) {  // more ranks than a directory has files
      out.limited_by_dataset = true;
      break;
    }
    if (au >= target) {
      good = static_cast<uint32_t>(next);
    } else {
      bad = static_cast<uint32_t>(next);
    }
  }
  while (bad > good + 1) {
    const uint32_t mid = good + (bad - good) / 2;
    if (au_at(mid) >= target) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  out.nodes = good;
  out.accelerators = good * g;
  out.au = seen[good];
  return out;
}

}  // namespace stallscope
