#!/usr/bin/env bash
# tools/test.sh [--sanitize address,undefined|thread] [ctest args...]
# Installs what is missing, builds, and runs the whole test suite through ctest.
# With --sanitize the build goes to build-<sanitizers>/ with -fsanitize=... .
set -euo pipefail
sanitize=""
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=$2
  shift 2
fi
if [ -n "$sanitize" ]; then
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  export BUILD_DIR=$ROOT/build-${sanitize//,/-}
  export CMAKE_EXTRA_ARGS="-DSTALLSCOPE_SANITIZE=$sanitize"
fi
source "$(dirname "$0")/setup.sh"
stallscope_build
# Servers the integration tests start (a real Prometheus and Pushgateway). Without them those
# tests report themselves skipped rather than failing the suite.
# Test tools: a real Prometheus and Pushgateway, and Chromium to render the HTML report.
# Without them those tests report themselves skipped rather than failing the suite.
stallscope_install_missing prometheus prometheus-pushgateway chromium ||
  echo "test.sh: warning: could not install prometheus / prometheus-pushgateway / chromium" >&2
# One test at a time: several tests measure idle fractions against a wall clock, and two
# cores shared between parallel tests would blur them.
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
