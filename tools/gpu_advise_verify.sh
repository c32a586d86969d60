#!/usr/bin/env bash
# tools/gpu_advise_verify.sh (issue #18), on a GPU host from the repository root, with a bundle
# (BUNDLE_BINS='^stallscope$' tools/bundle.sh build bundle) carried; on 2 of its cores
# (taskset -c 0,1), as this repository's 2-core VM. real_directory's qd1 variants: each of
# three fresh `calibrate --dir` profiles simulated, then `advise --verify` (real runs of the
# current point and of the best change this host can run, alternated, at least 3 each and 5 s
# of runs each, their idle pooled).
set -u
OUT=${OUT:-/tmp/advise-verify-out}; mkdir -p "$OUT"  # the device tool sets OUT
if [ -x bundle/bin/stallscope ]; then  # else this tree's build (this repository's VM)
  export LD_LIBRARY_PATH=$PWD/bundle/lib; B="taskset -c 0,1 $PWD/bundle/bin/stallscope"
else
  B="taskset -c 0,1 $PWD/build/tools/stallscope"
fi
D=${DATA:-$PWD/qd1-data}
df -T . | tail -1; nproc; lscpu | grep 'Model name'; uname -r; date -u
[ -d "$D" ] || $B gen --samples 2000 --quiet "$D"
$B calibrate -o "$OUT/node.yaml" 2>&1 | tail -1
S="scenarios/real_directory.yaml --set dataset.path=$D --set cluster.node.profile=$OUT/node.yaml"
for v in direct-qd1 cold-qd1; do
  flags="--cold --io-depth 1"; [ $v = direct-qd1 ] && flags="$flags --direct"
  for i in 1 2 3; do
    echo "== $v, profile $i"
    $B calibrate --dir "$D" $flags -o "$OUT/$v-$i.yaml" 2>&1 | grep -E 'bandwidth|busy|disturbed'
    $B advise $S --variant $v --set storage.profile="$OUT/$v-$i.yaml" --au 0.95 --verify --top 3 \
      2>&1 | grep -v '^verify: real run' | sed -n '/^verify (/,$p'
  done
done
# The deep variants, the directory measured by advise itself (no storage.profile given).
for v in cold direct-io page-cached; do
  echo "== $v, measured by advise"
  $B advise $S --variant $v --au 0.95 --verify --top 1 2>&1 | grep -v '^verify: real run' |
    grep -E 'bandwidth|^verify|current|change'
done
date -u
