#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle built from a tree with
# docs/experiments/probe-qd1-sched.patch applied (experiment-only switches: SS_WNICE=n runs
# the loader's workers at nice n, -1 SCHED_BATCH; SS_SNICE the same for the directory probe's
# busy neighbours; SS_BUFS as in qd1-buffers-exp.sh). carry ["bundle"]
#   bash docs/experiments/qd1-nice-exp.sh   (2026-12-07)
# At each batch's start both workers wake to its chunks and the I/O thread waits ~2.9 ms
# for a core on the GPU host (run traces, 2026-12-07): do lower-priority workers let it read?
set -u
source docs/experiments/qd1-common.sh
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
S="scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D"
for round in $(seq 1 ${ROUNDS:-2}); do
  for n in ${NICES:-0 5 19 -1}; do
    SS_SNICE=$n SS_BUFS=${BUFS:-1} $B calibrate --dir $D --cold --io-depth 1 -o /tmp/p.yaml >/dev/null 2>&1
    w=$(grep -oE "read_wait_busy: [0-9.]+" /tmp/p.yaml | cut -d' ' -f2)
    $B simulate $S --set storage.profile=/tmp/p.yaml --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    line="$(date -u +%T) nice $n wait_busy ${w}us pred $(val /tmp/s.json) | runs"
    for k in 1 2 3; do
      tr=(); [ $round$k = 11 ] && tr=(--trace $O/run-n$n.json)
      SS_WNICE=$n $B run $S --quiet --json /tmp/r.json "${tr[@]}" >/dev/null 2>&1; line="$line $(val /tmp/r.json)"
    done
    echo "$line"
  done
done
python3 docs/experiments/qd1-trace-sum.py $O/run-n*.json 2>&1 | cut -c1-400
date -u
