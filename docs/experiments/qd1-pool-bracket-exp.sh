#!/usr/bin/env bash
# bash docs/experiments/qd1-pool-bracket-exp.sh [ROUNDS] [RUNS] (2026-12-07 14:23 UTC session),
# from the repository root; on a GPU host with a bundle carried (see qd1-common.sh).
# As qd1-bracket-exp.sh, with RUNS (default 8) runs between the two probes, their idle pooled
# (1 - sum of GPU busy / sum of measured seconds), as advise --verify now compares: is a miss
# the model's, or the directory's pace moving between a probe and the runs?
set -u
. docs/experiments/qd1-common.sh
N=${1:-3}; M=${2:-8}
$B calibrate -o $O/node.yaml 2>&1 | tail -1
R="scenarios/real_directory.yaml --set dataset.path=$D"; S="$R --node-profile $O/node.yaml"
probe(){  # $1 variant, $2 out: the p50 and the prediction's idle %
  local f="--cold --io-depth 1"; [ $1 = direct-qd1 ] && f="$f --direct"
  $B calibrate --dir $D $f -o $2 >/dev/null 2>&1
  $B simulate $S --variant $1 --set storage.profile=$2 --json $O/s.json --quiet >/dev/null 2>&1
  echo "$(grep -oE 'p50: [0-9.]+' $2 | head -1 | cut -d' ' -f2) $(python3 -c "import json;print(round(json.load(open('$O/s.json'))['variants'][0]['gpu_idle_fraction']*100,1))")"
}
for v in cold-qd1 direct-qd1; do
  echo "== $v: p50 and prediction before | pooled runs | after"
  for k in $(seq 1 $N); do
    a=$(probe $v $O/$v-$k-a.yaml)
    for j in $(seq 1 $M); do $B run $R --variant $v --quiet --json $O/$v-$k-r$j.json >/dev/null 2>&1; done
    b=$(probe $v $O/$v-$k-b.yaml)
    python3 - $a $b $O/$v-$k-r*.json <<'P'
import json, sys
pa, a, pb, b = map(float, sys.argv[1:5])
v = [json.load(open(f))['variants'][0] for f in sys.argv[5:]]
pooled = 100 * (1 - sum(x['busy_seconds'] for x in v) / sum(x['window_seconds'] for x in v))
idle = sorted(x['gpu_idle_fraction'] * 100 for x in v)
print('p50 %.1f pred %.1f | %d runs pooled %.1f (%.1f-%.1f) | p50 %.1f pred %.1f | before %+.1f after %+.1f mean %+.1f pp'
      % (pa, a, len(v), pooled, idle[0], idle[-1], pb, b, a - pooled, b - pooled, (a + b) / 2 - pooled))
P
  done
done
date -u
