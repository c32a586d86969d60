#!/usr/bin/env bash
# tools/gpu_jpeg_ceiling.sh [BUNDLE] (issue #19), on a GPU host: the JPEG pipeline against the
# decode ceiling on the same 2 cores (taskset -c 0,1), on the emulated device (its input copy
# is CPU work) and on the CUDA device (the copy is a DMA), each normalized on the host and with
# `normalize_on: device` (the crop's pixels handed over), alternated, 3 rounds. BUNDLE
# (default bundle/) holds stallscope and tools/ceiling with their libraries:
#   BUNDLE_BINS='^stallscope$' tools/bundle.sh build bundle && cp build/tools/ceiling bundle/bin
#   (and ceiling's libraries into bundle/lib where stallscope's lack them)
set -u
B=${1:-bundle}
export LD_LIBRARY_PATH=$B/lib
S=$B/bin/stallscope; C=$B/bin/ceiling
date -u; nvidia-smi -L; nproc; lscpu | grep "Model name"
D=/tmp/jpeg; $S gen $D --samples 20000 --format jpeg --size 256x256 --classes 100 --quiet
scen() { cat > /tmp/s-$1-$3.yaml <<Y
name: jpeg-$1-$3
dataset: {path: $D}
storage: {kind: directory}
loader: {batch_size: 256, workers: 2, prefetch: 4, preprocess: {kind: jpeg-decode, normalize_on: $3}}
gpu: {device: $1, step_time: $2}
run: {epochs: 3, verify: false}
Y
}
for on in host device; do scen emulated 0ms $on; scen cuda 1ms $on; done
rate() { taskset -c 0,1 $S run /tmp/s-$1.yaml --quiet --json /tmp/r-$1.json > /dev/null 2>/tmp/err-$1 || { tail -3 /tmp/err-$1; return; }
  python3 -c "import json,statistics;v=json.load(open('/tmp/r-$1.json'))['variants'][0];print('$1', round(statistics.mean([e['samples_per_second'] for e in v['epochs'][1:]])), 'idle', round(v['gpu_idle_fraction'],3), 'h2d_bytes', (v.get('gpu') or {}).get('h2d',{}).get('bytes',''))"; }
for i in 1 2 3; do
  taskset -c 0,1 $C $D --mode jpeg --threads 2 | tail -1
  for on in host device; do rate emulated-$on; rate cuda-$on; done
done
for i in 1 2; do taskset -c 0,1 $C $D --mode jpeg --threads 2 | tail -1; done
