#!/usr/bin/env bash
# tools/gpu_qd1_wake.sh (issue #18), on a GPU host with a bundle carried: direct-qd1 without
# preprocessing (so no worker competes for the cores) on 2, 4 and 8 cores, and on 2 cores
# beside a nice-19 busy thread per core (which yields to every loader thread but keeps the
# cores out of idle): does the loader's one-at-a-time read lose its pace to idle cores' wake-ups
# or to its own threads? GPU idle and the fetch stage's capacity (samples/s), 2 runs each.
set -u
OUT=${OUT:-/tmp/qd1-wake-out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/bundle/lib
D=$PWD/qd1-data
[ -d "$D" ] || $PWD/bundle/bin/stallscope gen --samples 2000 --quiet "$D"
one() {  # label cpus extra-sets...
  local label=$1 cpus=$2; shift 2
  for k in 1 2; do
    taskset -c "$cpus" $PWD/bundle/bin/stallscope run scenarios/real_directory.yaml --variant direct-qd1 \
      --set dataset.path=$D --set run.epochs=4 --set 'loader.preprocess={kind: none, cost: 0s}' "$@" \
      --quiet --json "$OUT/r.json" >/dev/null 2>&1
    python3 -c "
import json; v = json.load(open('$OUT/r.json'))['variants'][0]
print(f\"{'$label':44s} idle {v['gpu_idle_fraction']*100:5.1f}%  fetch {v['bottleneck']['capacity_samples_per_second']['fetch']:7.0f}/s\")"
  done
}
date -u
one "2 cores" 0,1
one "4 cores" 0-3
one "8 cores" 0-7
one "2 cores, run.verify false, 1 worker" 0,1 --set run.verify=false --set loader.workers=1
for c in 0 1; do taskset -c $c nice -n 19 sh -c 'while :; do :; done' & done
sleep 0.5
one "2 cores beside nice-19 busy threads" 0,1
kill %1 %2 2>/dev/null; wait 2>/dev/null
one "2 cores again" 0,1
date -u
