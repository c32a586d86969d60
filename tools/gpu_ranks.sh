#!/usr/bin/env bash
# tools/gpu_ranks.sh [BUNDLE_DIR] [OUT_DIR]
# On a host with two GPUs, from tools/bundle.sh's output (Open MPI included): data-parallel
# runs of two ranks, one GPU each, NCCL all-reducing the MLP's gradients every step.
#   tools/bundle.sh && (on the GPU host) tools/gpu_ranks.sh bundle /tmp/out
# Steps: 1 GPUs, 2 the CUDA and multi-rank tests, 3 compute-bound 1 x 2, 4 starved 1 x 2 on
# CUDA, emulated and `simulate`, 5 rank 1's loader slowed (mpirun's MPMD form: rank 1 gets
# its own --set), 6 a one-line summary per run (RESULT lines).
set -uo pipefail
B=$(cd "${1:-bundle}" && pwd)
OUT=${2:-${OUT:-/tmp/stallscope-ranks}}
mkdir -p "$OUT"
# shellcheck source=/dev/null
source "$B/env.sh"  # Open MPI from the bundle, run-as-root switches, NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"
S=$B/bin/stallscope
MPI="mpirun -q --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH"

echo "== 1. GPUs"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
nvidia-smi topo -m 2>/dev/null | head -4
echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"

echo "== 2. tests"
# The tests run the CLI by its build path: point that path at the bundle.
mkdir -p /work/main/build/tools /work/main/build/tests
ln -sf "$S" /work/main/build/tools/stallscope
ln -sf "$B/bin/rank_main" /work/main/build/tests/rank_main
"$B/bin/cuda_device_test" --gtest_filter='MlpModel.*:CudaDevice.*' 2>&1 | grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is"
"$B/bin/multirank_test" 2>&1 | grep -vE "pmix|dlopen|Perhaps a missing" | tail -60

cat >"$OUT/dp.yaml" <<'EOF'
name: data_parallel
dataset: {samples: 16384, sample_size: 64KiB, classes: 100}
storage: {kind: simulated, bandwidth: 20GB/s, latency: {p50: 200us, p99: 1ms}, max_inflight: 256}
loader: {batch_size: 256, prefetch: 4, workers: 6, io_depth: 128, preprocess: {kind: normalize}}
gpu: {device: cuda, step_time: 50ms, model: {input: 4096, hidden: 0, layers: 4, classes: 100}}
run: {epochs: 3, warmup_steps: 2, verify: true}
variants:
  compute_bound: {}
  starved: {storage: {bandwidth: 400MB/s}}
EOF
summary() {  # the job's and each rank's idle, sync and all-reduce from a result JSON
  python3 - "$@" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    for v in json.load(open(path))["variants"]:
        ranks = v.get("ranks", [])
        g = v.get("gpu", {}).get("allreduce", {})
        line = (f"RESULT {path.split('/')[-1]} {v['name']}: idle {100*v['gpu_idle_fraction']:.1f}% "
                f"stall sync {v['stall_seconds'].get('sync', 0):.2f}s bottleneck {v['bottleneck']['stage']}")
        if g.get("bytes"):
            line += f" | all-reduce {g['seconds']:.3f}s {g['bytes']/1e9:.2f} GB {g['bytes_per_second']/1e9:.1f} GB/s"
        for r in ranks:
            line += (f" | rank {r['rank']} idle {100*r['gpu_idle_fraction']:.1f}% "
                     f"sync {r['stall_seconds']['sync']:.2f}s fetch {r['stall_seconds']['fetch']:.2f}s "
                     f"pre {r['stall_seconds']['preprocess']:.2f}s ar {r.get('allreduce_seconds', 0):.3f}s")
        print(line)
EOF
}

gpus=$(nvidia-smi -L | grep -c '^GPU')
results=("$OUT/emulated.json" "$OUT/simulate.json")
if [ "$gpus" -ge 2 ]; then
  echo "== 3-4. compute-bound and starved, 1 x 2 on CUDA (NCCL)"
  t0=$SECONDS
  $MPI -np 2 "$S" run "$OUT/dp.yaml" --json "$OUT/cuda.json" | tee "$OUT/cuda.txt"
  echo "($((SECONDS - t0)) s)"
  results+=("$OUT/cuda.json" "$OUT/straggler.json")
else
  echo "== 3-4. $gpus GPU(s): no CUDA 1 x 2 runs; two ranks on CUDA are refused:"
  $MPI -np 2 "$S" run "$OUT/dp.yaml" --quiet
  echo "(exit $?)"
fi
echo "== 4b. the same, emulated devices"
$MPI -np 2 "$S" run "$OUT/dp.yaml" --set gpu.device=emulated --json "$OUT/emulated.json" --quiet \
  > "$OUT/emulated.txt"
echo "== 4c. simulate, 1 x 2"
"$S" simulate "$OUT/dp.yaml" --set gpu.device=emulated --set cluster.gpus_per_node=2 \
  --json "$OUT/simulate.json" --quiet > "$OUT/simulate.txt"

if [ "$gpus" -ge 2 ]; then
  echo "== 5. rank 1's loader slowed (1 worker, 1 ms of extra CPU per sample)"
  $MPI -np 1 "$S" run "$OUT/dp.yaml" --variant compute_bound --json "$OUT/straggler.json" --quiet \
    : -np 1 "$S" run "$OUT/dp.yaml" --variant compute_bound --quiet \
    --set loader.workers=1 --set loader.preprocess.cost=1ms | tee "$OUT/straggler.txt"
fi

echo "== 6. summary"
summary "${results[@]}"
