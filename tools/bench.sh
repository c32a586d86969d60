#!/usr/bin/env bash
# tools/bench.sh [WORK_DIR]
# Reproduces the README's dataset-benchmark comparisons (issues #6, #19) on this machine:
# installs what they need (fio, python3-torch, python3-pil; tcmalloc and jemalloc for the
# peer), builds, generates the datasets under WORK_DIR (default /tmp/stallscope-bench; about
# 2 GB) and runs, each in one invocation:
#   1. 1 GiB of 1 MiB files, cold: stallscope bench-dir against fio (tools/compare/fio_compare.sh)
#   2. 50,000 files of 4 KiB, page-cached, bytes -> float: against the PyTorch DataLoader
#   3. 20,000 JPEGs of 256x256, decode + crop + normalize: against the DataLoader with PIL
# and first (0.) stallscope's rates as fractions of the machine's ceilings on the same files
# (tools/ceiling; tools/compare/ceiling_compare.py), the 1 MiB files read cold among them.
# Last, a summary: every row's ceiling fraction beside its peer ratio.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
stallscope_build
stallscope_install_missing fio python3-torch python3-pil libjemalloc2 libtcmalloc-minimal4
W=${1:-/tmp/stallscope-bench}
S=$BUILD_DIR/tools/stallscope
mkdir -p "$W"
[ -d "$W/big" ] || "$S" gen "$W/big" --samples 1024 --size 1MiB --quiet
[ -d "$W/small" ] || "$S" gen "$W/small" --samples 50000 --size 4KiB --quiet
[ -d "$W/jpeg" ] || "$S" gen "$W/jpeg" --samples 20000 --format jpeg --size 256x256 --classes 100 --quiet
R=$(mktemp -d)
trap 'rm -rf "$R"' EXIT
echo "tools/bench.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), stallscope $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
echo "== 0. stallscope against this machine's own ceilings (tools/ceiling: plain loops, no stallscope code)"
/usr/bin/python3 "$ROOT/tools/compare/ceiling_compare.py" "$W/small" --jpeg "$W/jpeg" \
    --cold-dir "$W/big" --stallscope "$S" --ceiling "$BUILD_DIR/tools/ceiling" --json "$R/ceilings.json"
echo "== 1. large files, cold: stallscope bench-dir vs fio"
STALLSCOPE=$S "$ROOT/tools/compare/fio_compare.sh" "$W/big" 1M 64 3 | tee "$R/fio.txt"
echo "== 2. small files, page-cached, bytes -> float: stallscope vs PyTorch DataLoader"
/usr/bin/python3 "$ROOT/tools/compare/loader_compare.py" "$W/small" --mode normalize --stallscope "$S" |
    tee "$R/normalize.txt"
echo "== 3. JPEG decode + crop + normalize: stallscope vs PyTorch DataLoader (PIL)"
/usr/bin/python3 "$ROOT/tools/compare/loader_compare.py" "$W/jpeg" --mode jpeg --repeat 3 --stallscope "$S" |
    tee "$R/jpeg.txt"
# Every row once more, its ceiling fraction (step 0) beside its peer ratio (steps 1-3). The
# two come from separate runs of stallscope, so both of its rates are shown.
/usr/bin/python3 - "$R" <<'PY'
import json, os, re, sys
r = sys.argv[1]
def ratio(name):
    text = open(os.path.join(r, name)).read()
    ours = re.search(r"stallscope(?: bench-dir)?\s+([\d,.]+)", text).group(1)
    return ours, float(re.search(r"ratio\s+([\d.]+)", text).group(1))
peers = {"run, normalize": ("DataLoader", "normalize.txt", "samples/s"),
         "run, jpeg decode+crop+normalize": ("DataLoader + PIL", "jpeg.txt", "samples/s"),
         "bench-dir --cold": ("fio", "fio.txt", "MB/s")}
print("== summary: each stallscope rate as a fraction of its ceiling, beside its peer ratio")
print(f"  {'row':34s} {'files/s':>10s} {'fraction':>9s} {'goal':>6s}   peer ratio")
for row in json.load(open(os.path.join(r, "ceilings.json"))):
    goal = f"{row['goal']:.1f}" if row["goal"] else "-"
    peer = "-"
    if row["row"] in peers:
        who, f, unit = peers[row["row"]]
        ours, x = ratio(f)
        peer = f"{x:.2f}x against {who} (stallscope {ours} {unit} in that comparison)"
    print(f"  {row['row']:34s} {row['stallscope']:10,.0f} {row['fraction']:9.2f} {goal:>6s}   {peer}")
PY
