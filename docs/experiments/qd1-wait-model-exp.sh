#!/usr/bin/env bash
# Run from the repository root, on this VM (build/) or a GPU host (a bundle of the product:
# BUNDLE_BINS='^stallscope$' tools/bundle.sh build bundle; carry ["bundle"]):
#   bash docs/experiments/qd1-wait-model-exp.sh   (2026-12-07)
# With loader.io_slice (the I/O thread's short slice) the runs' reads wait for a core about as
# processor sharing says (cpu_per_read x (runnable - cores) / cores): does the model predict the
# qd1 runs better with the probe's read_wait_busy/partial, or with those set to 0 (the
# simulator then charges processor sharing)? Idle %/fetch capacity samples/s.
set -u
source docs/experiments/qd1-common.sh
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
for V in ${VARIANTS:-cold-qd1 direct-qd1}; do
  PF=; [ $V = direct-qd1 ] && PF=--direct
  S="scenarios/real_directory.yaml --variant $V --set dataset.path=$D"
  for round in $(seq 1 ${ROUNDS:-2}); do
    $B calibrate --dir $D --cold $PF --io-depth 1 -o /tmp/p.yaml >/dev/null 2>&1
    sed -E 's/read_wait_(busy|partial): [0-9.]+us/read_wait_\1: 0us/' /tmp/p.yaml > /tmp/p0.yaml
    $B simulate $S --set storage.profile=/tmp/p.yaml --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    a=$(val /tmp/s.json)
    $B simulate $S --set storage.profile=/tmp/p0.yaml --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    b=$(val /tmp/s.json)
    line="$(date -u +%T) $V cpu_per_read $(grep -oE 'cpu_per_read: [0-9.]+' /tmp/p.yaml | cut -d' ' -f2)us wait_busy $(grep -oE 'read_wait_busy: [0-9.]+' /tmp/p.yaml | cut -d' ' -f2)us | pred $a, processor sharing $b | runs"
    for k in 1 2 3; do
      $B run $S --set gpu.device=emulated --quiet --json /tmp/r.json >/dev/null 2>&1; line="$line $(val /tmp/r.json)"
    done
    echo "$line"
  done
done
date -u
