#!/usr/bin/env bash
# tools/compare/checkpoint_vs_fio.sh DIR [--size 1GiB] [--ranks 1] [--block 1MiB] [--io-depth 8]
#                                        [--rounds 3] [--runs 1] [--direct] [--no-fsync]
# `stallscope bench-checkpoint` against fio on the same directory, in one invocation, the two
# alternated round by round (odd rounds stallscope first, even rounds fio first), each round
# starting from no files and a committed filesystem (syncfs: on a filesystem mounted with
# `discard`, the commit after an unlink discards the blocks freed), as bench-checkpoint starts
# each of its runs:
#   stallscope: bench-checkpoint DIR --size S --ranks N --block B --io-depth D [--direct]
#               [--no-fsync] --runs R (its median over the R runs is the round's number);
#   fio:        N jobs (one file each, S / N bytes, as the ranks), ioengine=io_uring,
#               bs=B (in bytes), iodepth=D, direct as given; rw=write with end_fsync=1 (fsync: fio's
#               runtime and rate include it), then, in the same invocation (stonewall), rw=read
#               with invalidate=1 (the page cache dropped first, as bench-checkpoint does;
#               without fsync the files are flushed, untimed, between two invocations, as
#               bench-checkpoint flushes before its eviction); the rate is group_reporting's:
#               all jobs' bytes over the longest job.
# Prints every round, each side's medians and the ratio stallscope / fio, with the date, the fio
# version, the CPU, the kernel and the filesystem. Installs fio (Debian) when it is missing.
# FIO_EXTRA adds fio options to both fio jobs (e.g. "--fallocate=none": fio preallocates a file
# it creates by default, bench-checkpoint does not).
set -euo pipefail
usage="usage: checkpoint_vs_fio.sh DIR [--size S] [--ranks N] [--block B] [--io-depth D] \
[--rounds K] [--runs R] [--direct] [--no-fsync]"
DIR=${1:?$usage}
shift
SIZE=1GiB RANKS=1 BLOCK=1MiB DEPTH=8 ROUNDS=3 RUNS=1 DIRECT=0 FSYNC=1
while [ $# -gt 0 ]; do
  case "$1" in
    --size) SIZE=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --block) BLOCK=$2; shift 2 ;;
    --io-depth) DEPTH=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --direct) DIRECT=1; shift ;;
    --no-fsync) FSYNC=0; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ "$ROUNDS" -ge 3 ] || { echo "checkpoint_vs_fio: --rounds must be at least 3" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S=${STALLSCOPE:-$ROOT/build/tools/stallscope}
[ -x "$S" ] || { echo "checkpoint_vs_fio: $S: build stallscope first (tools/run.sh)" >&2; exit 2; }
# shellcheck source=tools/setup.sh
source "$ROOT/tools/setup.sh"
command -v fio >/dev/null || stallscope_install_missing fio
mkdir -p "$DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f "$DIR"/ckpt-fio.*' EXIT

ours=(bench-checkpoint "$DIR" --size "$SIZE" --ranks "$RANKS" --block "$BLOCK" --io-depth "$DEPTH"
      --runs "$RUNS" --quiet)
[ "$DIRECT" = 1 ] && ours+=(--direct)
[ "$FSYNC" = 0 ] && ours+=(--no-fsync)
json() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))$2)" "$1"; }

run_stallscope() {  # appends "write read" (bytes/s) to $tmp/stallscope
  sync -f "$DIR"  # the other side's removed files committed (and discarded) before we start
  "$S" "${ours[@]}" --json "$tmp/s.json" >/dev/null
  echo "$(json "$tmp/s.json" "['write_bytes_per_second']") $(json "$tmp/s.json" "['read_bytes_per_second']")" \
    >>"$tmp/stallscope"
  RANK_BYTES=$(json "$tmp/s.json" "['bytes_per_rank']")
  # In bytes: fio's default units read "1MiB" as 10^6 (kb_base=1024 compatibility mode).
  BLOCK_BYTES=$(json "$tmp/s.json" "['block']")
}

# FIO_COMMON: fio's options for the ranks' files (one job per rank, one file each), then
# FIO_EXTRA's. REQUIRES: RANK_BYTES and BLOCK_BYTES (from stallscope's first round).
fio_common() {
  FIO_COMMON=(--directory="$DIR" --size="$RANK_BYTES" --bs="$BLOCK_BYTES" --ioengine=io_uring
              --iodepth="$DEPTH" --direct="$DIRECT" --group_reporting)
  # shellcheck disable=SC2206
  FIO_COMMON+=(${FIO_EXTRA:-})
}
WRITE_JOB=(--name=ckpt-fio --numjobs="$RANKS" --rw=write)
[ "$FSYNC" = 1 ] && WRITE_JOB+=(--end_fsync=1)
READ_JOB=(--name=ckpt-fio --numjobs="$RANKS" --rw=read --invalidate=1)

run_fio() {  # appends "write read" (bytes/s) to $tmp/fio
  rm -f "$DIR"/ckpt-fio.*
  sync -f "$DIR"  # as bench-checkpoint does before each run (syncfs)
  fio_common
  local w r
  if [ "$FSYNC" = 1 ]; then
    # One invocation, the read job after the write job (stonewall): the read starts right
    # after the write's fsync, as bench-checkpoint's does, not after a new fio's start-up.
    fio "${FIO_COMMON[@]}" --output-format=json --output="$tmp/fio.json" "${WRITE_JOB[@]}" \
        "${READ_JOB[@]}" --stonewall >/dev/null
    w=$(json "$tmp/fio.json" "['jobs'][0]['write']['bw_bytes']")
    r=$(json "$tmp/fio.json" "['jobs'][1]['read']['bw_bytes']")
  else
    fio "${FIO_COMMON[@]}" --output-format=json --output="$tmp/fio.json" "${WRITE_JOB[@]}" >/dev/null
    w=$(json "$tmp/fio.json" "['jobs'][0]['write']['bw_bytes']")
    sync --data "$DIR"/ckpt-fio.*  # untimed, so that the eviction can drop them
    fio "${FIO_COMMON[@]}" --output-format=json --output="$tmp/fio.json" "${READ_JOB[@]}" >/dev/null
    r=$(json "$tmp/fio.json" "['jobs'][0]['read']['bw_bytes']")
  fi
  rm -f "$DIR"/ckpt-fio.*
  echo "$w $r" >>"$tmp/fio"
}

RANK_BYTES='' BLOCK_BYTES=''
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ] || [ -z "$RANK_BYTES" ]; then
    run_stallscope
    run_fio
  else
    run_fio
    run_stallscope
  fi
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
python3 - "$tmp/stallscope" "$tmp/fio" <<PY
import statistics, sys
ours = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
fio = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
print("checkpoint_vs_fio: $DIR, $RANKS rank(s) x $RANK_BYTES bytes, block $BLOCK, io-depth $DEPTH, "
      + ("fsync" if $FSYNC else "no fsync") + (", O_DIRECT" if $DIRECT else ", buffered")
      + f", {len(fio)} rounds alternated (stallscope: median of $RUNS run(s) per round)")
print("date:       $(date -u)")
print("fio:        $(fio --version) (ioengine=io_uring)")
print("cpu:        $cpu ($(nproc) cores); kernel $(uname -r); $(df --output=fstype "$DIR" | tail -1) at $DIR")
print("stallscope: $S ${ours[*]}")
print("fio:        fio ${FIO_COMMON[*]} --output-format=json ${WRITE_JOB[*]} "
      + ("${READ_JOB[*]} --stonewall" if $FSYNC
         else "; sync --data FILES; fio ${FIO_COMMON[*]} --output-format=json ${READ_JOB[*]}"))
print(f"{'round':>5}  {'side':<10}  {'write GB/s':>10}  {'read GB/s':>9}")
for k, (o, f) in enumerate(zip(ours, fio), 1):
    print(f"{k:>5}  {'stallscope':<10}  {o[0] / 1e9:>10.3f}  {o[1] / 1e9:>9.3f}")
    print(f"{k:>5}  {'fio':<10}  {f[0] / 1e9:>10.3f}  {f[1] / 1e9:>9.3f}")
ow, orr = statistics.median(x[0] for x in ours), statistics.median(x[1] for x in ours)
fw, fr = statistics.median(x[0] for x in fio), statistics.median(x[1] for x in fio)
print(f"median  stallscope  write {ow / 1e9:.3f} GB/s  read {orr / 1e9:.3f} GB/s")
print(f"median  fio         write {fw / 1e9:.3f} GB/s  read {fr / 1e9:.3f} GB/s")
print(f"ratio stallscope / fio: write {ow / fw:.3f}, read {orr / fr:.3f}")
PY
