#include "metrics/metrics.h"

#include <prometheus/gateway.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <sstream>
#include <stdexcept>

#include "pipeline/analysis.h"

namespace stallscope {

namespace {

// Step waits from 100 us to ~100 s: what a GPU waits for a batch.
const prometheus::Histogram::BucketBoundaries kWaitBuckets = {
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,   0.5,    1,     2.5,    5,     10,   30,    100};

}  // namespace

VariantMetrics::VariantMetrics(std::string scenario, std::string variant,
                               std::vector<std::string> tiers, std::string rank)
    : scenario_(std::move(scenario)),
      variant_(std::move(variant)),
      rank_(std::move(rank)),
      tiers_(std::move(tiers)),
      registry_(std::make_shared<prometheus::Registry>()) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  auto& r = *registry_;
  idle_ = &BuildGauge()
               .Name("stallscope_gpu_idle_ratio")
               .Help("Fraction of the measured window in which the GPU was idle, so far")
               .Register(r)
               .Add({});
  busy_ = &BuildCounter()
               .Name("stallscope_gpu_busy_seconds_total")
               .Help("Seconds of the window in which a training step ran")
               .Register(r)
               .Add({});
  window_ = &BuildCounter()
                 .Name("stallscope_window_seconds_total")
                 .Help("Length of the measured window so far (warm-up steps excluded)")
                 .Register(r)
                 .Add({});
  auto& stall = BuildCounter()
                    .Name("stallscope_stall_seconds_total")
                    .Help("Idle seconds of the window, charged to the stage that caused them")
                    .Register(r);
  for (int i = 0; i < kStallStages; ++i) stall_[i] = &stall.Add({{"stage", kStallStageNames[i]}});
  samples_ = &BuildCounter()
                  .Name("stallscope_samples_total")
                  .Help("Samples delivered to the device")
                  .Register(r)
                  .Add({});
  steps_ =
      &BuildCounter().Name("stallscope_steps_total").Help("Training steps run").Register(r).Add({});
  auto& bytes = BuildCounter()
                    .Name("stallscope_bytes_read_total")
                    .Help("Bytes read, by where they came from (storage or a cache tier)")
                    .Register(r);
  storage_bytes_ = &bytes.Add({{"tier", "storage"}});
  auto& hits = BuildCounter()
                   .Name("stallscope_cache_hits_total")
                   .Help("Cache lookups that hit, by tier")
                   .Register(r);
  auto& misses = BuildCounter()
                     .Name("stallscope_cache_misses_total")
                     .Help("Cache lookups that missed, by tier")
                     .Register(r);
  for (const std::string& t : tiers_) {
    tier_bytes_.push_back(&bytes.Add({{"tier", t}}));
    hits_.push_back(&hits.Add({{"tier", t}}));
    misses_.push_back(&misses.Add({{"tier", t}}));
  }
  step_wait_ = &prometheus::BuildHistogram()
                    .Name("stallscope_step_wait_seconds")
                    .Help("How long the device waited for each batch (window steps)")
                    .Register(r)
                    .Add({}, kWaitBuckets);
  auto& queue = BuildGauge()
                    .Name("stallscope_queue_depth")
                    .Help("Batches at each stage, sampled after every step")
                    .Register(r);
  queue_fetching_ = &queue.Add({{"queue", "fetching"}});
  queue_preprocessing_ = &queue.Add({{"queue", "preprocessing"}});
  queue_ready_ = &queue.Add({{"queue", "ready"}});
}

void VariantMetrics::OnStep(const BatchRecord& b, double previous_end, bool in_window,
                            const QueueDepths& q) {
  steps_->Increment();
  samples_->Increment(b.samples - b.skipped);
  storage_bytes_->Increment(static_cast<double>(b.storage_bytes));
  for (size_t t = 0; t < tiers_.size() && t < static_cast<size_t>(kMaxCacheTiers); ++t) {
    tier_bytes_[t]->Increment(static_cast<double>(b.cache_bytes[t]));
    hits_[t]->Increment(b.cache_hits[t]);
    misses_[t]->Increment(b.cache_lookups[t] - b.cache_hits[t]);
  }
  queue_fetching_->Set(q.fetching);
  queue_preprocessing_->Set(q.preprocessing);
  queue_ready_->Set(q.ready);
  if (!in_window) return;
  // Exactly the analysis's window: from the first window step's start to the last end.
  const double span = window_started_ ? b.step_end - previous_end : b.step_end - b.step_start;
  if (window_started_) {
    const auto parts = SplitStall(previous_end, b).parts();
    for (int i = 0; i < kStallStages; ++i) stall_[i]->Increment(parts[i]);
    step_wait_->Observe(std::max(0.0, b.step_start - previous_end));
  }
  window_started_ = true;
  window_->Increment(span);
  busy_->Increment(b.step_busy);
  window_seconds_ += span;
  busy_seconds_ += b.step_busy;
  idle_->Set(window_seconds_ > 0 ? std::max(0.0, 1 - busy_seconds_ / window_seconds_) : 0);
}

void MetricsHub::Add(std::shared_ptr<VariantMetrics> variant) {
  std::lock_guard lock(mu_);
  variants_.push_back(std::move(variant));
}

std::string MetricsHub::Serialize() const {
  std::vector<std::shared_ptr<VariantMetrics>> variants;
  {
    std::lock_guard lock(mu_);
    variants = variants_;
  }
  // Merge families of the same name across variants, each series labelled by its variant.
  std::map<std::string, prometheus::MetricFamily> merged;
  std::vector<std::string> order;
  for (const auto& v : variants) {
    for (prometheus::MetricFamily& f : v->registry()->Collect()) {
      for (prometheus::ClientMetric& m : f.metric) {
        m.label.push_back({"scenario", v->scenario()});
        m.label.push_back({"variant", v->variant()});
        if (!v->rank().empty()) m.label.push_back({"rank", v->rank()});
      }
      auto it = merged.find(f.name);
      if (it == merged.end()) {
        order.push_back(f.name);
        merged.emplace(f.name, std::move(f));
      } else {
        for (auto& m : f.metric) it->second.metric.push_back(std::move(m));
      }
    }
  }
  std::vector<prometheus::MetricFamily> families;
  for (const std::string& name : order) families.push_back(std::move(merged[name]));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

int PushToGateway(const std::string& url, const VariantMetrics& metrics) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  const std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  const std::string port = colon == std::string::npos ? "9091" : rest.substr(colon + 1);
  prometheus::Labels grouping = {{"scenario", metrics.scenario()}, {"variant", metrics.variant()}};
  if (!metrics.rank().empty()) grouping.emplace("rank", metrics.rank());
  prometheus::Gateway gateway("http://" + host, port, "stallscope", grouping);
  gateway.RegisterCollectable(metrics.registry());
  const int status = gateway.Push();
  if (status < 0) throw std::runtime_error("cannot reach the Pushgateway at " + url);
  return status;
}

}  // namespace stallscope
