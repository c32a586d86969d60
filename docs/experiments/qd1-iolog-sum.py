#!/usr/bin/env python3
# Summarizes the I/O thread's schedstat lines written by a bundle with
# docs/experiments/probe-qd1-sched.patch (SS_IOLOG=prefix; one file per I/O thread, one "W" line
# per wake: steady ns, completions reaped, on-CPU ns, runnable-but-waiting ns, slices; "T"
# lines: every thread's schedstat every 400 wakes). Between two wakes that reaped a read, the
# I/O thread either ran (cpu), waited for a core (runqueue), or slept (the kernel/the disk).
#   python3 qd1-iolog-sum.py FILE...
# With --split MS, a file is cut where no read ended for MS ms (the phases of calibrate --dir
# that share one reader: its busy rounds run alone / beside busy threads on every core / on
# every core but one, over and over) and each stretch is summarized on its own.
import sys
args = sys.argv[1:]
split = None
if args and args[0] == '--split':
    split = float(args[1]) * 1e6
    args = args[2:]
def stretches(fn):
    w = []
    for line in open(fn):
        p = line.split()
        if p[0] == 'W' and len(p) >= 6:
            w.append((int(p[1]), int(p[2]), int(p[3]), int(p[4])))
    if split is None:
        yield fn, w
        return
    cur, k, last = [], 0, None
    for x in w:
        if cur and x[1] > 0 and last is not None and x[0] - last > split:
            k += 1
            yield '%s#%d' % (fn, k), cur
            cur = []
        cur.append(x)
        if x[1] > 0:
            last = x[0]
    yield '%s#%d' % (fn, k + 1), cur
for fn, w in (s for f in args for s in stretches(f)):
    prev = None
    tot = [0, 0, 0, 0]; big = [0, 0, 0, 0, 0]; reads = 0
    for t, n, cpu, rq in w:
        if n == 0:
            continue
        if prev:
            dt, dc, dr = t - prev[0], cpu - prev[2], rq - prev[3]
            reads += n
            tot[0] += dt; tot[1] += dc; tot[2] += dr
            if dt > 1e6:
                big[0] += 1; big[1] += dt; big[2] += dc; big[3] += dr
        prev = (t, n, cpu, rq)
    if not reads:
        print(fn, 'no reads'); continue
    us = lambda x: x / 1e3
    print('%s: %d reads; per read %.0f us = cpu %.0f + waiting for a core %.0f + asleep %.0f'
          % (fn.split('/')[-1], reads, us(tot[0]) / reads, us(tot[1]) / reads, us(tot[2]) / reads,
             us(tot[0] - tot[1] - tot[2]) / reads))
    if big[0]:
        print('   %d gaps >1 ms, %.1f ms: cpu %.1f, waiting for a core %.1f, asleep %.1f ms'
              % (big[0], big[1] / 1e6, big[2] / 1e6, big[3] / 1e6, (big[1] - big[2] - big[3]) / 1e6))
