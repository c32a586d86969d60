# python3 qd1-trace-gaps.py TRACE.json: a depth-1 run's reads end one after another, so the
# time between two reads' ends is what each read took in the run (its service time plus any
# wait to be started). Prints their quantiles and the share of run time in gaps > 2x the p50.
import json, sys
d = json.load(open(sys.argv[1]))
ev = d['traceEvents'] if isinstance(d, dict) else d
ends = sorted(e['ts'] + e['dur'] for e in ev if e.get('cat') == 'read')
gaps = sorted(b - a for a, b in zip(ends, ends[1:]))
q = lambda p: gaps[min(len(gaps) - 1, int(p * len(gaps)))]
mean = sum(gaps) / len(gaps)
p50 = q(0.5)
slow = sum(g for g in gaps if g > 2 * p50) / sum(gaps)
# gaps over 1 ms: epoch boundary (evict) or the loader waiting for a free slot
big = [g for g in gaps if g > 1000]
print('reads %d gap us: p10 %.0f p50 %.0f p90 %.0f p99 %.0f mean %.0f (%.0f without >1ms: %d of them, %.0f ms) share>2xp50 %.2f' % (
    len(ends), q(.1), p50, q(.9), q(.99), mean, sum(g for g in gaps if g <= 1000) / max(1, len(gaps) - len(big)), len(big), sum(big) / 1000, slow))
