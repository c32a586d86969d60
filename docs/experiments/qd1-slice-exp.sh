#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle built with
# docs/experiments/probe-qd1-sched.patch (SS_IOSLICE=us: the I/O thread asks EEVDF for that
# slice through sched_setattr; SS_BLOCKSYNC: cudaDeviceScheduleBlockingSync; SS_IOLOG as in
# qd1-iolog-sum.py); carry ["bundle"].   bash docs/experiments/qd1-slice-exp.sh (2026-12-07)
# The workers wake at a batch's start and hold both cores for a whole slice (3 ms with 16 CPUs
# online, 1.5 ms with 2) while the I/O thread waits: does a short slice for it help, and does
# the directory probe's read_wait_busy then predict the runs?
set -u
source docs/experiments/qd1-common.sh
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
V=${VARIANT:-cold-qd1}; PF=; [ $V = direct-qd1 ] && PF=--direct
S="scenarios/real_directory.yaml --variant $V --set dataset.path=$D"
for round in $(seq 1 ${ROUNDS:-2}); do
  for sl in ${SLICES:-0 100}; do
    if [ $sl = 0 ]; then unset SS_IOSLICE; else export SS_IOSLICE=$sl; fi
    $B calibrate --dir $D --cold $PF --io-depth 1 -o /tmp/p.yaml >/dev/null 2>&1
    w=$(grep -oE "read_wait_busy: [0-9.]+" /tmp/p.yaml | cut -d' ' -f2)
    $B simulate $S --set storage.profile=/tmp/p.yaml --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    line="$(date -u +%T) $V slice $sl wait_busy ${w}us pred $(val /tmp/s.json) | emulated"
    for k in 1 2 3; do
      SS_IOLOG=$O/io-$round-$sl-$k $B run $S --set gpu.device=emulated --quiet --json /tmp/r.json >/dev/null 2>&1; line="$line $(val /tmp/r.json)"
    done
    line="$line | cuda blocking sync"
    for k in $(seq 1 ${CUDA_RUNS:-2}); do
      SS_BLOCKSYNC=1 $B run $S --set gpu.device=cuda --quiet --json /tmp/r.json >/dev/null 2>&1; line="$line $(val /tmp/r.json)"
    done
    echo "$line"
    [ $round = 1 ] && [ -z "${QUIET_IO:-}" ] && python3 docs/experiments/qd1-iolog-sum.py $O/io-$round-$sl-*.*
  done
done
rm -f $O/io-2-*
date -u
