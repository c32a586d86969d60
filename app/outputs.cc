#include "app/outputs.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "app/signals.h"
#include "base/errors.h"
#include "base/units.h"
#include "report/report.h"
#include "report/trace.h"

namespace stallscope {
namespace {

// Pushes a variant's final values; a Pushgateway that refuses them is a warning, not a failure.
void PushQuietly(const std::string& gateway, const VariantMetrics& metrics,
                 const std::string& variant) {
  try {
    const int status = PushToGateway(gateway, metrics);
    if (status >= 300) {
      std::fprintf(stderr, "warning: the Pushgateway answered HTTP %d for %s\n", status,
                   variant.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
}

}  // namespace

std::vector<std::string> TierNames(const Scenario& s) {
  std::vector<std::string> names;
  for (const TierOptions& t : s.cache_tiers) names.push_back(NameOf(t.kind));
  return names;
}

Outputs::Outputs(const OutputOptions& o) : options_(o) {
  if (!o.json.empty()) {
    json_out_.open(o.json);
    if (!json_out_) throw BadInput(o.json + ": cannot write the --json file");
  }
  if (!o.trace.empty() && o.write_files) {
    trace_out_.open(o.trace);
    if (!trace_out_) throw BadInput(o.trace + ": cannot write the --trace file");
  }
  const std::optional<double> linger = ParseDuration(o.linger);
  if (!linger || *linger < 0) {
    throw BadInput("--linger " + o.linger + ": expected a duration such as 30s or 500ms");
  }
  linger_ = *linger;
  if (!o.push_gateway.empty() && o.push_gateway.rfind("http://", 0) != 0) {
    throw BadInput("--push-gateway " + o.push_gateway + ": expected http://HOST:PORT");
  }
  if (!o.metrics_listen.empty()) {
    try {
      server_ = std::make_unique<MetricsServer>(
          o.metrics_listen, [this] { return hub_.Serialize(); }, o.metrics_port_offset);
    } catch (const std::invalid_argument& e) {
      throw BadInput(e.what());
    }
    if (!o.quiet) std::fprintf(stderr, "metrics: http://%s/metrics\n", server_->address().c_str());
  }
}

StepObserver* Outputs::BeginVariant(const Scenario& s) {
  ++variants_;
  metrics_.reset();
  if (!server_ && options_.push_gateway.empty()) return nullptr;
  metrics_ = std::make_shared<VariantMetrics>(s.name, s.variant, TierNames(s), RankLabel());
  hub_.Add(metrics_);
  return metrics_.get();
}

void Outputs::Record(const Scenario& s, const RunRecord& record) {
  if (!trace()) return;
  // A multi-rank run: a process per rank and variant (variant × 10000 + rank).
  const int pid = options_.rank < 0 ? variants_ : variants_ * 10000 + options_.rank;
  AppendTraceEvents(trace_events_, record, s.variant, pid, TierNames(s), RankLabel());
}

std::string Outputs::TraceEventsText() const { return trace_events_.dump(); }

void Outputs::AddTraceEvents(const std::string& text) {
  for (nlohmann::json& e : nlohmann::json::parse(text)) trace_events_.push_back(std::move(e));
}

void Outputs::EndVariant(const Scenario& s) {
  if (metrics_ && !options_.push_gateway.empty()) {
    PushQuietly(options_.push_gateway, *metrics_, s.variant);
  }
}

nlohmann::json NodeToJson(const NodeOptions& node) {
  nlohmann::json j = {
      {"source", node.source}, {"cores", node.cores}, {"memory_bytes", node.memory}};
  for (const NodeRate& r : kNodeRates) {
    j[IsFactor(r) ? std::string(r.key) : std::string(r.key) + "_bytes_per_second"] =
        node.*(r.field);
  }
  return j;
}

void Outputs::Linger() const {
  if (!server_ || linger_ <= 0 || StopSignal()) return;
  if (!options_.quiet) {
    std::fprintf(stderr, "serving the final metrics at http://%s/metrics for %s\n",
                 server_->address().c_str(), FormatDuration(linger_).c_str());
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(linger_));
}

int Outputs::Finish(const std::string& scenario_name, const std::string& mode,
                    const std::vector<VariantResult>& results, const nlohmann::json& extra) {
  const bool quiet = options_.quiet;
  std::cout << "\n" << FormatTable(results) << std::flush;
  if (json_out_.is_open()) {
    nlohmann::json doc = ResultDocument(scenario_name, mode, results);
    doc.update(extra);
    json_out_ << doc.dump(2) << "\n";
    if (!quiet) std::fprintf(stderr, "wrote %s\n", options_.json.c_str());
  }
  if (trace_out_.is_open()) {
    trace_out_ << TraceDocument(std::move(trace_events_)).dump() << "\n";
    if (!quiet) {
      std::fprintf(stderr, "wrote %s (open it in ui.perfetto.dev)\n", options_.trace.c_str());
    }
  }
  Linger();
  if (const int sig = StopSignal()) {
    std::fprintf(stderr, "stallscope: interrupted by %s: the results above are partial%s\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM",
                 json_out_.is_open() || trace() ? " (and so marked in the files)" : "");
    return 128 + sig;
  }
  return 0;
}

std::ofstream OpenJson(const std::string& path) {
  std::ofstream out;
  if (!path.empty()) {
    out.open(path);
    if (!out) throw BadInput(path + ": cannot write the --json file");
  }
  return out;
}

}  // namespace stallscope
