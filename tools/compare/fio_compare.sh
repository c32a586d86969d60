#!/usr/bin/env bash
# tools/compare/fio_compare.sh DIR [BLOCK_SIZE] [IO_DEPTH] [REPEAT]
# The storage's raw limit against stallscope on the same files, in one invocation: fio
# (io_uring, every file below DIR via opendir, one sequential pass, page cache invalidated
# first) and `stallscope bench-dir DIR --cold` (io_uring, the same depth; files evicted from
# the page cache first), alternated REPEAT times (default 3); prints the medians and the
# ratio, after fio's version, the host and the filesystem. Defaults: block size 1M, depth 64;
# FIO_EXTRA adds fio options (e.g. "--fixedbufs=1 --registerfiles=1"). Needs fio (Debian: fio).
set -euo pipefail
DIR=${1:?usage: fio_compare.sh DIR [BLOCK_SIZE] [IO_DEPTH] [REPEAT]}
BS=${2:-1M}
DEPTH=${3:-64}
REPEAT=${4:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S=${STALLSCOPE:-$ROOT/build/tools/stallscope}
command -v fio >/dev/null || { echo "fio_compare: fio is not installed (Debian: fio)" >&2; exit 2; }
[ -d "$DIR" ] || { echo "fio_compare: $DIR: no such directory" >&2; exit 2; }
# The peer's environment, printed with the result: fio's version, the host, the filesystem.
echo "peer: $(fio --version); host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'),\
 $(nproc) usable cores, Linux $(uname -r); $DIR on $(df -T "$DIR" | awk 'NR==2 {print $2 " (" $1 ")"}')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fio_rates=() our_rates=()
for i in $(seq "$REPEAT"); do
  # shellcheck disable=SC2086
  fio ${FIO_EXTRA:-} --name=read --opendir="$DIR" --rw=read --bs="$BS" --ioengine=io_uring --iodepth="$DEPTH" \
      --invalidate=1 --numjobs=1 --group_reporting --output-format=json --output="$tmp/fio.json" >/dev/null
  fio_rates+=("$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['jobs'][0]['read']['bw_bytes'])" "$tmp/fio.json")")
  "$S" bench-dir "$DIR" --cold --io-depth "$DEPTH" --quiet --json "$tmp/s.json" >/dev/null
  our_rates+=("$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['bytes_per_second'])" "$tmp/s.json")")
done
python3 - "$DIR" "$BS" "$DEPTH" "${fio_rates[*]}" "${our_rates[*]}" <<'PY'
import statistics, sys
d, bs, depth = sys.argv[1:4]
fio = [float(x) for x in sys.argv[4].split()]
ours = [float(x) for x in sys.argv[5].split()]
f, o = statistics.median(fio), statistics.median(ours)
fmt = lambda xs: ", ".join(f"{x / 1e6:,.0f}" for x in xs)
print(f"{d}: cold, block {bs}, depth {depth}, median of {len(fio)} alternated runs")
print(f"  fio (io_uring)        {f / 1e6:10,.1f} MB/s  {f / 2**20:10,.1f} MiB/s   (runs: {fmt(fio)} MB/s)")
print(f"  stallscope bench-dir  {o / 1e6:10,.1f} MB/s  {o / 2**20:10,.1f} MiB/s   (runs: {fmt(ours)} MB/s)")
print(f"  ratio                 {o / f:10.3f}")
PY
