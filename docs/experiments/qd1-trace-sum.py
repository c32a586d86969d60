# python3 qd1-trace-sum.py TRACE.json...: per trace (a run's or a simulation's), the medians of
# each kind of span, the time between two batches' fetch ends, the stalls summed by stage and,
# for a run, the time between two reads' ends (a depth-1 read's time in the run) and where its
# gaps over 1 ms begin: at a chunk's start (the workers woke to a batch), and how many workers
# were on a chunk halfway through the gap.
import bisect, json, sys
from collections import defaultdict
def med(v):
    v = sorted(v); return v[len(v) // 2] if v else 0
for f in sys.argv[1:]:
    try:
        d = json.load(open(f))
    except (OSError, ValueError):
        continue
    ev = d['traceEvents'] if isinstance(d, dict) else d
    X = [e for e in ev if e.get('ph') == 'X']
    kinds = defaultdict(list); stalls = defaultdict(float)
    for e in X:
        k = e['name'].split(' ')[0]
        if e.get('cat') == 'stall': stalls[e['name']] += e['dur'] / 1000
        else: kinds[k].append(e['dur'])
    fe = sorted(e['ts'] + e['dur'] for e in X if e['name'].startswith('fetch'))
    ends = sorted(e['ts'] + e['dur'] for e in X if e.get('cat') == 'read')
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    small = [g for g in gaps if g <= 1000]
    span = (max(e['ts'] + e['dur'] for e in X) - min(e['ts'] for e in X)) / 1000
    out = '%s: %.0f ms; ' % (f.split('/')[-1], span)
    out += ' '.join('%s p50 %.0fus n%d' % (k, med(v), len(v)) for k, v in sorted(kinds.items()) if k != 'read')
    out += ' | fetch-end gap p50 %.0fus' % med([b - a for a, b in zip(fe, fe[1:])])
    if gaps:
        out += ' | read-end gap p50 %.0f mean(<=1ms) %.0f us, %d gaps >1ms %.0f ms' % (
            med(gaps), sum(small) / max(1, len(small)), len(gaps) - len(small), sum(g for g in gaps if g > 1000) / 1000)
        chunks = [(e['ts'], e['ts'] + e['dur']) for e in X if e['name'].startswith('preprocess')]
        big = [(a, b) for a, b in zip(ends, ends[1:]) if b - a > 1000]
        if big and chunks:
            at_start = sum(1 for a, b in big if any(a - 50 <= s0 <= a + 300 for s0, _ in chunks))
            mid = [sum(1 for s0, f0 in chunks if s0 <= (a + b) / 2 <= f0) for a, b in big]
            out += ' (median %.0f us; %d begin as a chunk starts; workers on a chunk mid-gap: %s)' % (
                med([b - a for a, b in big]), at_start,
                ' '.join('%d:%d' % (k, mid.count(k)) for k in sorted(set(mid))))
    # Reads beside workers: the time with both workers working on chunks, and the reads that
    # ended then (per ms, against the whole run's pace). 0 there: the I/O thread got no core.
    W = sorted([(e['ts'], 1) for e in X if e['name'].startswith('preprocess')] +
               [(e['ts'] + e['dur'], -1) for e in X if e['name'].startswith('preprocess')])
    n, start, both = 0, None, []
    for t, dn in W:
        was = n; n += dn
        if was < 2 <= n: start = t
        if was >= 2 > n: both.append((start, t))
    if both and ends:
        both_ms = sum(b - a for a, b in both) / 1000
        inside = sum(bisect.bisect_left(ends, b) - bisect.bisect_left(ends, a) for a, b in both)
        out += ' | both workers busy %.0f ms: reads %.1f/ms then, %.1f/ms overall' % (
            both_ms, inside / both_ms, len(ends) / ((ends[-1] - ends[0]) / 1000))
    out += ' | stalls ms ' + ' '.join('%s %.0f' % (k.split(' ')[1], v) for k, v in sorted(stalls.items()))
    print(out)
