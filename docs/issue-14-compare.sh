#!/bin/bash
# Compares two stallscope binaries (OLD=6dbd523, NEW=this tree) on validate of every shipped
# scenario and on 42 bad inputs: exit code, stderr and stdout. Run from the repository root.
OLD=${OLD:-/work/old/build/tools/stallscope}   # a build of 6dbd523
NEW=${NEW:-$(cd "$(dirname "$0")/.." && pwd)/build/tools/stallscope}
S=$(cd "$(dirname "$0")/../scenarios" && pwd)
out=$(mktemp -d)
cd "$out"
echo "== validate"
for f in $S/*.yaml; do
  b=$(basename $f)
  $OLD validate $f > $out/old-v-$b 2>&1; echo "rc $?" >> $out/old-v-$b
  $NEW validate $f > $out/new-v-$b 2>&1; echo "rc $?" >> $out/new-v-$b
  cmp -s $out/old-v-$b $out/new-v-$b && echo "same: validate $b" || { echo "DIFF: validate $b"; diff $out/old-v-$b $out/new-v-$b | head -5; }
done
echo "== bad input"
cat > bad1.yaml <<'Y'
storage:
  kind: simulated
  bandwith: 400MB/s
Y
i=0
while IFS= read -r args; do
  i=$((i+1))
  eval "$OLD $args" > $out/old-b$i.out 2> $out/old-b$i.err; o=$?
  eval "$NEW $args" > $out/new-b$i.out 2> $out/new-b$i.err; n=$?
  if [ $o = $n ] && cmp -s $out/old-b$i.err $out/new-b$i.err && cmp -s $out/old-b$i.out $out/new-b$i.out; then
    echo "same ($o): $args"
  else
    echo "DIFF: $args"; echo "  old rc $o: $(head -c 300 $out/old-b$i.err)"; echo "  new rc $n: $(head -c 300 $out/new-b$i.err)"
  fi
done <<'ARGS'
run bad1.yaml
run /nonexistent.yaml
run $S/cold_vs_cached.yaml --variant nope
run $S/cold_vs_cached.yaml --set loader.workers=many
run $S/cold_vs_cached.yaml --set loader.batch_size=0
run $S/cold_vs_cached.yaml --set dataset.sample_size=-4KiB
run $S/cold_vs_cached.yaml --set storage.bandwidth=400MB
run $S/cold_vs_cached.yaml --set gpu.step_time=50
run $S/cold_vs_cached.yaml --set loader.preprocess=blur
run $S/cold_vs_cached.yaml --set 'loader.preprocess={kind: jpeg-decode, size: 5000}'
run $S/cold_vs_cached.yaml --set 'cache.tiers=[{kind: memory, capacity: 1GiB, policy: clock}]'
run $S/cold_vs_cached.yaml --set 'cache.tiers=[{kind: memory, capacity: 0}]'
run $S/cold_vs_cached.yaml --set 'cache.tiers=[{kind: disk, capacity: 1GiB}]'
run $S/cold_vs_cached.yaml --set 'cache.tiers=[{kind: disk, path: /proc/version/x, capacity: 1GiB}]'
run $S/cold_vs_cached.yaml --set 'cache.tiers=[{kind: memory, capacity: 1GiB}, {kind: memory, capacity: 1GiB}, {kind: memory, capacity: 1GiB}, {kind: memory, capacity: 1GiB}, {kind: memory, capacity: 1GiB}]'
run $S/cold_vs_cached.yaml --set 'cache.tiers=[{kind: distributed}]'
run $S/cold_vs_cached.yaml --set cluster.nodes=2
run $S/cold_vs_cached.yaml --set storage.kind=directory
run $S/cold_vs_cached.yaml --set storage.kind=directory --set dataset.path=/nonexistent
run $S/cold_vs_cached.yaml --set storage.faults.error_rate=0.7 --set storage.faults.timeout_rate=0.7
run $S/cold_vs_cached.yaml --set run.warmup_steps=100000
run $S/cold_vs_cached.yaml --set gpu.device=cuda
run $S/cold_vs_cached.yaml --json /nonexistent/x.json
run $S/cold_vs_cached.yaml --linger forever
run $S/cold_vs_cached.yaml --push-gateway ftp://x
run $S/cold_vs_cached.yaml --metrics-listen 999.1.1.1:1
run $S/cold_vs_cached.yaml --set variants.x=1
run $S/cold_vs_cached.yaml --set =3
simulate $S/cluster_what_if.yaml --set cluster.nodes=0
simulate $S/cluster_what_if.yaml --set 'cache.tiers=[{kind: distributed}]' --set cluster.network_bandwidth=0
simulate $S/cluster_what_if.yaml --max-accelerators --au 2
sweep $S/prefetch_sweep.yaml --grid nope.key=1,2 --simulate
sweep $S/prefetch_sweep.yaml
report /nonexistent.json
gen $out/g --samples 0
gen $out/g --samples 3 --format png
gen $out/g --samples 3 --size 12XB
bench-dir /nonexistent
bench-dir /tmp --workload bert
kernels --sizes 100
validate bad1.yaml
frobnicate
ARGS
