#!/usr/bin/env bash
# tools/bundle.sh [BUILD_DIR] [OUT_DIR]
# Copies the built executables (stallscope, benchmarks, test programs) and every shared
# library they load from outside glibc and the CUDA toolkit into OUT_DIR (default bundle/),
# so they run on a GPU host that lacks this project's Debian packages:
#   LD_LIBRARY_PATH=bundle/lib bundle/bin/stallscope run ...
# BUNDLE_BINS (a regular expression on the file name) picks executables: the device tool
# carries 64 MiB, e.g. BUNDLE_BINS='^(stallscope|rank_main|multirank_test|cuda_device_test)$'.
# Open MPI travels too (the GPU hosts have none): its launcher, daemon, MCA components and
# help files under OUT_DIR/ompi/usr, their libraries in OUT_DIR/lib. Source bundle/env.sh
# there (it sets OPAL_PREFIX, PATH, LD_LIBRARY_PATH, Open MPI's run-as-root switches and
# NCCL_NVLS_ENABLE=0), then: mpirun -np 2 -x NCCL_NVLS_ENABLE bundle/bin/stallscope run ...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/bundle}
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"

bins=()
while IFS= read -r f; do bins+=("$f"); done < <(
  find "$BUILD" -type f -executable \( -name stallscope -o -name rank_main -o -name 'bench_*' -o -name '*_test' \) \
    -not -path '*/CMakeFiles/*')
[ ${#bins[@]} -gt 0 ] || { echo "bundle: nothing built in $BUILD" >&2; exit 2; }

# Libraries the GPU host has: the C runtime and the loader, and the CUDA driver/toolkit.
system_lib='/(ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libnss_|libanl|libutil|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libcupti|libnvToolsExt|libnccl)[.-]'
for b in "${bins[@]}"; do
  [[ $(basename "$b") =~ ${BUNDLE_BINS:-.} ]] || continue
  cp "$b" "$OUT/bin/"
  ldd "$b" | awk '/=> \//{print $3}' | while read -r lib; do
    if ! [[ $lib =~ $system_lib ]]; then cp -nL "$lib" "$OUT/lib/"; fi
  done
done
copy_libs() {  # the non-system libraries the given ELF files load, into $OUT/lib
  for f in "$@"; do
    ldd "$f" 2>/dev/null | awk '/=> \//{print $3}' | while read -r lib; do
      if ! [[ $lib =~ $system_lib ]]; then cp -nL "$lib" "$OUT/lib/"; fi
    done
  done
}
if command -v orterun >/dev/null; then
  arch=usr/lib/x86_64-linux-gnu
  M=$OUT/ompi
  mkdir -p "$M/usr/bin" "$M/$arch/openmpi/lib" "$M/usr/share"
  cp /usr/bin/orterun "$M/usr/bin/mpirun"
  cp /usr/bin/orted "$M/usr/bin/"
  cp -rL "/$arch/openmpi/lib/openmpi3" "$M/$arch/openmpi/lib/"
  cp -rL "/$arch/pmix2" "$M/$arch/"
  cp -r /usr/share/openmpi "$M/usr/share/"
  mapfile -t elfs < <(find "$M" -type f \( -name '*.so*' -o -path '*/bin/*' \))
  copy_libs "${elfs[@]}"
  cat >"$OUT/env.sh" <<'ENV'
# Source on the GPU host: the bundled Open MPI and libraries, as root, NVLink multicast off.
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$B/ompi/usr PATH=$B/ompi/usr/bin:$PATH
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
# PMIx looks for its components under its build-time prefix: point it at the bundle's.
export PMIX_MCA_mca_base_component_path=$B/ompi/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
export PMIX_MCA_pcompress_base_silence_warning=1 PMIX_INSTALL_PREFIX=$B/ompi/usr
ENV
fi
# Debug info stays here: the bundle has to travel (64 MiB for the device tool's carry).
strip --strip-debug "$OUT"/bin/* "$OUT"/lib/* 2>/dev/null || true
# Tests find the scenarios and the CLI by absolute build paths; ship the scenarios too.
cp -r "$ROOT/scenarios" "$OUT/"
echo "bundle: $(ls "$OUT/bin" | wc -l) executables, $(ls "$OUT/lib" | wc -l) libraries in $OUT" >&2
