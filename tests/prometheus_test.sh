#!/usr/bin/env bash
# Integration test: a real Prometheus server scrapes a running `stallscope run` every second
# and a real Pushgateway receives its per-variant pushes; the values Prometheus stored must
# match the run's JSON (GPU idle ratio within 0.01, samples exactly), both ways.
# Servers started here are stopped here, on success and on failure. Exit 77 = skipped
# (Debian's prometheus / prometheus-pushgateway not installed; tools/test.sh installs them).
#   tests/prometheus_test.sh STALLSCOPE_BINARY
set -euo pipefail
stallscope=$1
for tool in prometheus prometheus-pushgateway python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

work=$(mktemp -d /tmp/stallscope-prometheus-test.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
scrape_port=$(free_port)
prom_port=$(free_port)
pgw_port=$(free_port)

cat > "$work/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: stallscope-scrape
    static_configs: [{targets: ['127.0.0.1:$scrape_port']}]
  - job_name: pushgateway
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:$pgw_port']}]
YAML

cat > "$work/scenario.yaml" <<'YAML'
name: prometheus-test
dataset: {samples: 1024, sample_size: 16KiB}
storage: {kind: simulated, bandwidth: 10MB/s, latency: {p50: 1ms, p99: 5ms}}
cache: {tiers: [{kind: memory, capacity: 4MiB}]}   # so the dashboard's cache panel has series
loader: {batch_size: 32, prefetch: 2, workers: 2, preprocess: normalize}
gpu: {step_time: 20ms}
run: {epochs: 1}
variants:
  slow-storage: {}
  fast-storage: {storage.bandwidth: 0}
YAML

prometheus-pushgateway --web.listen-address="127.0.0.1:$pgw_port" >"$work/pushgateway.log" 2>&1 &
pids+=($!)
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

wait_ready() {
  for _ in $(seq 1 60); do
    python3 -c "import urllib.request,sys; urllib.request.urlopen('$1', timeout=1)" 2>/dev/null && return 0
    sleep 0.5
  done
  echo "FAIL: $1 never became ready"; cat "$work"/*.log; exit 1
}
wait_ready "http://127.0.0.1:$prom_port/-/ready"
wait_ready "http://127.0.0.1:$pgw_port/-/ready"

"$stallscope" run "$work/scenario.yaml" --quiet --json "$work/result.json" \
  --metrics-listen "127.0.0.1:$scrape_port" --linger 4s \
  --push-gateway "http://127.0.0.1:$pgw_port" >/dev/null

dashboard="$(dirname "$0")/../tools/grafana/stallscope-dashboard.json"
python3 - "$work/result.json" "$prom_port" "$dashboard" <<'PY'
import json, sys, time, urllib.parse, urllib.request
result = json.load(open(sys.argv[1]))
prom = f"http://127.0.0.1:{sys.argv[2]}"
dashboard = json.load(open(sys.argv[3]))

def query(q):
    # The last stored sample: once stallscope exits, Prometheus marks its series stale, and a
    # plain instant query would find nothing.
    q = f"last_over_time({q}[5m])"
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    data = json.load(urllib.request.urlopen(url, timeout=5))
    rows = data["data"]["result"]
    return float(rows[0]["value"][1]) if rows else None

failures = 0
for v in result["variants"]:
    for job in ("stallscope-scrape", "stallscope"):  # scraped live / pushed
        sel = f'{{job="{job}",scenario="prometheus-test",variant="{v["name"]}"}}'
        idle = samples = None
        for _ in range(20):  # the pushgateway is scraped every second
            idle = query("stallscope_gpu_idle_ratio" + sel)
            samples = query("stallscope_samples_total" + sel)
            if idle is not None and samples is not None:
                break
            time.sleep(0.5)
        ok = (idle is not None and abs(idle - v["gpu_idle_fraction"]) <= 0.01
              and samples == v["samples_delivered"])
        print(f'{"ok  " if ok else "FAIL"} {v["name"]:13s} {job:17s} idle {idle} vs '
              f'{v["gpu_idle_fraction"]:.4f}, samples {samples} vs {v["samples_delivered"]}')
        failures += not ok
# Every query of the shipped Grafana dashboard is valid PromQL that finds this run's series:
# evaluated over the last five minutes (the run's samples are stale once it has exited), it
# must return at least one series with at least one value.
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        expr = target["expr"].replace("$scenario", "prometheus-test").replace("$variant", ".*")
        now = time.time()
        url = prom + "/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": expr, "start": now - 300, "end": now, "step": 1})
        try:
            data = json.load(urllib.request.urlopen(url, timeout=5))
            series = data["data"]["result"] if data["status"] == "success" else []
            values = sum(len(r["values"]) for r in series)
            ok = values > 0
            data = f"{len(series)} series, {values} values"
        except Exception as e:  # a 400 for bad PromQL
            ok, data = False, str(e)
        print(f'{"ok  " if ok else "FAIL"} dashboard panel "{panel["title"]}": {data}')
        failures += not ok
# The two variants differ, so this is not one stale series read twice.
assert abs(result["variants"][0]["gpu_idle_fraction"] - result["variants"][1]["gpu_idle_fraction"]) > 0.2
sys.exit(1 if failures else 0)
PY
echo "1 passed, 0 failed"
