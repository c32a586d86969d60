#!/usr/bin/env bash
# tools/bench_advise.sh [--every-variant] [--verify]
# Issue #18's speed goal: a full `stallscope advise S.yaml --au 0.95` on every shipped scenario
# (its first variant, as a user runs it; --every-variant: each variant) on this machine.
# Prints one row per scenario (seconds, simulations, space) and the total, with the host it
# ran on. --verify adds advise's --verify (the current scenario and the best-ranked change this
# host can make, each run for real 3 times alternated, emulated device, one rank: variants of
# one node and one GPU) and prints predicted against the median measured idle (the change's
# rank where a better one could not run here); the seconds then include the real runs. real_directory.yaml reads a directory: one is generated under a temporary folder
# (the simulator reads only its file sizes).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
stallscope_build
S=$BUILD_DIR/tools/stallscope
EVERY=0
VERIFY=0
for a in "$@"; do
  case $a in
    --every-variant) EVERY=1 ;;
    --verify) VERIFY=1 ;;
    *) echo "usage: tools/bench_advise.sh [--every-variant] [--verify]" >&2; exit 2 ;;
  esac
done
W=$(mktemp -d /tmp/stallscope-bench-advise.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$S" gen "$W/demo" --samples 2000 --size 112KiB --quiet
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git -C "$ROOT" rev-parse --short HEAD)"
printf '%-24s %-20s %8s %12s %8s' scenario variant seconds simulations space
[ $VERIFY = 1 ] && printf '  %s' "verify: current predicted/measured, top change predicted/measured (idle %)"
echo
total=0
for f in "$ROOT"/scenarios/*.yaml; do
  name=$(basename "$f" .yaml)
  sets=()
  [ "$name" = real_directory ] && sets=(--set "dataset.path=$W/demo")
  variants=("")
  if [ $EVERY = 1 ]; then
    mapfile -t variants < <("$S" validate "$f" | sed -n 's/^  \([^:]*\): .*/\1/p')
    [ ${#variants[@]} -gt 0 ] || variants=("")
  fi
  for v in "${variants[@]}"; do
    vargs=()
    [ -n "$v" ] && vargs=(--variant "$v")
    t0=$(date +%s.%N)
    vflag=()
    if [ $VERIFY = 1 ] && "$S" simulate "$f" "${vargs[@]}" "${sets[@]}" --quiet --json "$W/s.json" \
        >/dev/null 2>&1 && python3 -c "
import json, sys; d = json.load(open('$W/s.json'))
sys.exit(0 if d['variants'][0].get('gpus', 1) == 1 else 1)"; then
      vflag=(--verify)
    fi
    "$S" advise "$f" "${vargs[@]}" "${sets[@]}" --au 0.95 --quiet --json "$W/a.json" "${vflag[@]}" >/dev/null
    t1=$(date +%s.%N)
    secs=$(echo "$t1 - $t0" | bc)
    total=$(echo "$total + $secs" | bc)
    read -r variant sims space verify < <(python3 -c "
import json; d = json.load(open('$W/a.json')); v = d.get('verify')
pct = lambda x: f'{x * 100:.1f}'
text = '-'
if v:
    text = pct(v['current']['predicted']) + '/' + pct(v['current']['measured'])
    if 'top' in v:
        text += ', ' + ('' if v['top']['rank'] == 1 else '#%d:' % v['top']['rank'])
        text += pct(v['top']['predicted']) + '/' + pct(v['top']['measured'])
    elif v.get('not_run'): text += ', top:not-runnable-here'
print(d.get('variant', '-'), d.get('simulations', '?'), d.get('space', '?'), text.replace(' ', ''))")
    printf '%-24s %-20s %8.2f %12s %8s' "$name" "${v:-$variant}" "$secs" "$sims" "$space"
    [ $VERIFY = 1 ] && printf '  %s' "$verify"
    echo
  done
done
printf 'total: %.1f s (goal: <= 30 s on a 2-core machine, issue #18)\n' "$total"
