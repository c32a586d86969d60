#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium loads it with no console errors and
# draws every chart (the SVG elements are in the rendered DOM, with their series; per-epoch
# values as bars; every axis on round ticks), and its screenshot is a real picture.
# Exit 77 = skipped (Debian's chromium is not installed; tools/test.sh installs it).
#   tests/report_test.sh STALLSCOPE_BINARY SCENARIOS_DIR
set -euo pipefail
stallscope=$1
scenarios=$2
command -v chromium >/dev/null || { echo "SKIP: chromium is not installed"; exit 77; }
work=$(mktemp -d /tmp/stallscope-report-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$stallscope" run "$scenarios/cold_vs_cached.yaml" --quiet --variant cold --variant cached \
  --set dataset.samples=640 --json "$work/a.json" >/dev/null
"$stallscope" run "$scenarios/prefetch_sweep.yaml" --quiet --variant prefetch-0 \
  --variant prefetch-4 --set dataset.samples=512 --json "$work/b.json" >/dev/null
"$stallscope" report "$work/a.json" "$work/b.json" -o "$work/report.html" --quiet

chrome=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
        --disable-background-networking --disable-component-update --disable-sync
        --user-data-dir="$work/profile" --enable-logging=stderr --v=0)
timeout 120 "${chrome[@]}" --window-size=860,3000 --screenshot="$work/report.png" \
  "file://$work/report.html" >"$work/shot.log" 2>&1
timeout 120 "${chrome[@]}" --dump-dom "file://$work/report.html" >"$work/dom.html" 2>"$work/dom.log"

python3 - "$work" <<'PY'
import math, os, re, sys
work = sys.argv[1]
dom = open(f"{work}/dom.html").read()
logs = open(f"{work}/shot.log").read() + open(f"{work}/dom.log").read()
failures = []
console = [l for l in logs.splitlines() if "CONSOLE" in l or "Uncaught" in l]
if console:
    failures.append("console messages: " + "; ".join(console[:3]))
charts = re.findall(r'<svg class="chart"', dom)
if len(charts) != 4:
    failures.append(f"expected 4 charts in the rendered page, found {len(charts)}")
series = re.findall(r'<path class="series" d="M[^"]+"', dom)
lines = re.findall(r'<path class="series" d="M[^"]+L', dom)   # at least 2 points
if len(series) != 2 * 4:  # 4 variants in each of the 2 line charts (over time)
    failures.append(f"expected 8 series, found {len(series)}")
if len(lines) < 2 * 4:  # utilization and queues over time have many points per variant
    failures.append(f"expected >= 8 drawn lines, found {len(lines)}")
bars = re.findall(r'<rect class="bar"', dom)
if len(bars) < 4:
    failures.append(f"expected stall bars, found {len(bars)}")
# Per-epoch values are bars at epochs 0, 1, 2 ..., every variant with at least one.
epoch_bars = re.findall(r'<rect class="epoch-bar"', dom)
if len(epoch_bars) < 4:
    failures.append(f"expected >= 4 per-epoch bars, found {len(epoch_bars)}")
# Every axis counts 0, s, 2s, ... with s = 1, 2 or 5 x 10^k.
axes = 0
for chart in re.findall(r'<svg class="chart".*?</svg>', dom, re.S):
    for axis in ("x-tick", "y-tick"):
        labels = re.findall(rf'<text class="{axis}"[^>]*>([^<]*)</text>', chart)
        if not labels:
            continue
        axes += 1
        values = [float(l.rstrip("%kMG")) for l in labels]
        step = values[1] if len(values) > 1 else 0
        mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9) if step > 0 else 0
        round_step = any(abs(mantissa - m) < 1e-9 for m in (1, 2, 5))
        if values[0] != 0 or not round_step or any(
                abs(v - i * step) > step * 1e-6 for i, v in enumerate(values)):
            failures.append(f"{axis} labels are not round steps from 0: {labels}")
if axes != 3 * 2:
    failures.append(f"expected 6 labelled axes (3 charts x and y), found {axes}")
png = f"{work}/report.png"
if not os.path.exists(png) or os.path.getsize(png) < 20000:
    failures.append("no screenshot, or a blank one")
elif open(png, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
    failures.append("screenshot is not a PNG")
for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print(f"ok: {len(charts)} charts, {len(series)} series, {len(bars)} bars, "
      f"{len(epoch_bars)} epoch bars, {axes} round axes, "
      f"screenshot {os.path.getsize(png)} bytes, no console messages")
PY
echo "1 passed, 0 failed"
