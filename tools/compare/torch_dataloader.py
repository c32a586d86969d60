#!/usr/bin/env python3
"""The PyTorch DataLoader on a stallscope-gen directory: what most users run today.

Same files, same worker count and batch size as tools/bench_pipeline's "bytes -> float"
row: each sample is read whole and turned into float32 / 255. By default the workers return
the bytes and the float conversion runs once per collated batch in the main process, the
fastest arrangement we measured (27k samples/s against 18k for a per-sample conversion in
the workers, --float-in-worker, on 2 cores). Prints "samples_per_second N" (median of
--repeat timed runs, after one warm-up epoch).

    /usr/bin/python3 tools/compare/torch_dataloader.py DIR [--workers 2] [--batch 256]
"""
import argparse
import os
import statistics
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, root, float_in_worker):
        self.float_in_worker = float_in_worker
        self.paths = sorted(
            os.path.join(d, f)
            for d, _, files in os.walk(root)
            for f in files
            if not f.startswith(".stallscope-gen"))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        return t.float().div_(255.0) if self.float_in_worker else t


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--float-in-worker", action="store_true")
    a = ap.parse_args()
    ds = Files(a.dir, a.float_in_worker)
    loader = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                        persistent_workers=a.workers > 0, prefetch_factor=4 if a.workers else None)
    for _ in loader:  # warm-up: page cache, worker start-up
        pass
    rates = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        n = 0
        for _ in range(a.epochs):
            for batch in loader:
                if not a.float_in_worker:
                    batch = batch.float().div_(255.0)
                n += batch.shape[0]
        rates.append(n / (time.perf_counter() - t0))
    print(f"files {len(ds)} workers {a.workers} batch {a.batch}")
    print(f"samples_per_second {statistics.median(rates):.0f}")


if __name__ == "__main__":
    main()
