#!/usr/bin/env bash
# tools/gpu_checkpoint.sh: checkpoints (#17) on a GPU host. Run from the repository root there,
# after `BUNDLE_BINS='^(stallscope|checkpoint_test)$' tools/bundle.sh build bundle` here (the
# bundle carried): the checkpoint scenario on the CUDA device (device-to-host snapshots)
# against `simulate`, the same on the emulated device, the in-process checkpoint tests on that
# host's cores, and a 1 x 2 mpirun run against `simulate`.
set -u
source bundle/env.sh
B=bundle/bin/stallscope
S=bundle/scenarios/checkpoint.yaml
OUT=${OUT:-/tmp}
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
echo "== run cuda"; $B run $S --set gpu.device=cuda --json $OUT/ckpt-cuda.json --quiet 2>&1
echo "== simulate cuda"; $B simulate $S --set gpu.device=cuda --json $OUT/ckpt-cuda-sim.json --quiet 2>&1
echo "== run emulated"; $B run $S --set gpu.device=emulated --quiet 2>&1 | grep -E "GPU idle|stall checkpoint"
echo "== simulate emulated"; $B simulate $S --set gpu.device=emulated --quiet 2>&1 | grep -E "GPU idle|stall checkpoint"
# The test finds the scenarios by this repository's absolute path on the build machine.
mkdir -p /work; [ -e /work/main ] || ln -s "$PWD" /work/main
echo "== checkpoint_test (in-process cases)"
bundle/bin/checkpoint_test --gtest_filter='Checkpoint.*' 2>&1 | grep -E "OK \]|FAILED|Failure|idle real"
cat > /tmp/mr.yaml <<'Y'
name: mr
dataset: {samples: 6400, sample_size: 16KiB}
storage: {kind: simulated, bandwidth: 200MB/s}
loader: {batch_size: 32, prefetch: 4, workers: 1, preprocess: none}
gpu: {device: emulated, step_time: 10ms}
run: {epochs: 1}
cluster: {nodes: 1, gpus_per_node: 2}
cache: {scope: rank}
checkpoint: {every: 25, size: 64MiB, mode: sync}
variants:
  sync: {}
  async: {checkpoint.mode: async}
Y
echo "== mpirun 1x2 emulated"
mpirun --bind-to none -np 2 $B run /tmp/mr.yaml --quiet 2>&1 | grep -E "GPU idle|stall sync|stall checkpoint|^rank"
echo "== simulate 1x2"; $B simulate /tmp/mr.yaml --quiet 2>&1 | grep -E "GPU idle|stall sync|stall checkpoint"
