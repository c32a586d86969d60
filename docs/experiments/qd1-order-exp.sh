#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle built from a tree with
# docs/experiments/probe-read-shuffled.patch applied (an experiment-only SS_ORDER switch: the
# directory measure's passes read their files in a seeded shuffle, as a run's epoch does):
#   git apply docs/experiments/probe-read-shuffled.patch && ninja -C build stallscope &&
#   BUNDLE_BINS='^stallscope$' tools/bundle.sh build bundle; carry ["bundle"]
#   bash docs/experiments/qd1-order-exp.sh   (2026-12-07)
# Does the read order explain why cold-qd1 is predicted 5-12 pp low on a GPU host?
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data
lscpu | grep 'Model name'; date -u
[ -d $D ] || { $B gen --samples 2000 --quiet "$D"; sync; }
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
python3 $PWD/docs/experiments/qd1-read-order.py $D
fps(){ python3 -c "import json;d=json.load(open('/tmp/b.json'));print('%.0f files/s p50 %.1f us' % (d['files_per_second'], d['latency_seconds']['p50']*1e6))"; }
echo "whole-directory passes at depth 1, listing and shuffled order alternated:"
for k in 1 2 3 4 5; do for o in listing shuffle; do
  SS_ORDER=$o $B bench-dir $D --cold --io-depth 1 --io-threads 1 --quiet --json /tmp/b.json >/dev/null 2>&1; echo "$o $(fps)"
done; done
val(){ python3 -c "import json;v=json.load(open('$1'))['variants'][0];print(round(v['gpu_idle_fraction']*100,1))"; }
for round in 1 2 3 4; do for v in cold-qd1 direct-qd1; do
  flags="--cold --io-depth 1"; [ $v = direct-qd1 ] && flags="$flags --direct"
  line="$(date -u +%T) $v"
  for o in listing shuffle; do
    SS_ORDER=$o $B calibrate --dir $D $flags -o /tmp/p-$o.yaml >/dev/null 2>&1
    p50=$(grep -oE "p50: [0-9.]+" /tmp/p-$o.yaml | cut -d' ' -f2)
    $B simulate scenarios/real_directory.yaml --variant $v --set dataset.path=$D --set storage.profile=/tmp/p-$o.yaml --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    line="$line | $o p50 ${p50}us pred $(val /tmp/s.json)"
  done
  line="$line | runs"
  for k in 1 2 3; do
    $B run scenarios/real_directory.yaml --variant $v --set dataset.path=$D --quiet --json /tmp/r.json >/dev/null 2>&1
    line="$line $(val /tmp/r.json)"
  done
  echo "$line"
done; done
date -u
