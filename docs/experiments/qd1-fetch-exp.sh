#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle (carry ["bundle"]):
#   bash docs/experiments/qd1-fetch-exp.sh   (2026-12-07)
# cold-qd1 on a GPU host's 2 cores: the prediction and the runs side by side with the fetch
# stage's capacity (samples / time with a batch being read), for the variant as shipped,
# without verification, with 8 epochs, and with neither verification nor preprocessing.
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data
lscpu | grep 'Model name'; date -u
[ -d $D ] || { $B gen --samples 2000 --quiet "$D"; sync; }
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
val(){ python3 -c "import json;v=json.load(open('$1'))['variants'][0];print('idle %.1f fetchcap %.0f sps %.0f wall %.3f' % (v['gpu_idle_fraction']*100, v['bottleneck']['capacity_samples_per_second'].get('fetch',0), v['samples_per_second'], v.get('wall_seconds',0)))"; }
S="scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D"
for round in 1 2; do
  $B calibrate --dir $D --cold --io-depth 1 -o /tmp/p.yaml >/dev/null 2>&1
  grep -E "p50|cpu_per_read|host_per_read|read_wait|evict" /tmp/p.yaml | tr -s ' ' | tr '\n' ' '; echo
  for set in "run.verify=true" "run.verify=false" "run.epochs=8" "loader.preprocess.kind=none,run.verify=false"; do
    sa=(); IFS=, read -ra kv <<< "$set"; for x in "${kv[@]}"; do sa+=(--set "$x"); done
    $B simulate $S "${sa[@]}" --set storage.profile=/tmp/p.yaml --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    line="$set | pred $(val /tmp/s.json) | runs"
    for k in 1 2 3; do
      $B run $S "${sa[@]}" --quiet --json /tmp/r.json >/dev/null 2>&1
      line="$line ; $(val /tmp/r.json)"
    done
    echo "$(date -u +%T) $line"
  done
done
date -u
