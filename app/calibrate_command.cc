// `stallscope calibrate`: this host measured once as a node (sim/host_model.h) — each rate the
// median of repeated trials, with its spread — and written as a node profile
// (config/node_profile.h) that a scenario names (cluster.node.profile) or `simulate
// --node-profile` passes.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/budget.h"
#include "app/commands.h"
#include "base/errors.h"
#include "base/units.h"
#include "config/node_profile.h"
#include "sim/host_model.h"

namespace stallscope {

int CalibrateCommand(const CalibrateCommandOptions& o) {
  const auto size = ParseSize(o.sample_size);
  if (!size || *size < 1 || *size > (1ULL << 30)) {
    throw BadInput(fmt::format(
        "--sample-size {}: expected a size between 1 B and 1 GiB, e.g. 112KiB", o.sample_size));
  }
  if (o.image_size < 8 || o.image_size > 4096) {
    throw BadInput(fmt::format("--image-size {}: expected 8 to 4096 pixels", o.image_size));
  }
  if (o.trials < 1 || o.trials > 1000) {
    throw BadInput(fmt::format("--trials {}: expected 1 to 1000", o.trials));
  }
  // Open the output first: a bad path is bad input before a minute of measuring.
  std::ofstream file;
  if (!o.output.empty()) {
    file.open(o.output);
    if (!file) throw BadInput(o.output + ": cannot write the profile");
  }
  if (!o.quiet) {
    std::fprintf(stderr,
                 "measuring this host: %d trials of each rate on %s samples, JPEG decode "
                 "to %u px...\n",
                 o.trials, FormatBinaryBytes(*size).c_str(), o.image_size);
  }
  HostMeasurement m = MeasureHost(static_cast<uint64_t>(*size), o.image_size, o.trials);
  ProfileInfo info;
  info.date = UtcNow();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  info.host = host;
  info.trials = m.trials;
  info.sample_size = static_cast<uint64_t>(*size);
  info.image_size = o.image_size;
  info.spread = m.spread;
  info.notes["cores"] = "this host's (std::thread::hardware_concurrency)";
  info.notes["nic"] = "not measured: a run here reads local or in-process storage";
  info.notes["h2d"] = "not measured: the default (the H200's pinned copy, docs/gpu)";
  if (const auto mem = ReadHostMemory()) {
    m.node.memory = *mem;
    info.notes["memory"] = fmt::format("{} available now (MemAvailable, cgroup)",
                                       FormatBinaryBytes(static_cast<double>(*mem)));
  } else {
    info.notes["memory"] = "not measured: /proc/meminfo unreadable; the default";
  }
  const std::string text = NodeProfileYaml(m.node, info);
  if (o.output.empty()) {
    std::cout << text << std::flush;
    return 0;
  }
  file << text;
  file.close();
  if (!file) throw RunFailed(o.output + ": writing the profile failed");
  if (!o.quiet) {
    for (const NodeRate& r : kNodeRates) {
      const auto it = m.spread.find(r.key);
      if (it == m.spread.end()) continue;
      const double v = m.node.*(r.field);
      std::fprintf(stderr, "  %-17s %14s  spread %5.1f%%\n", r.key,
                   IsFactor(r) ? fmt::format("{:.3f}x", v).c_str() : FormatRate(v).c_str(),
                   it->second * 100);
    }
    std::fprintf(stderr, "wrote %s (simulate S.yaml --node-profile %s)\n", o.output.c_str(),
                 o.output.c_str());
  }
  return 0;
}

}  // namespace stallscope
