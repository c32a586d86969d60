#!/usr/bin/env bash
# Run from the repository root on a GPU host with the bundle of qd1-slice-exp.sh; carry ["bundle"]
#   bash docs/experiments/qd1-iolog-probe-exp.sh   (2026-12-07)
# The I/O thread's time per read (on a core / waiting for one / asleep) in each phase of
# `calibrate --dir` (one reader per phase, files in the order the phases run) beside the runs'.
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data; L=/tmp/iolog-probe; rm -rf $L; mkdir -p $L
[ -d $D ] || { $B gen --samples 2000 --quiet "$D"; sync; }
S="scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D"
for sl in ${SLICES:-100 0}; do
  if [ $sl = 0 ]; then unset SS_IOSLICE; else export SS_IOSLICE=$sl; fi
  SS_IOLOG=$L/probe-$sl $B calibrate --dir $D --cold --io-depth 1 -o /tmp/p.yaml >/dev/null 2>&1
  echo "slice $sl probe phases (p50 $(grep -oE 'p50: [0-9.]+' /tmp/p.yaml), wait_busy $(grep -oE 'read_wait_busy: [0-9.]+' /tmp/p.yaml)):"
  python3 docs/experiments/qd1-iolog-sum.py --split 15 $(ls -tr $L/probe-$sl.*) | grep -v "^ "
  for k in 1 2; do
    SS_IOLOG=$L/run-$sl-$k $B run $S --set gpu.device=emulated --quiet --json /tmp/r.json >/dev/null 2>&1
    python3 docs/experiments/qd1-iolog-sum.py $L/run-$sl-$k.*
  done
done
