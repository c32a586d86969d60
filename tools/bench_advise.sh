#!/usr/bin/env bash
# tools/bench_advise.sh [--every-variant]
# Issue #18's speed goal: a full `stallscope advise S.yaml --au 0.95` on every shipped scenario
# (its first variant, as a user runs it; --every-variant: each variant) on this machine.
# Prints one row per scenario (seconds, simulations, space) and the total, with the host it
# ran on. real_directory.yaml reads a directory: one is generated under a temporary folder
# (the simulator reads only its file sizes).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
stallscope_build
S=$BUILD_DIR/tools/stallscope
EVERY=0
[ "${1:-}" = "--every-variant" ] && EVERY=1
W=$(mktemp -d /tmp/stallscope-bench-advise.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$S" gen "$W/demo" --samples 2000 --size 112KiB --quiet
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git -C "$ROOT" rev-parse --short HEAD)"
printf '%-24s %-20s %8s %12s %8s\n' scenario variant seconds simulations space
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
    "$S" advise "$f" "${vargs[@]}" "${sets[@]}" --au 0.95 --quiet --json "$W/a.json" >/dev/null
    t1=$(date +%s.%N)
    secs=$(echo "$t1 - $t0" | bc)
    total=$(echo "$total + $secs" | bc)
    read -r variant sims space < <(python3 -c "
import json; d = json.load(open('$W/a.json'))
print(d.get('variant', '-'), d.get('simulations', '?'), d.get('space', '?'))")
    printf '%-24s %-20s %8.2f %12s %8s\n' "$name" "${v:-$variant}" "$secs" "$sims" "$space"
  done
done
printf 'total: %.1f s (goal: <= 30 s on a 2-core machine, issue #18)\n' "$total"
