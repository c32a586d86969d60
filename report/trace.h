// Trace: a run's timeline as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open.
//
// One process per variant; tracks (threads) for the compute stream (steps, and the stalls
// before them, each named by the stage it is charged to), the copy stream (host-to-device
// copies), fetch lanes (each batch from its first read to its last), every preprocessing
// worker (its chunks), and the reads (per completing thread, spread over lanes so that reads
// in flight together do not overlap on one track; each read says which tier served it).
// Times are microseconds from the variant's start. Needs a RunRecord made with
// PipelineOptions::trace for the reads and chunks; steps, copies and stalls are always there.
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_REPORT_TRACE_H_
#define STALLSCOPE_REPORT_TRACE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace stallscope {

// Appends `run`'s events, as process `pid` named after `variant` (and `rank`, in a multi-rank
// run: "stallscope VARIANT rank K"), to `events` (an array). `tier_names` names cache tiers by
// index. Times count from the run's own start (a multi-rank run's ranks start together, after
// a barrier).
void AppendTraceEvents(nlohmann::json& events, const RunRecord& run, const std::string& variant,
                       int pid, const std::vector<std::string>& tier_names,
                       const std::string& rank = "");

// {"traceEvents": events, "displayTimeUnit": "ms"}.
nlohmann::json TraceDocument(nlohmann::json events);

}  // namespace stallscope

#endif  // STALLSCOPE_REPORT_TRACE_H_
