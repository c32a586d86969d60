#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] [libFuzzer args...]
# Builds the libFuzzer target over scenario loading and --set overrides
# (tests/fuzz/scenario_fuzz.cc) with Debian's clang, -fsanitize=fuzzer,address,undefined, in
# build-fuzz/, and fuzzes for SECONDS (default 600) from the seed corpus tests/fuzz/corpus
# (new inputs go to build-fuzz/corpus, crashes to build-fuzz/). Prints libFuzzer's summary.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_TO_RUN=${1:-600}
shift || true
source "$ROOT/tools/setup.sh"
stallscope_install_missing clang
B=$ROOT/build-fuzz
if [ ! -f "$B/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTALLSCOPE_CUDA=OFF -DSTALLSCOPE_FUZZ=ON >&2
fi
cmake --build "$B" -j2 --target scenario_fuzz >&2
mkdir -p "$B/corpus"
cd "$B"
"$B/tests/scenario_fuzz" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$@" corpus "$ROOT/tests/fuzz/corpus"
