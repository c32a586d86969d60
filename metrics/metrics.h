// Live Prometheus metrics of a run (DESIGN.md's metric names), kept in prometheus-cpp
// registries and served or pushed from there.
//
// Each variant has its own registry, whose series carry no scenario/variant labels: the
// MetricsHub adds those when it serializes for /metrics (so every series has them), and the
// Pushgateway gets them as its grouping key (pushed series must not repeat them). Handles to
// every counter are taken once at the start of the variant; the device thread updates them
// after each step (StepObserver), so a scrape sees the run as it goes:
//   stallscope_gpu_idle_ratio, _gpu_busy_seconds_total, _window_seconds_total,
//   _stall_seconds_total{stage}, _samples_total, _steps_total, _bytes_read_total{tier},
//   _cache_hits_total{tier}, _cache_misses_total{tier}, _step_wait_seconds (histogram),
//   _queue_depth{queue}.
//
// Thread-safety: VariantMetrics::OnStep is called from one thread at a time; counters are
// atomic, so Serialize() may run concurrently from the HTTP server's thread.
#ifndef STALLSCOPE_METRICS_METRICS_H_
#define STALLSCOPE_METRICS_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/analysis.h"
#include "pipeline/pipeline.h"

namespace stallscope {

class VariantMetrics final : public StepObserver {
 public:
  // `tiers` names the cache tiers in order (memory, disk).
  // `rank`: a multi-rank run's rank, a label of every series and of the Pushgateway's
  // grouping key (empty: one rank, no label).
  VariantMetrics(std::string scenario, std::string variant, std::vector<std::string> tiers,
                 std::string rank = "");

  void OnStep(const BatchRecord& batch, double previous_end, bool in_window,
              const QueueDepths& queues) override;

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }
  const std::string& scenario() const { return scenario_; }
  const std::string& variant() const { return variant_; }
  const std::string& rank() const { return rank_; }

 private:
  const std::string scenario_, variant_, rank_;
  const std::vector<std::string> tiers_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* idle_ = nullptr;
  prometheus::Counter *busy_ = nullptr, *window_ = nullptr, *samples_ = nullptr, *steps_ = nullptr;
  prometheus::Counter* stall_[kStallStages] = {};  // kStallStageNames
  prometheus::Counter* storage_bytes_ = nullptr;
  std::vector<prometheus::Counter*> tier_bytes_, hits_, misses_;
  prometheus::Histogram* step_wait_ = nullptr;
  prometheus::Gauge *queue_fetching_ = nullptr, *queue_preprocessing_ = nullptr,
                    *queue_ready_ = nullptr;
  // Device thread only.
  bool window_started_ = false;
  double busy_seconds_ = 0, window_seconds_ = 0;
};

// All variants' metrics of one process, for /metrics.
class MetricsHub {
 public:
  void Add(std::shared_ptr<VariantMetrics> variant);
  // The Prometheus text exposition format, every series labelled scenario and variant.
  std::string Serialize() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<VariantMetrics>> variants_;  // guarded by mu_
};

// PUTs the variant's final values to a Pushgateway (job "stallscope", grouping key scenario
// and variant). `url` is http://HOST:PORT. Returns the HTTP status, or throws
// std::runtime_error when the gateway cannot be reached.
int PushToGateway(const std::string& url, const VariantMetrics& metrics);

}  // namespace stallscope

#endif  // STALLSCOPE_METRICS_METRICS_H_
