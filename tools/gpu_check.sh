#!/usr/bin/env bash
# tools/gpu_check.sh [BUNDLE_DIR] [OUT_DIR]
# On a GPU host, from tools/bundle.sh's output: the GPU test suite, the GEMM kernel ladder,
# and the GPU issue's acceptance runs; prints a short PASS/FAIL table last (tools/gpu_acceptance.py;
# exit status 1 when a check fails).
#   tools/bundle.sh && (on the GPU host) tools/gpu_check.sh bundle /tmp/out
# Steps: 1 nvidia-smi and ldd  2 cuda_device_test  3 stallscope kernels
#        4 scenarios/gpu_compute_bound.yaml  4b the step as a CUDA graph or not
#        4c the DRELU_BGRAD step (STALLSCOPE_LT_BACKWARD=1), informative
#        5 scenarios/gpu_starved.yaml  6 bench_h2d
#        7 compute-sanitizer memcheck and racecheck on the kernel tests
set -uo pipefail
B=$(cd "${1:-bundle}" && pwd)
OUT=${2:-${OUT:-/tmp/stallscope-gpu}}
SIZES=${SIZES:-1024,4096,8192}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$B/bin/stallscope

echo "== 1. GPU and libraries"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
missing=$(ldd "$S" "$B/bin/cuda_device_test" | grep "not found" | sort -u)
[ -z "$missing" ] || { echo "missing libraries:"; echo "$missing"; exit 1; }

echo "== 2. GPU tests"
"$B/bin/cuda_device_test" --gtest_print_time=1 2>&1 | tee "$OUT/gpu_tests.log" | grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is|error" 
tests_rc=${PIPESTATUS[0]}

echo "== 3. kernel ladder ($SIZES)"
"$S" kernels --sizes "$SIZES" --json "$OUT/kernels.json" 2>"$OUT/kernels.log" | tee "$OUT/kernels.txt"

echo "== 3b. tensor-core tilings at 4096 (STALLSCOPE_TC_CONFIG, gpu/kernels/gemm.cu)"
for c in 0 1 2 3; do
  echo "config $c: $(STALLSCOPE_TC_CONFIG=$c STALLSCOPE_WGMMA_CONFIG=$c "$S" kernels --sizes 4096 --quiet 2>&1 | grep -E 'tensor-core|wgmma' | tr -s ' ' | tr '\n' '|')"
done | tee "$OUT/tc_configs.txt"

echo "== 4. compute-bound scenario"
t0=$SECONDS
"$S" run "$B/scenarios/gpu_compute_bound.yaml" --json "$OUT/compute_bound.json" --quiet | tee "$OUT/compute_bound.txt"
echo "($((SECONDS - t0)) s)"

echo "== 4b. the training step as a CUDA graph (gpu.graph) vs launched kernel by kernel"
# The compute-bound scenario (cuBLAS) calibrated to 50 ms and to 5 ms steps, graph off and on:
# CUPTI (kernels only) against CUDA events (a step's first to last kernel, the launch gaps
# included), in percentage points and in ms per step; issue #20 asks for 0.1 pp at 50 ms and
# 0.5 pp at 5 ms with graphs, and idle <= 0.3%.
graph_line() {  # JSON STEP LABEL: one line of events against CUPTI
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["variants"][0]
g = v["gpu"]; m = g["model"]; w = v["window_seconds"]; n = max(v["steps"], 1)
ev, cu = g["event_busy_fraction"], g["busy_fraction"]
print(f"step {sys.argv[2]:5} graph {sys.argv[3]:5}: idle {v['gpu_idle_fraction'] * 100:.2f}%, "
      f"events {ev * 100:.2f}% vs CUPTI {cu * 100:.2f}% = {(ev - cu) * 100:.2f} pp "
      f"({(ev - cu) * w / n * 1e3:.3f} ms/step), {v['samples_per_second']:.0f} samples/s, "
      f"width {int(m['hidden_width'])}, {int(m.get('step_graphs_captured', 0))} graphs captured; "
      f"per step: gaps between kernels {m.get('mean_gaps_between_kernels_per_step_seconds', 0) * 1e6:.1f} us, "
      f"event edges {m.get('mean_event_edges_per_step_seconds', 0) * 1e6:.1f} us; "
      f"{int(m.get('steps_queued_behind_another', 0))} of {n} steps queued behind another")
PY
}
for step in 50ms 5ms; do
  for graph in false true; do
    "$S" run "$B/scenarios/gpu_compute_bound.yaml" --variant cublas --quiet \
      --set gpu.step_time=$step --set gpu.graph=$graph \
      --json "$OUT/graph-$step-$graph.json" >/dev/null
    graph_line "$OUT/graph-$step-$graph.json" "$step" "$graph"
  done
done | tee "$OUT/graph.txt"

echo "== 4c. not the default yet: STALLSCOPE_LT_BACKWARD=1 (input gradients through DRELU_BGRAD)"
# Its tests and the 5 ms graph step with it; informative (not in the summary) until it is the
# default (README, issue #20).
STALLSCOPE_LT_BACKWARD=1 "$B/bin/cuda_device_test" --gtest_filter='MlpModel.*:LtBiasGemm.*:CudaDevice.ComputeBound*:CudaDevice.Queued*' \
  2>&1 | tee "$OUT/gpu_tests_lt_backward.log" | grep -E "^\[ *(FAILED|PASSED) |Failure"
STALLSCOPE_LT_BACKWARD=1 "$S" run "$B/scenarios/gpu_compute_bound.yaml" --variant cublas --quiet \
  --set gpu.step_time=5ms --set gpu.graph=true --json "$OUT/graph-5ms-lt-backward.json" >/dev/null
graph_line "$OUT/graph-5ms-lt-backward.json" 5ms "true, DRELU_BGRAD" | tee "$OUT/graph-lt-backward.txt"

echo "== 5. starved scenario (cuda vs emulated)"
"$S" run "$B/scenarios/gpu_starved.yaml" --json "$OUT/starved.json" --quiet | tee "$OUT/starved.txt"

echo "== 6. plain pinned H2D copy of one batch"
batch_bytes=$(python3 -c "import json;v=json.load(open('$OUT/compute_bound.json'))['variants'][0];print(int(v['gpu']['h2d']['bytes']/ (v['steps'])))" 2>/dev/null || echo 4194304)
"$B/bin/bench_h2d" --bytes "$batch_bytes" | tee "$OUT/h2d.txt"

echo "== 7. compute-sanitizer (memcheck, racecheck) on the kernel tests"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitizer_rc=0
if [ -x "$CS" ]; then
  for tool in memcheck racecheck; do
    "$CS" --tool $tool --error-exitcode 9 "$B/bin/cuda_device_test" \
      --gtest_filter='GemmLadder.*:MlpModel.*:TrainingKernels.*' >"$OUT/sanitizer-$tool.log" 2>&1
    rc=$?
    echo "$tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.log" | tail -1)"
    [ $rc -eq 0 ] || sanitizer_rc=$rc
  done
else
  echo "compute-sanitizer not found; skipped"
fi

python3 "$(dirname "$0")/gpu_acceptance.py" "$OUT" --tests-rc "$tests_rc" --sanitizer-rc "$sanitizer_rc"
