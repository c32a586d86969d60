#!/usr/bin/env bash
# tools/bundle.sh [BUILD_DIR] [OUT_DIR]
# Copies the built executables (stallscope, benchmarks, test programs) and every shared
# library they load from outside glibc and the CUDA toolkit into OUT_DIR (default bundle/),
# so they run on a GPU host that lacks this project's Debian packages:
#   LD_LIBRARY_PATH=bundle/lib bundle/bin/stallscope run ...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/bundle}
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"

bins=()
while IFS= read -r f; do bins+=("$f"); done < <(
  find "$BUILD" -type f -executable \( -name stallscope -o -name 'bench_*' -o -name '*_test' \) \
    -not -path '*/CMakeFiles/*')
[ ${#bins[@]} -gt 0 ] || { echo "bundle: nothing built in $BUILD" >&2; exit 2; }

# Libraries the GPU host has: the C runtime and the loader, and the CUDA driver/toolkit.
system_lib='/(ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libnss_|libanl|libutil|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libcupti|libnvToolsExt|libnccl)[.-]'
for b in "${bins[@]}"; do
  cp "$b" "$OUT/bin/"
  ldd "$b" | awk '/=> \//{print $3}' | while read -r lib; do
    if ! [[ $lib =~ $system_lib ]]; then cp -nL "$lib" "$OUT/lib/"; fi
  done
done
# Debug info stays here: the bundle has to travel (64 MiB for the device tool's carry).
strip --strip-debug "$OUT"/bin/* "$OUT"/lib/* 2>/dev/null || true
# Tests find the scenarios and the CLI by absolute build paths; ship the scenarios too.
cp -r "$ROOT/scenarios" "$OUT/"
echo "bundle: ${#bins[@]} executables, $(ls "$OUT/lib" | wc -l) libraries in $OUT" >&2
