#!/usr/bin/env bash
# Needs a bundle built with docs/experiments/probe-neighbours-write-floats.patch applied
# (git apply; the SS_MEM switch), build/tools/cpu_mix copied into bundle/bin; run from the
# repository root on a GPU host: bash docs/experiments/probe-neighbours-exp.sh (2026-12-06).
# H200 host, 2 cores: probe neighbours in registers (old) against memory-writing (SS_MEM=1)
set -u
export LD_LIBRARY_PATH=$PWD/bundle/lib
T="taskset -c 0,1"; B="$T $PWD/bundle/bin/stallscope"; M="$T $PWD/bundle/bin/cpu_mix"
D=$PWD/qd1-data
df -T . | tail -1; lscpu | grep 'Model name'; date -u
$B gen --samples 2000 --quiet "$D"
$B calibrate -o /tmp/node.yaml 2>&1 | tail -1
for round in 1; do for mix in r rs rw rss rww b bs bw bss bww; do $M $mix 2 $D | grep -E "^$mix [rb]:"; done; done
sim(){ $B simulate scenarios/real_directory.yaml --variant $1 --set dataset.path=$D --set storage.profile=$2 --node-profile /tmp/node.yaml --json /tmp/s.json --quiet >/dev/null 2>&1; python3 -c "import json;print(round(json.load(open('/tmp/s.json'))['variants'][0]['gpu_idle_fraction']*100,1))"; }
w(){ grep -oE "(p50|read_wait_busy|read_wait_partial|cpu_per_read|host_per_read): [0-9.]+" $1 | awk '{printf "%s ", $2}'; }
for i in 1 2; do for v in cold-qd1 direct-qd1; do
  flags="--cold --io-depth 1"; [ $v = direct-qd1 ] && flags="$flags --direct"
  $B calibrate --dir $D $flags -o /tmp/po.yaml >/dev/null 2>&1
  SS_MEM=1 $B calibrate --dir $D $flags -o /tmp/pn.yaml >/dev/null 2>&1
  po=$(sim $v /tmp/po.yaml); pn=$(sim $v /tmp/pn.yaml)
  r=""; for k in 1 2 3; do $B run scenarios/real_directory.yaml --variant $v --set dataset.path=$D --quiet --json /tmp/r.json >/dev/null 2>&1; r="$r $(python3 -c "import json;print(round(json.load(open('/tmp/r.json'))['variants'][0]['gpu_idle_fraction']*100,1))")"; done
  echo "$(date -u +%T) $v old $po [$(w /tmp/po.yaml)] mem $pn [$(w /tmp/pn.yaml)] real$r"
done; done
date -u
