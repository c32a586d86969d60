#!/usr/bin/env python3
"""stallscope's rates as fractions of this machine's own ceilings, on the same files.

The ceilings come from tools/ceiling (plain loops, no stallscope code: open/read/close on N
threads, libjpeg-turbo decode, bytes -> float), stallscope's rates from `bench-dir` (its
defaults) and `stallscope run` (the loader alone: emulated device, zero step time, the
files page-cached by an untimed first epoch). Both sides run alternated, --repeat times;
medians are printed with every run. Goals (issue #19) are printed beside each fraction.

    /usr/bin/python3 tools/compare/ceiling_compare.py SMALL_DIR [--jpeg JPEG_DIR] [--threads 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from loader_compare import stallscope_rate  # noqa: E402


def ceiling(binary, d, mode, threads):
    out = subprocess.run([binary, d, "--mode", mode, "--threads", str(threads), "--repeat", "1",
                          "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["ceilings"][0]["files_per_second"]


def bench_dir(binary, d):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "b.json")
        subprocess.run([binary, "bench-dir", d, "--quiet", "--json", out], check=True,
                       stdout=subprocess.DEVNULL)
        return json.load(open(out))["files_per_second"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("small", help="a directory of small files (e.g. 50,000 x 4 KiB)")
    ap.add_argument("--jpeg", help="a directory of JPEGs (stallscope gen --format jpeg)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="ceiling threads and stallscope workers (default: every core)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stallscope", default=os.path.join(ROOT, "build/tools/stallscope"))
    ap.add_argument("--ceiling", default=os.path.join(ROOT, "build/tools/ceiling"))
    a = ap.parse_args()
    n = a.threads
    # (row, ceiling mode, directory, stallscope's measurement, goal)
    rows = [
        ("bench-dir, defaults", "read", a.small, lambda: bench_dir(a.stallscope, a.small), 1.0),
        ("run, preprocess none", "read", a.small,
         lambda: stallscope_rate(a.stallscope, a.small, "none", n, 256, 1), 0.9),
        ("run, normalize", "read", a.small,
         lambda: stallscope_rate(a.stallscope, a.small, "normalize", n, 256, 1), 0.6),
    ]
    if a.jpeg:
        rows.append(("run, jpeg decode+crop+normalize", "jpeg", a.jpeg,
                     lambda: stallscope_rate(a.stallscope, a.jpeg, "jpeg", n, 256, 1), 0.9))
    print(f"ceilings: tools/ceiling, {n} threads; stallscope: {n} workers; "
          f"median of {a.repeat} alternated runs; files/s")
    for name, mode, d, ours_fn, goal in rows:
        ours, theirs = [], []
        for _ in range(a.repeat):
            theirs.append(ceiling(a.ceiling, d, mode, n))
            ours.append(ours_fn())
        o, c = statistics.median(ours), statistics.median(theirs)
        runs = lambda xs: ", ".join(f"{x:,.0f}" for x in xs)
        print(f"  {name:34s} {o:10,.0f} / ceiling ({mode}) {c:10,.0f} = {o / c:5.2f}x"
              f"  (goal {goal:.1f}x; runs {runs(ours)} / {runs(theirs)})")


if __name__ == "__main__":
    main()
