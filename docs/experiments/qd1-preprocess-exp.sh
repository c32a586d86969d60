#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle (BUNDLE_BINS='^stallscope$' tools/bundle.sh
# build bundle; carry ["bundle"]): bash docs/experiments/qd1-preprocess-exp.sh (2026-12-07).
# cold-qd1 on a GPU host's 2 cores: is the missing read time the workers' interference?
# A: the variant as shipped (normalize, 2 workers); B: preprocess none. Sims from one profile.
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data
lscpu | grep 'Model name'; date -u
$B gen --samples 2000 --quiet "$D"
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
val(){ python3 -c "import json;v=json.load(open('$1'))['variants'][0];print(round(v['gpu_idle_fraction']*100,1), round(v.get('samples_per_second',0)))"; }
for v in cold-qd1 direct-qd1; do
  flags="--cold --io-depth 1"; [ $v = direct-qd1 ] && flags="$flags --direct"
  $B calibrate --dir $D $flags -o /tmp/p.yaml 2>&1 | tail -2
  grep -E "p50|read_wait|cpu_per_read|host_per_read|evict" /tmp/p.yaml | tr -s ' ' | tr '\n' ' '; echo
  for set in "" "loader.preprocess.kind=none" "loader.workers=1"; do
    sa=(); [ -n "$set" ] && sa=(--set "$set")
    $B simulate scenarios/real_directory.yaml --variant $v --set dataset.path=$D --set storage.profile=/tmp/p.yaml "${sa[@]}" --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    echo "$v ${set:-shipped} predicted $(val /tmp/s.json)"
  done
  for k in 1 2 3; do for set in "" "loader.preprocess.kind=none" "loader.workers=1"; do
    sa=(); [ -n "$set" ] && sa=(--set "$set")
    $B run scenarios/real_directory.yaml --variant $v --set dataset.path=$D "${sa[@]}" --quiet --json /tmp/r.json >/dev/null 2>&1
    echo "$v ${set:-shipped} run $(val /tmp/r.json)"
  done; done
done
date -u
