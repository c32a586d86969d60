#!/usr/bin/env bash
# tools/gpu_jpeg_io_threads.sh (issue #19), on a GPU host from the repository root, with the
# bundle of tools/gpu_jpeg_ceiling.sh carried; results in docs/gpu/h100-2026-12-06-qd1-busy-reads.log.
# JPEG pipeline on 2 cores (taskset -c 0,1): the new default (2 I/O threads, depth 64) against
# 16 I/O threads at depth 256 (what hardware_concurrency gave under taskset), alternated.
set -u
B=bundle; export LD_LIBRARY_PATH=$B/lib; S=$B/bin/stallscope; C=$B/bin/ceiling
D=/tmp/jpeg; [ -d $D ] || $S gen $D --samples 20000 --format jpeg --size 256x256 --classes 100 --quiet
cat > /tmp/s-e.yaml <<Y
name: jpeg-e
dataset: {path: $D}
storage: {kind: directory}
loader: {batch_size: 256, workers: 2, prefetch: 4, preprocess: {kind: jpeg-decode}}
gpu: {device: emulated, step_time: 0ms}
run: {epochs: 3, verify: false}
Y
rate() { taskset -c 0,1 $S run /tmp/s-e.yaml --quiet --json /tmp/r.json "$@" > /dev/null 2>/tmp/err || { tail -3 /tmp/err; return; }
  python3 -c "import json,statistics;v=json.load(open('/tmp/r.json'))['variants'][0];print('$*', round(statistics.mean([e['samples_per_second'] for e in v['epochs'][1:]])))"; }
for i in 1 2 3; do
  taskset -c 0,1 $C $D --mode jpeg --threads 2 | tail -1
  rate --set loader.io_threads=2 --set loader.io_depth=64
  rate --set loader.io_threads=16 --set loader.io_depth=256
  rate --set loader.io_threads=2 --set loader.io_depth=256
done
