#!/usr/bin/env python3
"""Where a training step's idle time between kernels goes, from a CUPTI record dump.

    STALLSCOPE_CUPTI_KERNELS=k.txt stallscope run scenarios/gpu_compute_bound.yaml \\
        --variant cublas --set gpu.step_time=5ms --set gpu.graph=true --quiet
    tools/gpu_step_gaps.py k.txt

k.txt holds one record a line, "start_ns end_ns stream name" (kernels, and MEMSET / MEMCPYk
records, gpu/cupti_busy.cc). A step starts at its input-gather kernel. For the steps of the
most common length after the first quarter (steady state), prints per position the median
gap before the record (its start minus the previous record's end, negative where they
overlap: another stream, or programmatic dependent launch), its median duration, its
stream and its name.
"""
import collections
import statistics
import sys


def main(path):
    rows = []
    with open(path) as f:
        for line in f:
            start, end, stream, name = line.rstrip("\n").split(" ", 3)
            rows.append((int(start), int(end), int(stream), name))
    rows.sort()
    steps, current = [], None
    for r in rows:
        if "GatherInput" in r[3]:
            if current:
                steps.append(current)
            current = [r]
        elif current is not None:
            current.append(r)
    if current:
        steps.append(current)
    if not steps:
        sys.exit(f"{path}: no step (no GatherInput kernel) in {len(rows)} records")
    lengths = collections.Counter(len(s) for s in steps)
    n = lengths.most_common(1)[0][0]
    steady = [s for s in steps[len(steps) // 4:] if len(s) == n]
    print(f"{len(rows)} records, {len(steps)} steps; records a step: {lengths.most_common(4)}")
    print(f"{len(steady)} steady steps of {n}; per position: median gap before (us), "
          "median duration (us), stream, name")
    total = 0.0
    for i in range(n):
        gap = statistics.median((s[i][0] - s[i - 1][1]) / 1e3 for s in steady) if i else 0.0
        duration = statistics.median((s[i][1] - s[i][0]) / 1e3 for s in steady)
        total += gap
        print(f"{i:3} gap {gap:7.2f}  dur {duration:9.2f}  s{steady[0][i][2]}  {steady[0][i][3][:110]}")
    print(f"sum of the median gaps inside a step: {total:.1f} us (records on other streams "
          "count negative)")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    main(sys.argv[1])
