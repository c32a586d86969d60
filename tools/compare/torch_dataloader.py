#!/usr/bin/env python3
"""The PyTorch DataLoader on a stallscope-gen directory: what most users run today.

Same files, same worker count and batch size as stallscope's loader: each sample is read whole
and turned into float32 / 255 (or, with --jpeg, decoded with PIL and transformed as
torchvision's Resize(256) + CenterCrop(224) + ToTensor() + Normalize(ImageNet mean, std) do,
written out with PIL and torch so torchvision is not needed: stallscope's `preprocess:
jpeg-decode`).

The DataLoader gets its best documented arrangement: pin_memory off (a CPU-only host: pinning
only adds a copy), persistent workers, and of the arrangements below the fastest one found
by --search on this host (each timed for one epoch, after a warm-up epoch, over every file,
or 2,000 of them with --jpeg; all are printed):
  normalize: the float conversion per batch in the main process, with the main process's
             torch threads left alone, set to 1 (not competing with the workers for the
             cores) or to every core, or per sample in the workers; prefetch_factor 2 or 4.
  jpeg:      everything in the workers (torchvision's arrangement), or uint8 from the workers
             normalized per batch in the main process; prefetch_factor 2 or 4.
DataLoader workers already run torch with one thread (torch sets it in every worker;
peer_env.py measures it); the ",worker-threads-1" arrangements also call
torch.set_num_threads(1) in a worker_init_fn, as some guides advise, to show it.
Every arrangement is also tried with each memory allocator installed ("NAME@ALLOCATOR"), as
PyTorch's performance tuning guide advises for CPU work: glibc's malloc as it comes; glibc
keeping freed memory and backing it with transparent huge pages (GLIBC_TUNABLES); tcmalloc
and jemalloc (LD_PRELOAD; Debian: libtcmalloc-minimal4, libjemalloc2). Where a first write
to fresh memory is slow (peer_env.py measures it), a batch's new tensors cost the DataLoader
more than the work on them. Prints "samples_per_second N" (median of --repeat timed runs of
--epochs epochs, after one warm-up epoch) and, with --search, "best_arrangement NAME".

    /usr/bin/python3 tools/compare/torch_dataloader.py DIR [--workers 2] [--batch 256] [--jpeg]
        [--search | --arrangement NAME]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
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
    def __init__(self, root, float_in_worker, jpeg=False, normalize_in_main=False, limit=0):
        self.float_in_worker = float_in_worker
        self.jpeg = jpeg
        self.normalize_in_main = normalize_in_main
        self.paths = sorted(
            os.path.join(d, f)
            for d, _, files in os.walk(root)
            for f in files
            if not f.startswith(".stallscope-gen"))
        if limit:
            self.paths = self.paths[:limit]

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        if self.jpeg:
            return decode_jpeg(self.paths[i], not self.normalize_in_main)
        with open(self.paths[i], "rb") as f:
            data = f.read()
        t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        return t.float().div_(255.0) if self.float_in_worker else t


# name -> (float or normalize in the workers, main-process torch threads (None: torch's
# default; "all": every core), prefetch_factor, torch.set_num_threads(1) in worker_init_fn)
ARRANGEMENTS = {
    "normalize": {
        "float-in-main": (False, None, 4, False),
        "float-in-main,prefetch-2": (False, None, 2, False),
        "float-in-main,main-threads-1": (False, 1, 4, False),
        "float-in-main,main-threads-all": (False, "all", 4, False),
        "float-in-worker": (True, None, 4, False),
        "float-in-worker,prefetch-2": (True, None, 2, False),
        "float-in-worker,worker-threads-1": (True, None, 4, True),
    },
    "jpeg": {
        "all-in-workers": (True, None, 4, False),
        "all-in-workers,prefetch-2": (True, None, 2, False),
        "all-in-workers,worker-threads-1": (True, None, 4, True),
        "normalize-in-main": (False, None, 4, False),
        "normalize-in-main,main-threads-all": (False, "all", 4, False),
    },
}


def one_thread(_worker_id):
    torch.set_num_threads(1)


LIBS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib")


def allocators():
    """name -> the environment variables that select it; only those installed."""
    found = {"glibc": {},
             "glibc-thp": {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1:"
                           "glibc.malloc.mmap_threshold=33554432:"
                           "glibc.malloc.trim_threshold=4294967296"}}
    for name, lib in (("tcmalloc", "libtcmalloc_minimal.so.4"), ("jemalloc", "libjemalloc.so.2")):
        path = next((os.path.join(d, lib) for d in LIBS if os.path.exists(os.path.join(d, lib))),
                    None)
        if path:
            found[name] = {"LD_PRELOAD": path}
    return found


def use_allocator(name, argv):
    """Runs this script again (with argv) under the allocator's variables, unless they are in
    effect already."""
    if os.environ.get("STALLSCOPE_PEER_ALLOCATOR", "glibc") == name:
        return
    table = allocators()
    if name not in table:
        sys.exit(f"torch_dataloader: allocator {name}: expected one of {', '.join(table)}")
    env = dict(os.environ, STALLSCOPE_PEER_ALLOCATOR=name, **table[name])
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, __file__] + argv, env)


def timed_rates(root, mode, arrangement, workers, batch, epochs, repeat, limit=0):
    """samples/s of `repeat` timed runs of `epochs` epochs each, after one warm-up epoch."""
    in_worker, main_threads, prefetch, worker_one_thread = ARRANGEMENTS[mode][arrangement]
    jpeg = mode == "jpeg"
    if main_threads is not None:
        torch.set_num_threads(os.cpu_count() if main_threads == "all" else main_threads)
    ds = Files(root, in_worker and not jpeg, jpeg, jpeg and not in_worker, limit)
    loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                        pin_memory=False, persistent_workers=workers > 0,
                        prefetch_factor=prefetch if workers else None,
                        worker_init_fn=one_thread if worker_one_thread and workers else None)
    for _ in loader:  # warm-up: page cache, worker start-up
        pass
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = 0
        for _ in range(epochs):
            for b in loader:
                if jpeg and not in_worker:
                    b = normalize_images(b)
                elif not jpeg and not in_worker:
                    b = b.float().div_(255.0)
                n += b.shape[0]
        rates.append(n / (time.perf_counter() - t0))
    del loader
    return rates, len(ds)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jpeg", action="store_true", help="PIL decode + crop + normalize")
    ap.add_argument("--arrangement", help="one of the arrangements above (default: the first)")
    ap.add_argument("--search", action="store_true",
                    help="time every arrangement for one epoch, run the fastest")
    ap.add_argument("--search-files", type=int, default=0,
                    help="files per search epoch (default: every file; 2,000 with --jpeg)")
    ap.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    mode = "jpeg" if a.jpeg else "normalize"
    names = list(ARRANGEMENTS[mode])
    best = a.arrangement or names[0]
    if best.split("@")[0] not in ARRANGEMENTS[mode]:
        sys.exit(f"torch_dataloader: --arrangement {best}: expected one of {', '.join(names)}"
                 " (each optionally @ALLOCATOR)")
    if a.search:
        limit = a.search_files or (2000 if a.jpeg else 0)
        found = {}
        # each in its own process: set_num_threads is process-wide, the allocator too
        for name in [f"{n}@{alloc}" for n in names for alloc in allocators()]:
            out = subprocess.run(
                [sys.executable, __file__, a.dir, "--workers", str(a.workers), "--batch",
                 str(a.batch), "--epochs", "1", "--repeat", "1", "--arrangement", name,
                 "--limit", str(limit)] + (["--jpeg"] if a.jpeg else []),
                check=True, capture_output=True, text=True).stdout
            found[name] = float(re.search(r"samples_per_second (\d+)", out).group(1))
            files = int(re.search(r"^files (\d+)", out, re.M).group(1))
            print(f"arrangement {name:52s} {found[name]:10,.0f} samples/s ({files} files)")
        best = max(found, key=found.get)
        print(f"best_arrangement {best}")
    # the timed runs (not the search again) under the arrangement's allocator
    use_allocator(best.split("@")[1] if "@" in best else "glibc",
                  [a.dir, "--workers", str(a.workers), "--batch", str(a.batch), "--epochs",
                   str(a.epochs), "--repeat", str(a.repeat), "--arrangement", best, "--limit",
                   str(a.limit)] + (["--jpeg"] if a.jpeg else []))
    rates, files = timed_rates(a.dir, mode, best.split("@")[0], a.workers, a.batch, a.epochs,
                               a.repeat, a.limit)
    print(f"files {files} workers {a.workers} batch {a.batch} arrangement {best}")
    print(f"samples_per_second {statistics.median(rates):.0f}")


if __name__ == "__main__":
    main()
