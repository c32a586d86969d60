# Cold reads one at a time: listing order, every 5th file (the probe's), and a shuffle (a
# run's epoch). Each pass drops the files from the page cache first. Prints mean us per file.
import os, random, sys, time
d = sys.argv[1]
files = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith('.bin'))
def drop(fs):
    for p in fs:
        fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
def read(fs):
    t = time.perf_counter()
    for p in fs:
        fd = os.open(p, os.O_RDONLY)
        while os.read(fd, 1 << 20): pass
        os.close(fd)
    return (time.perf_counter() - t) / len(fs) * 1e6
rng = random.Random(7)
for rnd in range(4):
    out = []
    for name in ('sorted', 'stride5', 'shuffled'):
        fs = files if name == 'sorted' else files[rnd % 5::5] if name == 'stride5' else rng.sample(files, len(files))
        drop(files); out.append('%s %.1f' % (name, read(fs)))
    print('round', rnd, ' '.join(out), flush=True)
