#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle (carry ["bundle"]):
#   bash docs/experiments/qd1-trace-exp.sh   (2026-12-07)
# cold-qd1 on a GPU host's 2 cores: a simulation's trace beside the runs' traces, summarized by
# qd1-trace-sum.py (span medians, gaps between reads, stalls by stage). Traces go to $OUT.
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data; O=${OUT:-/tmp}
lscpu | grep -E "Model name|Thread|Core|Socket"; lscpu -e | head -5; uname -r; cat /sys/kernel/debug/sched/base_slice_ns 2>/dev/null; date -u
[ -d $D ] || { $B gen --samples 2000 --quiet "$D"; sync; }
$B calibrate -o $O/node.yaml 2>&1 | tail -1
S="scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D"
val(){ python3 -c "import json;v=json.load(open('$1'))['variants'][0];print('idle %.1f' % (v['gpu_idle_fraction']*100))"; }
for round in $(seq 1 ${ROUNDS:-2}); do
  $B calibrate --dir $D --cold --io-depth 1 -o $O/p$round.yaml >/dev/null 2>&1
  for kind in normalize none; do
    $B simulate $S --set loader.preprocess.kind=$kind --set storage.profile=$O/p$round.yaml --node-profile $O/node.yaml --json /tmp/s.json --trace $O/sim$round-$kind.json --quiet >/dev/null 2>&1
    echo "round $round $kind predicted $(val /tmp/s.json)"
  done
  for k in 1 2; do for dev in cuda emulated none; do
    sa=(--set gpu.device=$dev); [ $dev = none ] && sa=(--set loader.preprocess.kind=none); $B run $S "${sa[@]}" --quiet --json /tmp/r.json --trace $O/run$round-$k-$dev.json >/dev/null 2>&1
    echo "run $round-$k $dev $(val /tmp/r.json)"
  done; done
done
python3 docs/experiments/qd1-trace-sum.py $O/sim*.json $O/run*.json
date -u
