#!/usr/bin/env bash
# tools/gpu_qd1_where.sh (issue #18), on a GPU host from the repository root with a bundle
# carried (see tools/gpu_advise_verify.sh): where real_directory's direct-qd1 loses its reads'
# pace. Each line: real run (2 runs) and simulate, GPU idle and the verdict's per-stage
# capacities (samples/s), for the variant as shipped, without preprocessing, with 1 worker, on
# 2 cores (taskset -c 0,1), and as shipped on 8 cores.
set -u
OUT=${OUT:-/tmp/qd1-where-out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/bundle/lib
D=$PWD/qd1-data
date -u
$PWD/bundle/bin/stallscope gen --samples 2000 --quiet "$D"
show() {  # label json
  python3 - "$1" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[2]))["variants"][0]
c = v["bottleneck"]["capacity_samples_per_second"]
print(f"{sys.argv[1]:34s} idle {v['gpu_idle_fraction']*100:5.1f}%  " +
      "  ".join(f"{k} {c[k]:8.0f}" for k in ("fetch", "preprocess", "transfer")))
PY
}
for cpus in 0,1 0-7; do
  B="taskset -c $cpus $PWD/bundle/bin/stallscope"
  $B calibrate -o "$OUT/node-$cpus.yaml" 2>&1 | tail -1
  $B calibrate --dir "$D" --cold --direct --io-depth 1 -o "$OUT/p-$cpus.yaml" 2>&1 | grep -E 'bandwidth|busy|disturbed'
  for extra in "" "--set loader.preprocess={kind: none, cost: 0s}" "--set loader.workers=1"; do
    [ "$cpus" = 0-7 ] && [ -n "$extra" ] && continue
    S=(scenarios/real_directory.yaml --variant direct-qd1 --set dataset.path=$D --set run.epochs=4)
    [ -n "$extra" ] && S+=(--set "${extra#--set }")
    for k in 1 2; do
      $B run "${S[@]}" --quiet --json "$OUT/r.json" >/dev/null 2>&1; show "cpus $cpus run $k ${extra#--set }" "$OUT/r.json"
    done
    $B simulate "${S[@]}" --set storage.profile="$OUT/p-$cpus.yaml" --set cluster.node.profile="$OUT/node-$cpus.yaml" --quiet --json "$OUT/s.json" >/dev/null 2>&1
    show "cpus $cpus simulate ${extra#--set }" "$OUT/s.json"
  done
done
date -u
