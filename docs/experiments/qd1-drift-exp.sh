#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle (BUNDLE_BINS='^stallscope$' tools/bundle.sh
# build bundle; carry ["bundle"]): bash docs/experiments/qd1-drift-exp.sh (2026-12-07).
# Does a cold read at a time slow down over a minute of reading on this host (the disk's pace
# drifting), and does the prediction follow a fresh probe? cold-qd1 with preprocess none.
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data
lscpu | grep 'Model name'; date -u
[ -d $D ] || $B gen --samples 2000 --quiet "$D"
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
pass(){ $B bench-dir $D --cold --io-depth 1 --io-threads 1 --quiet --json /tmp/b.json >/dev/null 2>&1; python3 -c "import json;d=json.load(open('/tmp/b.json'));print('%.0f files/s' % d.get('files_per_second', 0))" 2>/dev/null || python3 -c "import json;print(list(json.load(open('/tmp/b.json')).keys()))"; }
python3 $PWD/docs/experiments/qd1-read-order.py $D
echo "passes alone, back to back:"; for k in $(seq 1 20); do echo "$(date -u +%T.%N | cut -c1-12) $(pass)"; done
val(){ python3 -c "import json;v=json.load(open('$1'))['variants'][0];print(round(v['gpu_idle_fraction']*100,1), round(v.get('samples_per_second',0)))"; }
for k in 1 2 3 4 5; do
  $B calibrate --dir $D --cold --io-depth 1 -o /tmp/p.yaml >/dev/null 2>&1
  p50=$(grep -oE "p50: [0-9.]+" /tmp/p.yaml)
  $B simulate scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D --set storage.profile=/tmp/p.yaml --set loader.preprocess.kind=none --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
  s=$(val /tmp/s.json)
  $B run scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D --set loader.preprocess.kind=none --quiet --json /tmp/r.json >/dev/null 2>&1
  echo "$(date -u +%T) probe $p50 predicted $s run $(val /tmp/r.json) then pass $(pass)"
done
date -u
