#!/usr/bin/env bash
# tools/gpu_qd1_busy_reads.sh (issue #18), on a GPU host from the repository root, with a
# bundle (BUNDLE_BINS='^stallscope$' tools/bundle.sh build bundle) carried; results in
# docs/gpu/h100-2026-12-06-qd1-busy-reads.log.
# direct-qd1 on 2 cores of a GPU host: calibrate --dir's busy-host measure, simulate vs run.
set -u
OUT=${OUT:-/tmp/qd1-out}; mkdir -p "$OUT"  # the device tool sets OUT
export LD_LIBRARY_PATH=$PWD/bundle/lib
B="taskset -c 0,1 $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data
df -T . | tail -1; nproc; lscpu | grep 'Model name'; uname -r
$B gen --samples 2000 --quiet $D
$B calibrate -o $OUT/node.yaml 2>&1 | tail -1; grep cores: $OUT/node.yaml
for i in 1 2 3; do
  $B calibrate --dir $D --cold --direct --io-depth 1 -o $OUT/p$i.yaml 2>&1 | tail -2 | head -1
  grep -v -E '^  (host_per_read|read_wait_busy)' $OUT/p$i.yaml > $OUT/p$i-old.yaml
  for p in p$i p$i-old; do
    echo "$p simulate: $($B simulate scenarios/real_directory.yaml --variant direct-qd1 --set dataset.path=$D --set run.epochs=6 --set storage.profile=$OUT/$p.yaml --set cluster.node.profile=$OUT/node.yaml 2>&1 | grep 'GPU idle')"
  done
  echo "run: $($B run scenarios/real_directory.yaml --variant direct-qd1 --set dataset.path=$D --set run.epochs=6 2>&1 | grep -E 'GPU idle')"
done
$B calibrate --dir $D --cold --io-depth 1 -o $OUT/c.yaml 2>&1 | tail -2 | head -1
$B advise scenarios/real_directory.yaml --variant cold-qd1 --set dataset.path=$D --set storage.profile=$OUT/c.yaml --set cluster.node.profile=$OUT/node.yaml --au 0.95 --verify --top 1 2>&1 | grep -E 'verify'
$B advise scenarios/real_directory.yaml --variant direct-qd1 --set dataset.path=$D --set storage.profile=$OUT/p3.yaml --set cluster.node.profile=$OUT/node.yaml --au 0.95 --verify --top 1 2>&1 | grep -E 'verify'
