#!/usr/bin/env bash
# tools/gpu_qd1_gap.sh (issue #18), from the repository root, with a bundle carried (or
# STALLSCOPE=build/tools/stallscope on this machine): real_directory's qd1 variants, the loader
# with its fetch stage flat out (no preprocessing work: kind none and the scenario's 50 us
# cost set to 0; no verification; 1 ms steps) alternated
# with `bench-dir` reading the same files the same way (cold, depth 1), 3 rounds, on 2 cores
# (taskset -c 0,1). Both print files/s; the gap is what the loader's reads pay that
# calibrate --dir's pass does not. Then, per variant, one fresh `calibrate --dir` profile and
# `simulate --against-run` (real / simulated idle) for the fetch stage alone, with the
# scenario's 50 us burner on the workers, and as shipped: which part the model gets wrong.
set -u
if [ -d bundle ]; then export LD_LIBRARY_PATH=$PWD/bundle/lib; S=${STALLSCOPE:-$PWD/bundle/bin/stallscope}
else S=${STALLSCOPE:-$PWD/build/tools/stallscope}; fi
B="taskset -c 0,1 $S"
D=${QD1_DATA:-/tmp/qd1-gap-data}
OUT=${OUT:-/tmp/qd1-gap-out}; mkdir -p "$OUT"
[ -d "$D" ] || $B gen --samples 2000 --quiet "$D"
nproc; lscpu | grep 'Model name'; date -u
# The fetch stage alone: no preprocessing work (kind none, the scenario's 50 us cost 0), no
# verification, 1 ms steps; and the same with the scenario's burner left on the workers.
alone="--set loader.preprocess.kind=none --set loader.preprocess.cost=0us --set run.verify=false --set gpu.step_time=1ms"
burner="--set loader.preprocess.kind=none --set run.verify=false --set gpu.step_time=1ms"
# How calibrate --dir and bench-dir read the variant's files: cold, depth 1 (O_DIRECT too).
read_flags() { echo "--cold --io-depth 1$([ "$1" = direct-qd1 ] && echo " --direct")"; }
rate() { python3 -c "import json,sys;v=json.load(open(sys.argv[1]))['variants'][0];print(round(sum(e['samples_per_second'] for e in v['epochs'][1:])/(len(v['epochs'])-1)))" "$1"; }
for v in cold-qd1 direct-qd1; do
  for i in 1 2 3; do
    # shellcheck disable=SC2046
    $B bench-dir "$D" $(read_flags $v) --quiet --json "$OUT/b.json" >/dev/null 2>&1
    b=$(python3 -c "import json;print(round(json.load(open('$OUT/b.json'))['files_per_second']))")
    # shellcheck disable=SC2086
    $B run scenarios/real_directory.yaml --variant $v --set dataset.path="$D" $alone \
      --set run.epochs=3 --quiet --json "$OUT/r.json" >/dev/null 2>&1
    echo "$v round $i: bench-dir $b files/s, loader (epochs 2-3) $(rate "$OUT/r.json") samples/s"
  done
done
for v in direct-qd1 cold-qd1; do
  # shellcheck disable=SC2046
  $B calibrate --dir "$D" $(read_flags $v) -o "$OUT/$v.yaml" 2>&1 | grep -E 'latency|beside'
  for what in alone burner shipped; do
    # shellcheck disable=SC2086
    echo "$v, $what: $($B simulate scenarios/real_directory.yaml --variant $v \
      --set dataset.path="$D" --set storage.profile="$OUT/$v.yaml" ${!what:-} --against-run \
      2>&1 | grep -E "^$v " | sed "s/^$v *//")"
  done
done
date -u
