#!/usr/bin/env bash
# Run from the repository root on a GPU host with a bundle built from a tree with
# docs/experiments/probe-qd1-sched.patch applied (an experiment-only SS_BUFS switch: at
# depth 1 the directory measure reads each file into the next of N buffers, touched first, as
# the loader reads into its batches' slots, in place of one buffer over and over):
#   git apply docs/experiments/probe-qd1-sched.patch && ninja -C build stallscope &&
#   BUNDLE_BINS='^stallscope$' tools/bundle.sh build bundle; carry ["bundle"]
#   bash docs/experiments/qd1-buffers-exp.sh   (2026-12-07)
# A buffered read copies the file from the page cache into the buffer: does a cold (rotating)
# buffer make the probe's reads as slow as the run's?
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data
lscpu | grep -E "Model name|Thread|Core|Socket"; lscpu -e | head -5; uname -r; date -u
[ -d $D ] || { $B gen --samples 2000 --quiet "$D"; sync; }
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
fps(){ python3 -c "import json;d=json.load(open('/tmp/b.json'));print('%.0f files/s p50 %.1f us' % (d['files_per_second'], d['latency_seconds']['p50']*1e6))"; }
for k in 1 2 3 4; do for n in 1 256; do
  SS_BUFS=$n $B bench-dir $D --cold --io-depth 1 --io-threads 1 --quiet --json /tmp/b.json >/dev/null 2>&1; echo "bufs $n $(fps)"
done; done
val(){ python3 -c "import json;v=json.load(open('$1'))['variants'][0];print('%.1f/%.0f' % (v['gpu_idle_fraction']*100, v['bottleneck']['capacity_samples_per_second'].get('fetch',0)))"; }
S="scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D"
for round in $(seq 1 ${ROUNDS:-3}); do
  line="$(date -u +%T) idle%/fetchcap"
  for n in 1 256; do
    SS_BUFS=$n $B calibrate --dir $D --cold --io-depth 1 -o /tmp/p.yaml >/dev/null 2>&1
    p50=$(grep -oE "p50: [0-9.]+" /tmp/p.yaml | cut -d' ' -f2)
    $B simulate $S --set storage.profile=/tmp/p.yaml --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1
    line="$line | bufs $n p50 ${p50}us pred $(val /tmp/s.json)"
  done
  line="$line | runs"
  for k in 1 2 3; do
    $B run $S --quiet --json /tmp/r.json >/dev/null 2>&1; line="$line $(val /tmp/r.json)"
  done
  echo "$line"
done
date -u
