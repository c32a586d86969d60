#!/usr/bin/env python3
"""stallscope's rates as fractions of this machine's own ceilings, on the same files.

The ceilings come from tools/ceiling (plain loops, no stallscope code: open/read/close on N
threads, libjpeg-turbo decode, bytes -> float), stallscope's rates from `bench-dir` (its
defaults) and `stallscope run` (the loader alone: emulated device, zero step time, the
files page-cached by an untimed first epoch). With --jpeg, jpeg-decode runs twice: normalized
on the host, and with `normalize_on: device` (the crop's pixels handed over). With --cold-dir, also `bench-dir --cold`
(files evicted first) against the plain loop reading the same files cold. Both sides run
alternated, --repeat times; medians are printed with every run, after the host (CPU model,
cores, kernel) and the commit measured. Goals (issue #19) are printed beside each fraction;
--json FILE writes every row (tools/bench.sh prints them beside the peer ratios).

    /usr/bin/python3 tools/compare/ceiling_compare.py SMALL_DIR [--jpeg JPEG_DIR]
        [--cold-dir BIG_DIR] [--threads 2] [--repeat 3] [--json FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from loader_compare import stallscope_rate  # noqa: E402
from peer_env import cpu_model  # noqa: E402


def ceiling(binary, d, mode, threads, cold=False):
    out = subprocess.run([binary, d, "--mode", mode, "--threads", str(threads), "--repeat", "1",
                          "--json"] + (["--cold"] if cold else []), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["ceilings"][0]["files_per_second"]


def bench_dir(binary, d, cold=False):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "b.json")
        subprocess.run([binary, "bench-dir", d, "--quiet", "--json", out]
                       + (["--cold"] if cold else []), check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out))["files_per_second"]


def commit():
    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                       text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("small", help="a directory of small files (e.g. 50,000 x 4 KiB)")
    ap.add_argument("--jpeg", help="a directory of JPEGs (stallscope gen --format jpeg)")
    ap.add_argument("--cold-dir", help="a directory of large files read cold (e.g. 1 GiB of "
                    "1 MiB files): bench-dir --cold against the plain loop, cold")
    ap.add_argument("--json", help="write every row (rates, runs, fraction, goal) to this file")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="ceiling threads and stallscope workers (default: every core)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stallscope", default=os.path.join(ROOT, "build/tools/stallscope"))
    ap.add_argument("--ceiling", default=os.path.join(ROOT, "build/tools/ceiling"))
    a = ap.parse_args()
    n = a.threads
    # (row, ceiling mode, ceiling's measurement, stallscope's measurement, goal)
    read = lambda: ceiling(a.ceiling, a.small, "read", n)
    rows = [
        ("bench-dir, defaults", "read", read, lambda: bench_dir(a.stallscope, a.small), 1.0),
        ("run, preprocess none", "read", read,
         lambda: stallscope_rate(a.stallscope, a.small, "none", n, 256, 1), 0.9),
        ("run, normalize", "read", read,
         lambda: stallscope_rate(a.stallscope, a.small, "normalize", n, 256, 1), 0.6),
    ]
    if a.jpeg:
        rows.append(("run, jpeg decode+crop+normalize", "jpeg",
                     lambda: ceiling(a.ceiling, a.jpeg, "jpeg", n),
                     lambda: stallscope_rate(a.stallscope, a.jpeg, "jpeg", n, 256, 1), 0.9))
        rows.append(("run, jpeg decode+crop, device norm.", "jpeg",
                     lambda: ceiling(a.ceiling, a.jpeg, "jpeg", n),
                     lambda: stallscope_rate(a.stallscope, a.jpeg, "jpeg-device", n, 256, 1),
                     0.9))
    if a.cold_dir:  # the goal for cold reads is against fio (fio_compare.sh), not this loop
        rows.append(("bench-dir --cold", "read --cold",
                     lambda: ceiling(a.ceiling, a.cold_dir, "read", n, cold=True),
                     lambda: bench_dir(a.stallscope, a.cold_dir, cold=True), None))
    print(f"host: {cpu_model()}, {len(os.sched_getaffinity(0))} usable cores, "
          f"Linux {platform.release()}; stallscope {commit()}")
    print(f"ceilings: tools/ceiling, {n} threads; stallscope: {n} workers; "
          f"median of {a.repeat} alternated runs; files/s")
    doc = []
    for name, mode, ceiling_fn, ours_fn, goal in rows:
        ours, theirs = [], []
        for _ in range(a.repeat):
            theirs.append(ceiling_fn())
            ours.append(ours_fn())
        o, c = statistics.median(ours), statistics.median(theirs)
        runs = lambda xs: ", ".join(f"{x:,.0f}" for x in xs)
        print(f"  {name:34s} {o:10,.0f} / ceiling ({mode}) {c:10,.0f} = {o / c:5.2f}x"
              f"  ({f'goal {goal:.1f}x' if goal else 'no goal'}; runs {runs(ours)} / "
              f"{runs(theirs)})", flush=True)
        doc.append({"row": name, "ceiling_mode": mode, "stallscope": o, "ceiling": c,
                    "fraction": o / c, "goal": goal, "stallscope_runs": ours,
                    "ceiling_runs": theirs})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
