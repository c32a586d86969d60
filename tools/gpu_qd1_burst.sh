#!/usr/bin/env bash
# tools/gpu_qd1_burst.sh (issue #18), on a GPU host from the repository root with a bundle
# carried (see tools/gpu_advise_verify.sh), on 2 cores (taskset -c 0,1): calibrate --dir's
# busy-read measure beside plain spinners (burst 0) and beside threads that work in bursts of
# 1 or 3 ms with a short sleep between (as a loader's workers and copy thread do), each
# profile then used by advise --verify on real_directory's qd1 variants. The burst is taken
# from SS_BURST_US, an experiment-only switch of the bundle this ran on.
set -u
OUT=${OUT:-/tmp/qd1-burst-out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/bundle/lib
B="taskset -c 0,1 $PWD/bundle/bin/stallscope"
D=$PWD/qd1-data
nproc; lscpu | grep 'Model name'; uname -r; date -u
$B gen --samples 2000 --quiet "$D"
$B calibrate -o "$OUT/node.yaml" 2>&1 | tail -1
S="scenarios/real_directory.yaml --set dataset.path=$D --set cluster.node.profile=$OUT/node.yaml"
for v in direct-qd1 cold-qd1; do
  flags="--cold --io-depth 1"; [ $v = direct-qd1 ] && flags="$flags --direct"
  for burst in 0 1000 3000; do
    echo "== $v, burst $burst us"
    SS_BURST_US=$burst $B calibrate --dir "$D" $flags -o "$OUT/$v-$burst.yaml" 2>&1 | grep -E 'bandwidth|busy|disturbed'
    $B advise $S --variant $v --set storage.profile="$OUT/$v-$burst.yaml" --au 0.95 --verify --top 3 \
      2>&1 | grep -v '^verify: real run' | sed -n '/^verify (/,$p'
  done
done
date -u
