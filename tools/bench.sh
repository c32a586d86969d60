#!/usr/bin/env bash
# tools/bench.sh [WORK_DIR]
# Reproduces the README's dataset-benchmark comparisons (issue #6) on this machine: installs
# what they need (fio, python3-torch, python3-pil), builds, generates the datasets under
# WORK_DIR (default /tmp/stallscope-bench; about 2 GB) and runs, each in one invocation:
#   1. 1 GiB of 1 MiB files, cold: stallscope bench-dir against fio (tools/compare/fio_compare.sh)
#   2. 50,000 files of 4 KiB, page-cached, bytes -> float: against the PyTorch DataLoader
#   3. 20,000 JPEGs of 256x256, decode + crop + normalize: against the DataLoader with PIL
# and first (0.) stallscope's rates as fractions of the machine's ceilings on the same files
# (tools/ceiling; tools/compare/ceiling_compare.py).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
stallscope_build
stallscope_install_missing fio python3-torch python3-pil
W=${1:-/tmp/stallscope-bench}
S=$BUILD_DIR/tools/stallscope
mkdir -p "$W"
[ -d "$W/big" ] || "$S" gen "$W/big" --samples 1024 --size 1MiB --quiet
[ -d "$W/small" ] || "$S" gen "$W/small" --samples 50000 --size 4KiB --quiet
[ -d "$W/jpeg" ] || "$S" gen "$W/jpeg" --samples 20000 --format jpeg --size 256x256 --classes 100 --quiet
echo "== 0. stallscope against this machine's own ceilings (tools/ceiling: plain loops, no stallscope code)"
/usr/bin/python3 "$ROOT/tools/compare/ceiling_compare.py" "$W/small" --jpeg "$W/jpeg" \
    --stallscope "$S" --ceiling "$BUILD_DIR/tools/ceiling"
echo "== 1. large files, cold: stallscope bench-dir vs fio"
STALLSCOPE=$S "$ROOT/tools/compare/fio_compare.sh" "$W/big" 1M 64 3
echo "== 2. small files, page-cached, bytes -> float: stallscope vs PyTorch DataLoader"
/usr/bin/python3 "$ROOT/tools/compare/loader_compare.py" "$W/small" --mode normalize --stallscope "$S"
echo "== 3. JPEG decode + crop + normalize: stallscope vs PyTorch DataLoader (PIL)"
/usr/bin/python3 "$ROOT/tools/compare/loader_compare.py" "$W/jpeg" --mode jpeg --repeat 3 --stallscope "$S"
