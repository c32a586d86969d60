#include "pipeline/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "base/units.h"

namespace stallscope {
namespace {

double Overlap(double a, double z, double lo, double hi) {
  return std::max(0.0, std::min(z, hi) - std::max(a, lo));
}

}  // namespace

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest-rank on the sorted values.
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

namespace {

// Total length of the union of [start, end) intervals.
double UnionLength(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cur_s = 0, cur_e = -1;
  bool open = false;
  for (const auto& [s, e] : iv) {
    if (!open || s > cur_e) {
      if (open) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_s;
  return total;
}

const char* Noun(const std::string& stage) {
  if (stage == "fetch") return "storage";
  if (stage == "preprocess") return "preprocessing";
  return "the host-to-device copy";
}

std::string Pct(double r) { return fmt::format("{:.0f}%", r * 100); }

void Verdict(VariantResult& v, const AnalysisInputs& in) {
  struct Stage {
    std::string name;
    std::optional<double> capacity;
    double stall;
  };
  const std::vector<Stage> stages = {{"fetch", v.capacity_fetch, v.stall.fetch},
                                     {"preprocess", v.capacity_preprocess, v.stall.preprocess},
                                     {"transfer", v.capacity_transfer, v.stall.transfer}};
  const Stage* slowest = nullptr;
  for (const Stage& s : stages) {
    if (s.capacity && (!slowest || *s.capacity < *slowest->capacity)) slowest = &s;
  }
  const Stage* most_stalled = &stages[0];
  for (const Stage& s : stages) {
    if (s.stall > most_stalled->stall) most_stalled = &s;
  }
  const double demand = v.capacity_gpu;
  if (demand <= 0) {  // a zero step time: the GPU waits for whatever is slowest
    const Stage* s = slowest ? slowest : most_stalled;
    v.bottleneck_stage = s->name;
    v.bottleneck_text =
        fmt::format("{}-bound: the step takes no time, so {} sets the pace at {:.0f} samples/s",
                    s->name, Noun(s->name), s->capacity.value_or(v.samples_per_second));
    return;
  }
  // A cache that fills in epoch 0 and serves the later epochs: judge the steady state (the
  // later epochs), not the average over a cold first epoch and warm later ones.
  double later_hits = 0;
  for (size_t e = 1; e < v.epochs.size(); ++e) {
    later_hits += v.epochs[e].cache_hit_ratio / static_cast<double>(v.epochs.size() - 1);
  }
  if (in.have_cache && v.epochs.size() > 1 && v.epochs.front().gpu_idle_fraction >= 0.05 &&
      later_hits >= v.epochs.front().cache_hit_ratio + 0.1) {
    double busy = 0, span = 0;
    StageSeconds later;
    for (size_t e = 1; e < v.epochs.size(); ++e) {
      span += v.epochs[e].window_seconds;
      busy += v.epochs[e].window_seconds * (1 - v.epochs[e].gpu_idle_fraction);
      later.AddCharged(v.epochs[e].stall);
    }
    const double later_idle = span > 0 ? 1 - busy / span : 1;
    const StageSeconds& e0 = v.epochs.front().stall;
    const double first_stall[] = {e0.fetch, e0.preprocess, e0.transfer};
    const double later_stall[] = {later.fetch, later.preprocess, later.transfer};
    size_t filled = 0, steady = 0;  // what stalled epoch 0 most; the later epochs most
    for (size_t i = 1; i < stages.size(); ++i) {
      if (first_stall[i] > first_stall[filled]) filled = i;
      if (later_stall[i] > later_stall[steady]) steady = i;
    }
    const std::string first =
        fmt::format("epoch 0 idled {:.0f}% while the cache filled ({}-stalled)",
                    v.epochs.front().gpu_idle_fraction * 100, stages[filled].name);
    if (later_idle < 0.05) {
      v.bottleneck_stage = "gpu";
      v.bottleneck_text = fmt::format("compute-bound after epoch 0: later epochs idle {:.1f}%; {}",
                                      later_idle * 100, first);
    } else {
      v.bottleneck_stage = stages[steady].name;
      v.bottleneck_text = fmt::format(
          "{}-bound after epoch 0: later epochs idle {:.1f}%, {} of it waiting for {}; {}",
          stages[steady].name, later_idle * 100, FormatDuration(later_stall[steady]),
          Noun(stages[steady].name), first);
    }
    return;
  }
  const std::string headroom =
      slowest ? fmt::format("the slowest input stage ({}) could deliver {} of what it consumes",
                            slowest->name, Pct(*slowest->capacity / demand))
              : std::string("no input stage was measured");
  // Multi-rank: this rank's batches were ready; its idle was waiting for slower ranks (its
  // own stages' capacities, measured on a host the ranks share, do not explain it).
  if (!in.job_of_ranks && v.gpu_idle_fraction >= 0.05 &&
      v.stall.sync > std::max({v.stall.fetch, v.stall.preprocess, v.stall.transfer})) {
    v.bottleneck_stage = "sync";
    v.bottleneck_text =
        fmt::format("sync-bound: this rank waited {} at the step barrier for slower ranks; {}",
                    FormatDuration(v.stall.sync), headroom);
    return;
  }
  if (slowest && *slowest->capacity < 0.97 * demand && v.gpu_idle_fraction >= 0.02) {
    v.bottleneck_stage = slowest->name;
    v.bottleneck_text =
        fmt::format("{}-bound: {} delivers {} of what the GPU consumes", slowest->name,
                    Noun(slowest->name), Pct(*slowest->capacity / demand));
    if (slowest->name == "fetch") {
      // How much look-ahead the storage had: with it all in use, either the storage is at
      // its limit or more prefetch would hide more latency.
      v.bottleneck_text +=
          fmt::format(", with {:.1f} of {} batches in flight on average (loader.prefetch {})",
                      v.fetch_batches_in_flight, in.prefetch + 1, in.prefetch);
    }
    return;
  }
  if (v.gpu_idle_fraction < 0.05) {
    v.bottleneck_stage = "gpu";
    v.bottleneck_text = fmt::format("compute-bound: the GPU is busy {} of the window; {}",
                                    Pct(1 - v.gpu_idle_fraction), headroom);
    return;
  }
  // Idle without a capacity deficit: latency that the prefetch depth does not hide.
  v.bottleneck_stage = most_stalled->name;
  v.bottleneck_text = fmt::format(
      "{}-bound by latency: {} could deliver {} of what the GPU consumes, yet {} of stalls "
      "remain; raise loader.prefetch (now {}){}",
      most_stalled->name, Noun(most_stalled->name),
      most_stalled->capacity ? Pct(*most_stalled->capacity / demand) : std::string("?"),
      FormatDuration(most_stalled->stall), in.prefetch,
      most_stalled->name == "fetch" ? " or storage.max_inflight" : "");
}

}  // namespace

StageSeconds SplitStall(double a, const BatchRecord& r) {
  StageSeconds s;
  const double z = std::max(a, r.step_start);
  // The gap starts with the checkpoint after the previous step: the device waited for it,
  // whatever the batch was doing meanwhile.
  const double gap = z - a;
  s.checkpoint = Overlap(a, z, a, r.checkpoint_done);
  a = std::max(a, std::min(z, r.checkpoint_done));
  s.fetch = Overlap(a, z, -1e300, r.fetch_done);
  s.preprocess = Overlap(a, z, r.fetch_done, r.preprocess_done);
  s.transfer = Overlap(a, z, r.preprocess_done, r.copy_done);
  s.sync = Overlap(a, z, r.copy_done, r.sync_done);
  s.other = std::max(0.0, gap - s.charged());
  return s;
}

namespace {

// Busy, idle, AU and the step waits over the measured window (steps w..n-1),
// and what the device measured of itself.
void AnalyzeWindow(VariantResult& v, const RunRecord& run, size_t w) {
  const auto& b = run.batches;
  const size_t n = b.size();
  std::vector<double> waits;
  uint64_t window_samples = 0;
  for (size_t k = w; k < n; ++k) {
    v.busy_seconds += b[k].step_busy;
    window_samples += b[k].samples - b[k].skipped;
    if (k == w) continue;
    waits.push_back(std::max(0.0, b[k].step_start - b[k - 1].step_end));
  }
  const double idle_seconds = std::max(0.0, v.window_seconds - v.busy_seconds);
  v.gpu_idle_fraction = v.window_seconds > 0 ? idle_seconds / v.window_seconds : 0;
  v.au = v.window_seconds > 0 ? v.busy_seconds / v.window_seconds : 1;
  v.samples_per_second = v.window_seconds > 0 ? window_samples / v.window_seconds : 0;
  v.gpu = run.device_report;
  if (!v.gpu.busy_source.empty() && v.gpu.event_busy.size() == n && v.window_seconds > 0) {
    double events = 0;
    for (size_t k = w; k < n; ++k) events += v.gpu.event_busy[k];
    v.event_busy_fraction = events / v.window_seconds;
  }
  if (!v.gpu.loss.empty()) {
    const size_t m = std::min<size_t>(10, v.gpu.loss.size());
    for (size_t k = 0; k < m; ++k) {
      v.loss_first += v.gpu.loss[k] / m;
      v.loss_last += v.gpu.loss[v.gpu.loss.size() - m + k] / m;
    }
  }
  v.step_wait_p50 = Quantile(waits, 0.50);
  v.step_wait_p99 = Quantile(waits, 0.99);
}

// Totals over the whole run: samples, bytes, errors, cache tiers, and each stage's capacity.
void AnalyzeTotals(VariantResult& v, const RunRecord& run, const AnalysisInputs& in) {
  const auto& b = run.batches;
  uint64_t samples = 0, hits = 0, lookups = 0;
  std::vector<uint64_t> tier_bytes(run.cache.size(), 0);
  std::vector<std::pair<double, double>> fetch_intervals;
  double copy_seconds = 0;
  for (const BatchRecord& r : b) {
    samples += r.samples - r.skipped;
    v.bytes_storage += r.storage_bytes;
    for (size_t t = 0; t < run.cache.size(); ++t) {
      hits += r.cache_hits[t];
      tier_bytes[t] += r.cache_bytes[t];
    }
    lookups += r.samples;
    fetch_intervals.emplace_back(r.fetch_start, r.fetch_done);
    copy_seconds += r.copy_seconds;
  }
  v.samples_delivered = samples;
  v.samples_verified = run.samples_verified;
  v.integrity_errors = run.integrity_errors;
  v.samples_skipped = run.skipped_samples.size();
  v.skipped_samples = run.skipped_samples;
  v.read_errors = run.read_errors;
  v.cache_hit_ratio = lookups ? static_cast<double>(hits) / lookups : 0;
  uint64_t total_bytes = v.bytes_storage;
  for (size_t t = 0; t < run.cache.size(); ++t) {
    const TierStats& s = run.cache[t];
    TierResult tr{
        s.name,        s.policy,     s.hits,     s.misses,      s.evictions,   0,
        tier_bytes[t], s.bytes_held, s.capacity, s.write_drops, s.bad_entries, s.entries_at_start};
    tr.hit_ratio = s.hits + s.misses ? static_cast<double>(s.hits) / (s.hits + s.misses) : 0;
    v.cache.push_back(tr);
    v.bytes_by_tier.emplace_back(s.name, tier_bytes[t]);
    total_bytes += tier_bytes[t];
  }
  v.bytes_per_second = v.wall_seconds > 0 ? total_bytes / v.wall_seconds : 0;

  const double fetch_busy = UnionLength(fetch_intervals);
  if (fetch_busy > 0) {
    v.capacity_fetch = samples / fetch_busy;
    double fetch_total = 0;
    for (const auto& [start, done] : fetch_intervals) fetch_total += done - start;
    v.fetch_batches_in_flight = fetch_total / fetch_busy;
  }
  if (run.preprocess_stage && run.worker_busy_seconds > 0) {
    v.capacity_preprocess = samples / run.worker_busy_seconds * in.workers;
  }
  if (copy_seconds > 0) v.capacity_transfer = samples / copy_seconds;
  v.capacity_gpu = in.nominal_step_seconds > 0 ? in.batch_size / in.nominal_step_seconds : 0;
}

// Per epoch: idle, its stall split, throughput, cache hit ratios and evictions; the window's
// stall split is the epochs' together.
void AnalyzeEpochs(VariantResult& v, const RunRecord& run, size_t w) {
  const auto& b = run.batches;
  const size_t n = b.size();
  // Per epoch: each step's span runs from the end of the previous step (or the window start).
  uint32_t epochs = b.back().epoch + 1;
  v.epochs.resize(epochs);
  std::vector<double> e_busy(epochs, 0), e_span(epochs, 0);
  std::vector<uint64_t> e_samples(epochs, 0), e_hits(epochs, 0), e_lookups(epochs, 0);
  const size_t tiers = run.cache.size();
  for (EpochResult& er : v.epochs) er.tiers.resize(tiers);
  for (size_t k = 0; k < n; ++k) {
    const uint32_t e = b[k].epoch;
    for (size_t t = 0; t < tiers; ++t) {
      e_hits[e] += b[k].cache_hits[t];
      v.epochs[e].tiers[t].lookups += b[k].cache_lookups[t];
      v.epochs[e].tiers[t].hits += b[k].cache_hits[t];
      v.epochs[e].tiers[t].bytes += b[k].cache_bytes[t];
    }
    e_lookups[e] += b[k].samples;
    if (k < w) continue;
    const double from = k == w ? b[k].step_start : b[k - 1].step_end;
    e_span[e] += b[k].step_end - from;
    e_busy[e] += b[k].step_busy;
    e_samples[e] += b[k].samples - b[k].skipped;
    if (k == w) continue;
    v.epochs[e].stall.AddCharged(b[k].ranks_split ? *b[k].ranks_split
                                                  : SplitStall(b[k - 1].step_end, b[k]));
  }
  for (uint32_t e = 0; e < epochs; ++e) {
    EpochResult& er = v.epochs[e];
    er.epoch = e;
    er.window_seconds = e_span[e];
    er.gpu_idle_fraction = e_span[e] > 0 ? std::max(0.0, 1 - e_busy[e] / e_span[e]) : 0;
    er.stall.other = std::max(0.0, std::max(0.0, e_span[e] - e_busy[e]) - er.stall.charged());
    v.stall.AddCharged(er.stall);  // the window's split is the epochs' together
    er.samples_per_second = e_span[e] > 0 ? e_samples[e] / e_span[e] : 0;
    er.cache_hit_ratio = e_lookups[e] ? static_cast<double>(e_hits[e]) / e_lookups[e] : 0;
    for (size_t t = 0; t < tiers; ++t) {
      TierEpoch& te = er.tiers[t];
      te.hit_ratio = te.lookups ? static_cast<double>(te.hits) / te.lookups : 0;
      // Snapshots are taken at each epoch's first batch and at the end of the run.
      const auto& ev = run.tier_evictions;
      if (e + 1 < ev.size() && t < ev[e].size()) te.evictions = ev[e + 1][t] - ev[e][t];
    }
  }
  v.stall.other =
      std::max(0.0, std::max(0.0, v.window_seconds - v.busy_seconds) - v.stall.charged());
}

// The timeline: busy time and queue samples per slice of the window.
void AnalyzeTimeline(VariantResult& v, const RunRecord& run, size_t w) {
  const auto& b = run.batches;
  const size_t n = b.size();
  const double window_start = b[w].step_start;
  if (v.window_seconds > 0) {
    // About four steps per slice, so the curve shows the trend rather than each step.
    const int slices = std::clamp(static_cast<int>((n - w) / 4), 10, kTimelinePoints);
    const double width = v.window_seconds / slices;
    std::vector<double> busy(slices, 0), qr(slices, 0), qp(slices, 0), qf(slices, 0);
    std::vector<int> qn(slices, 0);
    for (size_t k = w; k < n; ++k) {
      // The step's busy time, spread over the slices its [start, start + busy) covers.
      const double s0 = b[k].step_start - window_start, s1 = s0 + b[k].step_busy;
      for (int i = std::max(0, static_cast<int>(s0 / width)); i < slices && i * width < s1; ++i) {
        busy[i] += Overlap(s0, s1, i * width, (i + 1) * width);
      }
      const int at =
          std::clamp(static_cast<int>((b[k].step_end - window_start) / width), 0, slices - 1);
      qr[at] += b[k].queues.ready;
      qp[at] += b[k].queues.preprocessing;
      qf[at] += b[k].queues.fetching;
      qn[at]++;
    }
    for (int i = 0; i < slices; ++i) {
      TimelinePoint p;
      p.t = (i + 0.5) * width;
      p.utilization = std::min(1.0, busy[i] / width);
      if (qn[i]) {
        p.queue_ready = qr[i] / qn[i];
        p.queue_preprocessing = qp[i] / qn[i];
        p.queue_fetching = qf[i] / qn[i];
      }
      v.timeline.push_back(p);
    }
  }
}

}  // namespace

VariantResult Analyze(const std::string& name, const RunRecord& run, const AnalysisInputs& in) {
  const auto& b = run.batches;
  const size_t n = b.size();
  const size_t w = in.warmup_steps;
  if (n <= w) {
    throw std::invalid_argument(fmt::format(
        "the run has {} step(s) but run.warmup_steps is {}: nothing left to measure; lower "
        "run.warmup_steps or raise run.epochs / dataset.samples",
        n, w));
  }
  VariantResult v;
  v.name = name;
  v.device = run.device;
  v.steps = n;
  v.window_seconds = b[n - 1].step_end - b[w].step_start;
  v.wall_seconds = run.end - run.start;
  AnalyzeWindow(v, run, w);
  AnalyzeTotals(v, run, in);
  AnalyzeEpochs(v, run, w);
  AnalyzeTimeline(v, run, w);
  Verdict(v, in);
  AnalyzeCheckpoints(v, run, w);
  return v;
}

RankResult RankResultOf(const VariantResult& v, uint32_t rank, uint32_t node) {
  RankResult r;
  r.rank = rank;
  r.node = node;
  r.gpu_idle_fraction = v.gpu_idle_fraction;
  r.au = v.au;
  r.window_seconds = v.window_seconds;
  r.samples_per_second = v.samples_per_second;
  r.bytes_per_second = v.bytes_per_second;
  r.stall_seconds = v.stall;
  r.cache_hit_ratio = v.cache_hit_ratio;
  r.samples_delivered = v.samples_delivered;
  r.samples_verified = v.samples_verified;
  r.integrity_errors = v.integrity_errors;
  r.samples_skipped = v.samples_skipped;
  r.read_errors = v.read_errors;
  r.bottleneck_stage = v.bottleneck_stage;
  r.bottleneck_text = v.bottleneck_text;
  r.allreduce_seconds = v.gpu.allreduce_seconds;
  if (v.checkpoints && v.checkpoints->restore.done) {
    r.restored_step = static_cast<int64_t>(v.checkpoints->restore.step);
  }
  return r;
}

void CombineRanks(VariantResult& v, std::vector<RankResult> ranks) {
  if (ranks.empty()) return;
  const double n = static_cast<double>(ranks.size());
  StageSeconds stall;
  double idle = 0, au = 0, hits = 0;
  v.samples_per_second = v.bytes_per_second = 0;
  v.samples_delivered = v.samples_verified = v.integrity_errors = v.samples_skipped = 0;
  v.read_errors = 0;
  for (const RankResult& r : ranks) {
    idle += r.gpu_idle_fraction / n;
    au += r.au / n;
    hits += r.cache_hit_ratio / n;
    stall.AddCharged(r.stall_seconds);
    stall.other += r.stall_seconds.other;
    v.samples_per_second += r.samples_per_second;
    v.bytes_per_second += r.bytes_per_second;
    v.samples_delivered += r.samples_delivered;
    v.samples_verified += r.samples_verified;
    v.integrity_errors += r.integrity_errors;
    v.samples_skipped += r.samples_skipped;
    v.read_errors += r.read_errors;
  }
  const auto parts = stall.parts();
  v.stall = {parts[0] / n, parts[1] / n, parts[2] / n, parts[3] / n, parts[4] / n};
  v.gpu_idle_fraction = idle;
  v.au = au;
  v.cache_hit_ratio = hits;
  v.gpus = static_cast<uint32_t>(ranks.size());
  std::vector<double> sync;
  for (const RankResult& r : ranks) sync.push_back(r.stall_seconds.sync);
  if (!NameStraggler(v, sync, [&](size_t k) { return ranks[k].bottleneck_text; }) &&
      v.bottleneck_stage == "sync") {
    // Rank 0 waited for others, but no one rank held the job up: each step waits for
    // whichever rank is slowest, and what held that one up is the ranks' own stalls.
    StageSeconds own;
    for (const RankResult& r : ranks) own.AddCharged(r.stall_seconds);
    const std::pair<double, const char*> parts[] = {
        {own.fetch, "fetch"}, {own.preprocess, "preprocess"}, {own.transfer, "transfer"}};
    const auto top = *std::max_element(std::begin(parts), std::end(parts));
    v.bottleneck_stage = top.second;
    v.bottleneck_text = fmt::format(
        "{}-bound: no one rank holds the others up; each step waits for whichever rank is "
        "slowest ({} of sync on average), and the ranks' own stalls are mostly {} ({} on "
        "average, waiting for {})",
        top.second, FormatDuration(v.stall.sync), top.second, FormatDuration(top.first / n),
        Noun(top.second));
  }
  v.ranks = std::move(ranks);
}

bool NameStraggler(VariantResult& v, const std::vector<double>& rank_sync,
                   const std::function<std::string(size_t)>& why) {
  const StageSeconds& s = v.stall;
  if (rank_sync.empty() || v.gpu_idle_fraction < 0.05 ||
      s.sync <= std::max({s.fetch, s.preprocess, s.transfer})) {
    return false;
  }
  const size_t k = std::min_element(rank_sync.begin(), rank_sync.end()) - rank_sync.begin();
  // One rank is the straggler when it waited far less than the others: with every rank
  // slowest in turn (a shared storage, say) each waits about as long, and no rank is named.
  double others = 0;
  for (size_t i = 0; i < rank_sync.size(); ++i) others += i == k ? 0 : rank_sync[i];
  others /= static_cast<double>(std::max<size_t>(1, rank_sync.size() - 1));
  if (rank_sync[k] > 0.25 * others) return false;
  v.bottleneck_stage = "sync";
  v.bottleneck_text = fmt::format(
      "sync-bound: ranks wait {} on average for the slowest rank, rank {} (it waited {}); rank "
      "{}: {}",
      FormatDuration(s.sync), k, FormatDuration(rank_sync[k]), k, why(k));
  return true;
}

std::string OwnStallText(const StageSeconds& s) {
  const std::pair<double, const char*> own[] = {
      {s.fetch, "fetch"}, {s.preprocess, "preprocess"}, {s.transfer, "transfer"}};
  const auto top = *std::max_element(std::begin(own), std::end(own));
  return fmt::format("{}-stalled {} (waiting for {})", top.second, FormatDuration(top.first),
                     Noun(top.second));
}

}  // namespace stallscope
