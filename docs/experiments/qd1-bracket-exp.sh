#!/usr/bin/env bash
# bash docs/experiments/qd1-bracket-exp.sh [ROUNDS] (2026-12-07 14:30 UTC session), from the
# repository root; on a GPU host with a bundle carried (see qd1-common.sh).
# Each round: a fresh probe (calibrate --dir, as the variant's comment says), the prediction
# from it, one real run of the shipped variant, a second probe right after and its prediction.
# If the directory's pace drifts between a probe and the run, the two probes disagree and the
# run sits nearer one of them; if the model is biased, both miss on the same side. Keeps each
# round's profiles and run in $OUT ($v-$k-{a,b}.yaml, $v-$k-r.json) to simulate again later.
set -u
. docs/experiments/qd1-common.sh
N=${1:-5}  # EXTRA: more --set flags for the runs and the simulations
$B calibrate -o $O/node.yaml 2>&1 | tail -1
R="scenarios/real_directory.yaml --set dataset.path=$D ${EXTRA:-}"; S="$R --node-profile $O/node.yaml"
probe(){  # $1 variant, $2 out
  local f="--cold --io-depth 1"; [ $1 = direct-qd1 ] && f="$f --direct"
  $B calibrate --dir $D $f -o $2 >/dev/null 2>&1
  $B simulate $S --variant $1 --set storage.profile=$2 --json $O/s.json --quiet >/dev/null 2>&1
  echo "$(grep -oE 'p50: [0-9.]+[a-z]*' $2 | head -1) busy $(grep -oE 'read_wait_busy: [0-9.]+' $2 | cut -d' ' -f2) pred $(val $O/s.json)"
}
for v in cold-qd1 direct-qd1; do
  echo "== $v: before | run | after (idle %/fetch samples/s)"
  for k in $(seq 1 $N); do
    a=$(probe $v $O/$v-$k-a.yaml)
    $B run $R --variant $v --quiet --json $O/$v-$k-r.json >/dev/null 2>&1
    r=$(val $O/$v-$k-r.json)
    b=$(probe $v $O/$v-$k-b.yaml)
    echo "$(date -u +%T) [$a] run $r [$b]"
  done
done
date -u
