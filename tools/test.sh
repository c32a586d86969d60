#!/usr/bin/env bash
# tools/test.sh [--sanitize address,undefined|thread] [ctest args...]
# Installs what is missing, builds, and runs the whole test suite through ctest.
# With --sanitize the build goes to build-<sanitizers>/ with -fsanitize=... . Every sanitizer
# report, from the tests or from the stallscope processes they start, is written to
# build-<sanitizers>/sanitizer-reports/; the run fails when that folder is not empty, so a
# report counts even where the process that wrote it was expected to fail.
set -euo pipefail
sanitize=""
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=$2
  shift 2
fi
if [ -n "$sanitize" ]; then
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  export BUILD_DIR=$ROOT/build-${sanitize//,/-}
  export CMAKE_EXTRA_ARGS="-DSTALLSCOPE_SANITIZE=$sanitize -DSTALLSCOPE_BENCHMARKS=OFF"
fi
source "$(dirname "$0")/setup.sh"
stallscope_build
# Test tools: a real Prometheus and Pushgateway, and Chromium to render the HTML report.
# Without them those tests report themselves skipped (exit 77) — on a developer's machine a
# warning; under CI (the CI variable set, as .ci/run does) a failure: a skip there would let
# "100% passed" hide two tests that never ran.
if ! stallscope_install_missing prometheus prometheus-pushgateway chromium; then
  if [ -n "${CI:-}" ]; then
    echo "test.sh: could not install prometheus / prometheus-pushgateway / chromium (CI=$CI)" >&2
    exit 1
  fi
  echo "test.sh: warning: could not install prometheus / prometheus-pushgateway / chromium" >&2
fi
reports=""
if [ -n "$sanitize" ]; then
  reports=$BUILD_DIR/sanitizer-reports
  rm -rf "$reports"
  mkdir -p "$reports"
  # UBSan stops at its first report (it would only print and go on); TSan exits 66 at the end.
  export ASAN_OPTIONS="log_path=$reports/asan:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
  export TSAN_OPTIONS="log_path=$reports/tsan:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
fi
# One test at a time: several tests measure idle fractions against a wall clock, and two
# cores shared between parallel tests would blur them.
rc=0
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@" || rc=$?
if [ -n "$reports" ] && [ -n "$(ls -A "$reports")" ]; then
  echo "test.sh: $(ls "$reports" | wc -l) sanitizer report file(s) in $reports:" >&2
  for f in "$reports"/*; do
    echo "== $f" >&2
    head -n 60 "$f" >&2
  done
  exit 1
fi
if [ -n "$sanitize" ] && [ "$rc" -eq 0 ]; then
  echo "test.sh: no sanitizer reports ($sanitize)" >&2
fi
exit "$rc"
