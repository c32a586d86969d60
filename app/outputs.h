// Outputs: where the variants of one `run` or `simulate` report, wired the same way for both —
// live Prometheus metrics (a MetricsHub served by --metrics-listen, pushed with
// --push-gateway), the Perfetto trace (--trace), the result document (--json), and the table on
// stdout. A real run's pipeline tells the metrics about each step as it happens; the simulator's
// steps are replayed into the same observer once its record exists.
//
// Every file is opened and every address checked at construction, before anything runs, so a
// bad --json path or --linger is bad input (exit 2), not a lost run.
//
// Thread-safety: used from main's thread; the metrics server's thread reads the hub.
#ifndef STALLSCOPE_APP_OUTPUTS_H_
#define STALLSCOPE_APP_OUTPUTS_H_

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/commands.h"
#include "config/scenario.h"
#include "metrics/metrics.h"
#include "metrics/metrics_server.h"
#include "pipeline/analysis.h"
#include "pipeline/pipeline.h"

namespace stallscope {

class Outputs {
 public:
  // Throws BadInput for a file that cannot be written or a malformed option.
  explicit Outputs(const OutputOptions& options);

  bool trace() const { return !options_.trace.empty(); }  // collected (written where told)
  // The trace events so far, as JSON text; and another rank's, added to this one's.
  std::string TraceEventsText() const;
  void AddTraceEvents(const std::string& text);

  // A variant starts: its metrics (nullptr when neither served nor pushed).
  StepObserver* BeginVariant(const Scenario& scenario);
  // The variant's record (real or simulated), for the trace.
  void Record(const Scenario& scenario, const RunRecord& record);
  // The variant is over: its final values go to the Pushgateway.
  void EndVariant(const Scenario& scenario);

  // The table on stdout, then the files; lingers for a last scrape. Returns the exit code
  // (128 + the signal when a signal stopped the run).
  // `extra`: more top-level keys of the result document (the simulator's node).
  int Finish(const std::string& scenario_name, const std::string& mode,
             const std::vector<VariantResult>& results,
             const nlohmann::json& extra = nlohmann::json::object());
  // Keeps serving the final metrics for --linger (Finish does; a multi-rank run's other
  // ranks, which write nothing, call it alone).
  void Linger() const;

 private:
  // The `rank` label of metrics and trace: empty for a one-rank run.
  std::string RankLabel() const {
    return options_.rank < 0 ? std::string() : std::to_string(options_.rank);
  }

 public:
 private:
  const OutputOptions options_;
  double linger_ = 0;
  std::ofstream json_out_, trace_out_;
  nlohmann::json trace_events_ = nlohmann::json::array();
  int variants_ = 0;  // variants begun (the trace's process ids)
  MetricsHub hub_;
  std::unique_ptr<MetricsServer> server_;
  std::shared_ptr<VariantMetrics> metrics_;  // the current variant's
};

// The node a simulation charged (DESIGN.md: "node": {"source", ...the rates}).
nlohmann::json NodeToJson(const NodeOptions& node);

// The cache tiers' names in order, as metrics and the trace label them.
std::vector<std::string> TierNames(const Scenario& scenario);

// A --json file opened for writing before anything runs (a path that cannot be written is bad
// input: exit 2 with nothing run); a closed stream for an empty path.
std::ofstream OpenJson(const std::string& path);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_OUTPUTS_H_
