#!/usr/bin/env python3
"""The PyTorch DataLoader on a stallscope-gen directory: what most users run today.

Same files, same worker count and batch size as tools/bench_pipeline's "bytes -> float"
row: each sample is read whole and turned into float32 / 255. By default the workers return
the bytes and the float conversion runs once per collated batch in the main process, the
fastest arrangement we measured (27k samples/s against 18k for a per-sample conversion in
the workers, --float-in-worker, on 2 cores). Prints "samples_per_second N" (median of
--repeat timed runs, after one warm-up epoch).

With --jpeg each file is decoded with PIL and transformed as torchvision's
Resize(256) + CenterCrop(224) + ToTensor() + Normalize(ImageNet mean, std) do (written out
with PIL and torch, so torchvision is not needed): what stallscope's `preprocess:
jpeg-decode` does. Everything runs in the workers, as with torchvision's transforms: that
measured faster (421 samples/s, 2,000 images, 2 workers) than returning uint8 images and
normalizing each batch in the main process (156 samples/s, --normalize-in-main).

    /usr/bin/python3 tools/compare/torch_dataloader.py DIR [--workers 2] [--batch 256] [--jpeg]
"""
import argparse
import os
import statistics
import time

import torch
from torch.utils.data import DataLoader, Dataset


MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def decode_jpeg(path, to_float, size=224, resize=256):
    from PIL import Image
    img = Image.open(path).convert("RGB")
    w, h = img.size
    if min(w, h) != resize:
        s = resize / min(w, h)
        img = img.resize((max(resize, round(w * s)), max(resize, round(h * s))), Image.BILINEAR)
        w, h = img.size
    left, top = (w - size) // 2, (h - size) // 2
    img = img.crop((left, top, left + size, top + size))
    t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(size, size, 3)
    t = t.permute(2, 0, 1).contiguous()
    return normalize_images(t) if to_float else t


def normalize_images(t):
    """ToTensor + Normalize on uint8 CHW (or NCHW) images."""
    return (t.float().div_(255.0) - MEAN) / STD


class Files(Dataset):
    def __init__(self, root, float_in_worker, jpeg=False, normalize_in_main=False):
        self.float_in_worker = float_in_worker
        self.jpeg = jpeg
        self.normalize_in_main = normalize_in_main
        self.paths = sorted(
            os.path.join(d, f)
            for d, _, files in os.walk(root)
            for f in files
            if not f.startswith(".stallscope-gen"))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        if self.jpeg:
            return decode_jpeg(self.paths[i], not self.normalize_in_main)
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
    ap.add_argument("--jpeg", action="store_true", help="PIL decode + crop + normalize")
    ap.add_argument("--normalize-in-main", action="store_true",
                    help="with --jpeg: workers return uint8, the main process normalizes")
    a = ap.parse_args()
    ds = Files(a.dir, a.float_in_worker, a.jpeg, a.normalize_in_main)
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
                if a.jpeg:
                    if a.normalize_in_main:
                        batch = normalize_images(batch)
                elif not a.float_in_worker:
                    batch = batch.float().div_(255.0)
                n += batch.shape[0]
        rates.append(n / (time.perf_counter() - t0))
    print(f"files {len(ds)} workers {a.workers} batch {a.batch}")
    print(f"samples_per_second {statistics.median(rates):.0f}")


if __name__ == "__main__":
    main()
