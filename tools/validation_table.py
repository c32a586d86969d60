#!/usr/bin/env python3
"""The README's validation table from simulator_validation_test output.

    tools/validation_table.py LOG [LOG...]

Each LOG holds the output of one or more runs of build/tests/simulator_validation_test (as
docs/validation-*.log do). Every comparison row ("LABEL VARIANT real idle X% simulated Y%
(D pp) KIND") is grouped by label and variant over all runs; the table gives each one's range
of real and simulated idle and of the difference, and what it counts as. Informative rows come
first, then declared no-idle ones, then those not counted, with their counts; the rows of
variants that were not run are listed after the table with the reason.
"""
import re
import sys
from collections import OrderedDict

ROW = re.compile(
    r"^(?P<label>.{28,}?) (?P<variant>\S+)\s+real idle\s+(?P<real>[\d.]+)%\s+simulated\s+"
    r"(?P<sim>[\d.]+)%\s+\((?P<diff>[+-][\d.]+) pp\)\s+(?P<kind>.+)$")
NOT_RUN = re.compile(r"^(?P<label>.{28,}?) (?P<variant>\S+)\s+not run: (?P<why>.+)$")


def main(paths):
    rows = OrderedDict()
    not_run = OrderedDict()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                m = ROW.match(line)
                if m:
                    key = (m["label"].strip(), m["variant"])
                    r = rows.setdefault(key, {"real": [], "sim": [], "diff": [], "kind": set()})
                    r["real"].append(float(m["real"]))
                    r["sim"].append(float(m["sim"]))
                    r["diff"].append(float(m["diff"]))
                    r["kind"].add(m["kind"].split(":")[0])
                    continue
                m = NOT_RUN.match(line)
                if m:
                    not_run[(m["label"].strip(), m["variant"])] = m["why"]
    # A variant compared in another test ("real_directory at 200 MB/s", throttled) ran after all.
    for label, variant in list(not_run):
        if any(v == variant and (l == label or l.startswith(label + " ")) for l, v in rows):
            del not_run[(label, variant)]
    order = {"informative": 0, "declared no idle": 1, "not counted": 2}

    def kind_of(r):
        kinds = sorted(r["kind"], key=lambda k: order.get(k, 3))
        return " / ".join(kinds)

    def span(v, signed=False):
        fmt = "{:+.1f}" if signed else "{:.1f}"
        lo, hi = min(v), max(v)
        return fmt.format(lo) if lo == hi else f"{fmt.format(lo)} … {fmt.format(hi)}"

    ranked = sorted(rows.items(), key=lambda kv: order.get(min(
        kv[1]["kind"], key=lambda k: order.get(k, 3)), 3))
    print("| scenario / sweep | variant | runs | real idle % | simulated idle % "
          "| difference, pp | counts as |")
    print("|---|---|---|---|---|---|---|")
    counts = {}
    for (label, variant), r in ranked:
        kind = kind_of(r)
        counts[kind] = counts.get(kind, 0) + 1
        print(f"| {label} | {variant} | {len(r['real'])} | {span(r['real'])} | {span(r['sim'])} "
              f"| {span(r['diff'], True)} | {kind} |")
    print()
    print("Comparisons: " + ", ".join(f"{n} {k}" for k, n in counts.items()) +
          f"; largest difference over all runs {max(abs(d) for r in rows.values() for d in r['diff'] if 'informative' in r['kind'] or 'declared no idle' in r['kind']):.1f} pp "
          "(informative and declared rows).")
    if not_run:
        print()
        print("Not run: " + "; ".join(f"`{l}/{v}` ({why})" for (l, v), why in not_run.items()) + ".")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    main(sys.argv[1:])
