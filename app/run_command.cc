// `stallscope run`: every variant of a scenario, for real, side by side.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "app/advise_command.h"
#include "app/commands.h"
#include "app/errors.h"
#include "app/make_device.h"
#include "app/mpi_job.h"
#include "app/outputs.h"
#include "app/progress.h"
#include "app/resolve.h"
#include "app/runner.h"
#include "app/signals.h"
#include "base/cores.h"
#include "base/units.h"
#include "report/report.h"
#include "storage/checkpoint_store.h"

namespace stallscope {
namespace {

// The start-up banner: what runs, and the memory it holds.
void PrintBanner(const Scenario& s, const Storage& storage, const Cache& cache, const Pipeline& p,
                 const Device& device) {
  uint64_t cache_bytes = 0;
  for (const TierOptions& t : s.cache_tiers) {
    if (t.kind == TierKind::kMemory) cache_bytes += t.capacity;
  }
  std::fprintf(stderr,
               "▶ %s: %s | cache: %s | %u workers, prefetch %u, batch %u | device: %s, "
               "step %s | memory budget: staging %s + RAM cache %s | %llu steps\n",
               s.variant.c_str(), storage.Describe().c_str(), cache.Describe().c_str(),
               s.loader.workers, s.loader.prefetch, s.loader.batch_size, device.name().c_str(),
               FormatDuration(s.gpu.step_time).c_str(),
               FormatBinaryBytes(static_cast<double>(p.staging_bytes())).c_str(),
               FormatBinaryBytes(static_cast<double>(cache_bytes)).c_str(),
               static_cast<unsigned long long>(p.total_steps()));
  const std::string checkpoints = DescribeCheckpoints(s, s.cluster.nodes * s.cluster.gpus_per_node);
  if (!checkpoints.empty()) std::fprintf(stderr, "  %s\n", checkpoints.c_str());
}

// The hooks every run's variant gets: the banner, the progress line, Ctrl-C, metrics, trace.
RunHooks ConsoleHooks(const Scenario& s, bool quiet, const Device& device, StopOnSignal& stopper,
                      ProgressLine& progress, Outputs& outputs) {
  RunHooks hooks;
  hooks.quiet = quiet;
  hooks.on_start = [quiet, device = &device, stopper = &stopper, progress = &progress](
                       const Scenario& sc, const Storage& st, const Cache& cache, Pipeline& p) {
    stopper->Attach(&p);
    if (!quiet) PrintBanner(sc, st, cache, p, *device);
    progress->Start(sc.variant, p, sc.run.epochs);
  };
  hooks.on_finish = [stopper = &stopper, progress = &progress] {
    stopper->Attach(nullptr);
    progress->Stop();
  };
  hooks.observer = outputs.BeginVariant(s);
  hooks.trace = outputs.trace();
  hooks.on_record = [s = &s, outputs = &outputs](const RunRecord& record) {
    outputs->Record(*s, record);
  };
  return hooks;
}

// A multi-rank run's scenario as rank `rank` of `ranks` on `hosts` hosts runs it: a default
// 1 x 1 cluster takes the launch's size (one node, `ranks` GPUs); a disk tier gets a
// directory of its own per rank (rank-N under its path). Simulated storage: the ranks of a
// host share one budget (MpiJob::FreshHostStorageBudget); across hosts it is split evenly
// (bandwidth, IOPS and reads in flight; each host models its share).
void ForRank(Scenario& s, uint32_t rank, uint32_t ranks, uint32_t hosts) {
  if (s.cluster.nodes == 1 && s.cluster.gpus_per_node == 1) s.cluster.gpus_per_node = ranks;
  for (TierOptions& t : s.cache_tiers) {
    if (t.kind == TierKind::kDisk) t.path += fmt::format("/rank-{}", rank);
  }
  SimulatedStorageOptions& m = s.storage.model;
  m.bandwidth_bytes_per_second /= hosts;
  m.iops /= hosts;
  m.max_inflight = std::max<uint32_t>(1, m.max_inflight / hosts);
}

// A rank confined to fewer cores than its loader's threads (Open MPI binds each rank to one
// core when it starts 2 or fewer, to a socket beyond): those threads then share the cores,
// and the run measures the binding. Collective: rank 0 prints one warning for the job.
void WarnAboutBinding(MpiJob& job, const std::vector<Scenario>& scenarios) {
  const auto cores = static_cast<int>(UsableCores());
  // The host's cores.
  const auto online = static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF)));
  uint32_t threads = 0;  // preprocessing workers, I/O threads, the copy and device threads
  for (const Scenario& s : scenarios) {
    threads = std::max(threads, s.loader.workers + s.loader.io.io_threads + 2);
  }
  std::string note;
  if (cores > 0 && static_cast<unsigned>(cores) < std::min(threads, online)) {
    note = fmt::format("bound to {} of this host's {} cores for {} loader threads", cores, online,
                       threads);
  }
  const std::vector<std::string> all = job.GatherAtRoot(note);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    std::fprintf(stderr,
                 "stallscope: warning: rank %zu is %s (the launcher's binding: Open MPI binds each "
                 "rank to a core by default); its threads share them and the run measures that. "
                 "Launch with mpirun --bind-to none, or --map-by slot:PE=N for N cores a rank\n",
                 r, all[r].c_str());
    break;
  }
}

// checkpoint.restore in a multi-rank job: the newest step every rank holds a complete
// checkpoint of (a crash may have left some ranks' newest unwritten; restoring each rank's own
// newest would resume the ranks from different steps). Collective. None in common: rank 0
// names what each rank holds, and every rank refuses (PeerRefused, exit 2).
uint64_t AgreeOnRestoreStep(MpiJob& job, const Scenario& s, const std::vector<uint64_t>& steps) {
  const std::vector<std::string> all = job.GatherAtRoot(fmt::format("{}", fmt::join(steps, " ")));
  uint64_t chosen[2] = {0, 0};  // found, step
  if (job.rank() == 0) {
    std::vector<std::vector<uint64_t>> per_rank;
    for (const std::string& text : all) {
      std::istringstream in(text);
      per_rank.emplace_back(std::istream_iterator<uint64_t>(in), std::istream_iterator<uint64_t>());
    }
    if (const std::optional<uint64_t> step = NewestCommonStep(per_rank)) {
      chosen[0] = 1;
      chosen[1] = *step;
    } else {
      std::string held;
      for (size_t r = 0; r < all.size(); ++r) {
        held += fmt::format("{}rank {}: {}", r ? "; " : "", r, all[r].empty() ? "none" : all[r]);
      }
      std::fprintf(stderr,
                   "stallscope: %s (variant %s): checkpoint.restore: no step has a complete "
                   "checkpoint on every rank in %s (steps held: %s); raise checkpoint.keep so "
                   "that a crash mid-write leaves one, or run without restore\n",
                   s.file.c_str(), s.variant.c_str(), s.checkpoint.path.c_str(), held.c_str());
    }
  }
  job.Broadcast(chosen, sizeof chosen);
  if (chosen[0] == 0) throw PeerRefused{};
  return chosen[1];
}

// `mpirun -np N stallscope run`: this rank runs its shard of every variant; steps meet at an
// MPI all-reduce; rank 0 gathers every rank's result and reports the job.
int RunRanks(const RunCommandOptions& o, MpiJob& job) {
  const bool root = job.rank() == 0;
  const auto ranks = static_cast<uint32_t>(job.size());
  std::vector<Scenario> scenarios;
  std::unique_ptr<Outputs> outputs;
  std::string error;
  try {
    scenarios = ResolveVariants(o.scenario, o.variants, o.sets);
    for (Scenario& s : scenarios) {
      ForRank(s, job.rank(), ranks, static_cast<uint32_t>(job.hosts()));
      CheckRunnable(s, ranks);
    }
    // Every rank serves its own metrics (labelled rank="K", at --metrics-listen's port + its
    // local rank) and pushes them (grouped by rank too); rank 0 alone writes the files.
    OutputOptions out = o.out;
    out.rank = job.rank();
    out.metrics_port_offset = static_cast<unsigned>(job.local_rank());
    if (!root) {
      out.json.clear();
      out.write_files = false;  // its trace goes to rank 0
      out.quiet = true;
    }
    outputs = std::make_unique<Outputs>(out);
  } catch (const BadInput& e) {  // StorageError (a bad dataset directory) included
    error = ErrorMessage(e);
  }
  if (job.AnyRankRefused(error)) return kExitBadInput;
  WarnAboutBinding(job, scenarios);
  const bool quiet = o.out.quiet || !root;
  if (!quiet) {
    std::fprintf(stderr, "stallscope run: %s (%s), %zu variant(s), %u ranks\n",
                 scenarios[0].name.c_str(), o.scenario.c_str(), scenarios.size(), ranks);
    if (!o.out.metrics_listen.empty()) {
      std::fprintf(stderr,
                   "metrics: every rank serves its own, labelled rank=\"K\", at the port of "
                   "--metrics-listen plus its local rank on its host\n");
    }
  }
  ProgressLine progress(!quiet && isatty(STDERR_FILENO));
  StopOnSignal stopper;
  std::vector<VariantResult> results;
  for (const Scenario& s : scenarios) {
    bool agreed = false;  // every rank set up: from here on an error ends the whole job
    VariantResult v;
    error.clear();
    SharedStorageBudget* budget = job.FreshHostStorageBudget();  // collective, every variant
    try {
      std::unique_ptr<Storage> storage = MakeStorage(s, quiet, budget);
      std::unique_ptr<Device> device = MakeDevice(s, job.local_rank(), job.local_size());
      RunHooks hooks = ConsoleHooks(s, quiet, *device, stopper, progress, *outputs);
      hooks.shard = job.shard();
      hooks.step_sync = &job;
      hooks.ranks_on_host = static_cast<uint32_t>(job.local_size());
      hooks.before_run = [&] {
        if (job.AnyRankRefused("")) throw PeerRefused{};  // a rank's set-up failed
        // Every rank is set up: the same collectives on every rank from here.
        if (job.AnyRankRefused(MixedDevices(*device, job))) throw PeerRefused{};
        agreed = true;
        JoinDataParallel(*device, job);
      };
      hooks.agree_restore = [&](const std::vector<uint64_t>& steps) {
        return AgreeOnRestoreStep(job, s, steps);
      };
      v = RunVariant(s, *storage, *device, hooks);
      outputs->EndVariant(s);
    } catch (const PeerRefused&) {
      return kExitBadInput;
    } catch (const std::exception& e) {
      if (agreed) {  // the others are in a collective: end the job, naming this rank
        std::fprintf(stderr, "stallscope: rank %d: run failed: %s\n", job.rank(), e.what());
        job.Abort(kExitRunFailed);
      }
      error = ErrorMessage(e);
    }
    if (!agreed) {
      job.AnyRankRefused(error);
      return kExitBadInput;
    }
    const uint32_t node = job.rank() / s.cluster.gpus_per_node;
    const std::vector<std::string> all =
        job.GatherAtRoot(RankToJson(RankResultOf(v, job.rank(), node)).dump());
    const bool stop = job.AnyRank(StopSignal() != 0);  // the variants not started are not run
    if (root) {
      std::vector<RankResult> parts;
      for (const std::string& text : all) {
        parts.push_back(RankFromJson(nlohmann::json::parse(text)));
      }
      CombineRanks(v, std::move(parts));
      results.push_back(std::move(v));
    }
    if (stop) break;
  }
  if (outputs->trace()) {  // one trace, a process per rank and variant
    const std::vector<std::string> traces =
        job.GatherAtRoot(root ? "" : outputs->TraceEventsText());
    for (size_t k = 1; k < traces.size(); ++k) outputs->AddTraceEvents(traces[k]);
  }
  if (!root) {
    outputs->Linger();
    return 0;
  }
  return outputs->Finish(scenarios[0].name, "run", results);
}

}  // namespace

int RunCommand(const RunCommandOptions& o) {
  if (MpiJob* job = MpiJob::FromLauncher(); job && job->size() > 1) return RunRanks(o, *job);
  const std::vector<Scenario> scenarios = ResolveVariants(o.scenario, o.variants, o.sets);
  for (const Scenario& s : scenarios) CheckRunnable(s);
  const bool quiet = o.out.quiet;
  Outputs outputs(o.out);
  // Open every real dataset before anything runs: a bad directory is bad input (exit 2).
  std::vector<std::unique_ptr<Storage>> storages(scenarios.size());
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (scenarios[i].storage.kind == StorageKind::kDirectory) {
      storages[i] = MakeStorage(scenarios[i], quiet);
    }
  }
  ProgressLine progress(!quiet && isatty(STDERR_FILENO));
  if (!quiet) {
    std::fprintf(stderr, "stallscope run: %s (%s), %zu variant(s)\n", scenarios[0].name.c_str(),
                 o.scenario.c_str(), scenarios.size());
  }
  std::vector<VariantResult> results;
  StopOnSignal stopper;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (StopSignal()) break;  // interrupted: the variants not started are not run
    const Scenario& s = scenarios[i];
    std::unique_ptr<Storage> storage = storages[i] ? std::move(storages[i]) : MakeStorage(s, quiet);
    std::unique_ptr<Device> device = MakeDevice(s);
    const RunHooks hooks = ConsoleHooks(s, quiet, *device, stopper, progress, outputs);
    results.push_back(RunVariant(s, *storage, *device, hooks));
    outputs.EndVariant(s);
  }
  const int rc = outputs.Finish(scenarios[0].name, "run", results);
  if (!quiet && rc == 0) {
    std::vector<std::string> names;
    std::vector<double> idle;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].partial) continue;
      names.push_back(scenarios[i].variant);
      idle.push_back(results[i].gpu_idle_fraction);
    }
    PrintAdviseHints(o.scenario, o.sets, names, idle);
  }
  return rc;
}

}  // namespace stallscope
