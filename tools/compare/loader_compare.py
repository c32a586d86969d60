#!/usr/bin/env python3
"""stallscope's loader against the PyTorch DataLoader on the same files, in one invocation.

Both read every file of DIR through their own loader with the same worker count and batch
size, after one warm-up epoch (so the files are page-cached for both), and apply the same
preprocessing: --mode normalize (bytes -> float32 / 255) or --mode jpeg (decode, Resize(256),
CenterCrop(224), ImageNet normalization; stallscope's `preprocess: jpeg-decode`, PIL in
the DataLoader). stallscope runs `stallscope run` with a zero step time on the emulated
device, so the loader alone sets the pace. Prints both rates (median of --repeat) and the
ratio.

The DataLoader is given its best arrangement on this host first (torch_dataloader.py
--search: every arrangement timed for one epoch, the fastest kept), and runs in the environment
peer_env.py describes: this one's, less the BLAS variables known to slow it (--keep-env
leaves them, to measure what they cost). The peer's environment is printed with the result.

    /usr/bin/python3 tools/compare/loader_compare.py DIR --mode jpeg [--workers 2] [--batch 256]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def stallscope_rate(binary, d, mode, workers, batch, epochs):
    kind = {"none": "none", "normalize": "normalize", "jpeg": "jpeg-decode",
            # the crop's uint8 pixels handed over, normalized by the device (normalize_on)
            "jpeg-device": "jpeg-decode, normalize_on: device"}[mode]
    scenario = f"""name: loader-compare
dataset: {{path: {json.dumps(os.path.abspath(d))}}}
storage: {{kind: directory}}
loader: {{batch_size: {batch}, workers: {workers}, prefetch: 4, preprocess: {{kind: {kind}}}}}
gpu: {{device: emulated, step_time: 0ms}}
run: {{epochs: {epochs + 1}, verify: false}}
"""
    with tempfile.TemporaryDirectory() as tmp:
        path, out = os.path.join(tmp, "s.yaml"), os.path.join(tmp, "r.json")
        with open(path, "w") as f:
            f.write(scenario)
        subprocess.run([binary, "run", path, "--quiet", "--json", out], check=True,
                       stdout=subprocess.DEVNULL)
        v = json.load(open(out))["variants"][0]
    later = [e["samples_per_second"] for e in v["epochs"][1:]]  # epoch 0 warms the cache
    return statistics.mean(later)


def torch_run(d, mode, workers, batch, epochs, keep_env, extra):
    cmd = [sys.executable, os.path.join(HERE, "torch_dataloader.py"), d, "--workers",
           str(workers), "--batch", str(batch), "--epochs", str(epochs), "--repeat", "1"] + extra
    if mode == "jpeg":
        cmd.append("--jpeg")
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          env=peer_env.peer_env(keep_env)).stdout


def torch_rate(d, mode, workers, batch, epochs, keep_env=False, arrangement=None):
    extra = ["--arrangement", arrangement] if arrangement else []
    out = torch_run(d, mode, workers, batch, epochs, keep_env, extra)
    return float(re.search(r"samples_per_second (\d+)", out).group(1))


def torch_best_arrangement(d, mode, workers, batch, keep_env):
    """Times every arrangement for one epoch; returns the fastest and the printed lines."""
    out = torch_run(d, mode, workers, batch, 1, keep_env, ["--search"])
    lines = [l for l in out.splitlines() if l.startswith("arrangement ")]
    return re.search(r"best_arrangement (\S+)", out).group(1), lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--mode", choices=["normalize", "jpeg"], default="normalize")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=1, help="timed epochs per run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stallscope", default=os.path.join(ROOT, "build/tools/stallscope"))
    ap.add_argument("--keep-env", action="store_true",
                    help="the DataLoader inherits every variable, the slowing ones included")
    ap.add_argument("--arrangement", help="skip the search: the DataLoader arrangement to use")
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
        if a.mode == "jpeg":
            import PIL  # noqa: F401
    except ImportError as e:
        sys.exit(f"loader_compare: {e.name} is missing (Debian: python3-torch, python3-pil)")
    for line in peer_env.describe(a.keep_env):
        print(line)
    best = a.arrangement
    if not best:
        best, lines = torch_best_arrangement(a.dir, a.mode, a.workers, a.batch, a.keep_env)
        print("DataLoader arrangements tried (one timed epoch each, after a warm-up epoch):")
        for line in lines:
            print("  " + line)
    print(f"DataLoader arrangement used: {best}, pin_memory off, persistent workers")
    ours, theirs = [], []
    for _ in range(a.repeat):  # alternated, so drift on a shared machine hits both
        ours.append(stallscope_rate(a.stallscope, a.dir, a.mode, a.workers, a.batch, a.epochs))
        theirs.append(torch_rate(a.dir, a.mode, a.workers, a.batch, a.epochs, a.keep_env, best))
    o, t = statistics.median(ours), statistics.median(theirs)
    print(f"{a.dir}: mode {a.mode}, {a.workers} workers, batch {a.batch}, page-cached, "
          f"median of {a.repeat} alternated runs")
    print(f"  stallscope            {o:12,.0f} samples/s   (runs: {', '.join(f'{x:,.0f}' for x in ours)})")
    print(f"  PyTorch DataLoader    {t:12,.0f} samples/s   (runs: {', '.join(f'{x:,.0f}' for x in theirs)})")
    print(f"  ratio                 {o / t:12.2f}x")


if __name__ == "__main__":
    main()
