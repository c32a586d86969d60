#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle built with
# docs/experiments/probe-qd1-sched.patch applied (its SS_IOLOG and SS_WNICE switches); carry ["bundle"]
#   bash docs/experiments/qd1-iolog-exp.sh   (2026-12-07)
# Where does the I/O thread's time go in cold-qd1 runs: on a core, waiting for one, asleep?
set -u
source docs/experiments/qd1-common.sh
S="scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D"
for k in 1 2; do for cfg in "0 cuda" "0 emulated" "19 cuda" "0 none"; do
  set -- $cfg; sa=(--set gpu.device=$2); [ $2 = none ] && sa=(--set loader.preprocess.kind=none)
  SS_WNICE=$1 SS_IOLOG=$O/io-$k-$1-$2 $B run $S "${sa[@]}" --quiet --json /tmp/r.json >/dev/null 2>&1
  echo "run $k nice $1 $2 $(val /tmp/r.json)"
  python3 docs/experiments/qd1-iolog-sum.py $O/io-$k-$1-$2.*
done; done
date -u
