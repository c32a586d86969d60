#!/usr/bin/env bash
# tools/run.sh [SCENARIO.yaml] [stallscope run options...]
# Installs what is missing, builds, and runs a scenario (default: scenarios/cold_vs_cached.yaml).
# A bare file name is looked up in scenarios/ when it is not in the current directory.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
stallscope_build

scenario=${1:-$ROOT/scenarios/cold_vs_cached.yaml}
[ $# -gt 0 ] && shift
if [ ! -e "$scenario" ] && [ -e "$ROOT/scenarios/$scenario" ]; then
  scenario=$ROOT/scenarios/$scenario
fi
exec "$BUILD_DIR/tools/stallscope" run "$scenario" "$@"
