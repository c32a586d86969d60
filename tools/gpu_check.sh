#!/usr/bin/env bash
# tools/gpu_check.sh [BUNDLE_DIR] [OUT_DIR]
# On a GPU host, from tools/bundle.sh's output: the GPU test suite, the GEMM kernel ladder,
# and the GPU issue's acceptance runs; prints a short PASS/FAIL table last.
#   tools/bundle.sh && (on the GPU host) tools/gpu_check.sh bundle /tmp/out
# Steps: 1 nvidia-smi and ldd  2 cuda_device_test  3 stallscope kernels
#        4 scenarios/gpu_compute_bound.yaml  5 scenarios/gpu_starved.yaml  6 bench_h2d
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
      --gtest_filter='GemmLadder.*:MlpModel.*' >"$OUT/sanitizer-$tool.log" 2>&1
    rc=$?
    echo "$tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.log" | tail -1)"
    [ $rc -eq 0 ] || sanitizer_rc=$rc
  done
else
  echo "compute-sanitizer not found; skipped"
fi

python3 - "$OUT" "$tests_rc" "$sanitizer_rc" <<'PY'
import json, sys, os, re
out, tests_rc, sanitizer_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = []
def check(name, ok, value):
    rows.append((name, "PASS" if ok else "FAIL", value))
try:
    cb = {v["name"]: v for v in json.load(open(f"{out}/compute_bound.json"))["variants"]}
    for name, v in cb.items():
        g = v["gpu"]
        check(f"1 compute-bound idle <= 1% ({name})", v["gpu_idle_fraction"] <= 0.01,
              f"idle {100*v['gpu_idle_fraction']:.2f}%, step {g['model'].get('calibrated_step_seconds',0)*1e3:.1f} ms, hidden {g['model']['hidden_width']:.0f}")
        check(f"3 CUPTI vs events within 1 pp ({name})", abs(g["busy_fraction"] - g["event_busy_fraction"]) <= 0.01,
              f"{100*g['busy_fraction']:.2f}% vs {100*g['event_busy_fraction']:.2f}%")
        check(f"5 loss halves ({name})", g["loss"]["last"] <= 0.5 * g["loss"]["first"],
              f"{g['loss']['first']:.3f} -> {g['loss']['last']:.3f} over {g['loss']['steps']} steps")
    plain = float(re.search(r"H2D_PLAIN_BYTES_PER_SECOND (\d+)", open(f"{out}/h2d.txt").read()).group(1))
    pipe = cb["cublas"]["gpu"]["h2d"]["bytes_per_second"]
    check("4 pipeline H2D >= 90% of plain pinned copy", pipe >= 0.9 * plain,
          f"{pipe/1e9:.1f} vs {plain/1e9:.1f} GB/s = {100*pipe/plain:.0f}%")
except Exception as e:
    check("compute-bound scenario", False, repr(e))
try:
    st = {v["name"]: v for v in json.load(open(f"{out}/starved.json"))["variants"]}
    c, e = st["cuda"], st["emulated"]
    check("2 starved: cuda idle within 3 pp of emulated", abs(c["gpu_idle_fraction"] - e["gpu_idle_fraction"]) <= 0.03,
          f"{100*c['gpu_idle_fraction']:.1f}% vs {100*e['gpu_idle_fraction']:.1f}%")
    check("2 starved: verdict fetch", c["bottleneck"]["stage"] == "fetch" and e["bottleneck"]["stage"] == "fetch",
          c["bottleneck"]["text"])
    check("3 CUPTI vs events within 1 pp (starved)", abs(c["gpu"]["busy_fraction"] - c["gpu"]["event_busy_fraction"]) <= 0.01,
          f"{100*c['gpu']['busy_fraction']:.2f}% vs {100*c['gpu']['event_busy_fraction']:.2f}%")
except Exception as ex:
    check("starved scenario", False, repr(ex))
try:
    k = json.load(open(f"{out}/kernels.json"))
    rows_k = k["rows"]
    check("6 every ladder version validated", all(r["valid"] for r in rows_k), f"{len(rows_k)} runs")
    at = [r for r in rows_k if r["size"] == 4096]
    own32 = max((r for r in at if r["precision"] == "fp32" and not r["kernel"].startswith("cuBLAS")), key=lambda r: r["tflops"])
    tc = max((r for r in at if r["precision"] == "bf16" and not r["kernel"].startswith("cuBLAS")), key=lambda r: r["tflops"])
    check("6 best own fp32 >= 80% cuBLAS at 4096", own32["percent_of_cublas"] >= 80,
          f"{own32['kernel']}: {own32['tflops']:.1f} TFLOP/s = {own32['percent_of_cublas']:.0f}%")
    check("6 best own bf16 tensor core >= 50% cuBLAS at 4096", tc["percent_of_cublas"] >= 50,
          f"{tc['kernel']}: {tc['tflops']:.1f} TFLOP/s = {tc['percent_of_cublas']:.0f}%")
except Exception as ex:
    check("kernel ladder at 4096", False, repr(ex))
check("GPU test suite", tests_rc == 0, f"cuda_device_test exit {tests_rc}")
check("compute-sanitizer memcheck + racecheck", sanitizer_rc == 0, f"exit {sanitizer_rc}")
w = max(len(r[0]) for r in rows)
print("\n== summary")
for name, verdict, value in rows:
    print(f"{name:<{w}}  {verdict}  {value}")
PY
