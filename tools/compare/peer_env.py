"""The environment a peer (the PyTorch DataLoader, fio) runs in: recorded, and cleaned of what
is known to slow it, for the peer's process only.

Some machines of this kind export BLAS tuning variables that force a CPU type or a cache size
(OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE; NVPL_BLAS_DEBUG_CPU_TYPE for NVIDIA's NVPL BLAS). A
wrong core type or L2 size makes OpenBLAS pick kernels or blockings meant for another CPU,
which can slow numpy and torch. `peer_env()` returns the environment the
peer gets: this process's own, without those variables. `describe()` measures what the peer
then sees: torch's version and BLAS, its threads in the main process and in a DataLoader
worker (asked inside a worker, not assumed), the CPU model and the cores; and names the
variables removed and those kept that could matter (OMP_*, MKL_*, ...). It also measures what a
first write to fresh memory costs per 4 KiB page here (torch filling a new 64 MiB tensor,
then filling it again): on a host where the first write is slow, every new batch tensor
costs the DataLoader more than the work on it (torch_dataloader.py tries other allocators).
"""
import os
import subprocess
import sys

# Cleared for the peer: each forces a choice the library would otherwise make from the CPU.
SLOWING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NVPL_BLAS_DEBUG_CPU_TYPE")
# Kept but recorded: they set thread counts and other knobs the peer reads.
NOTED_PREFIXES = ("OPENBLAS_", "GOTO", "OMP_", "MKL_", "NVPL_", "BLIS_", "KMP_")

PROBE = r"""
import json, torch
from torch.utils.data import DataLoader, Dataset
class Threads(Dataset):
    def __len__(self): return 1
    def __getitem__(self, i): return torch.get_num_threads()
info = {"torch": torch.__version__, "main_threads": torch.get_num_threads()}
import re
m = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
info["blas"] = m.group(1) if m else "unknown"
par = torch.__config__.parallel_info()
m = re.search(r"parallel backend: *(\S+)", par)
o = re.search(r"omp_get_max_threads\(\) *: *(\d+)", par)
info["parallel"] = (f"{m.group(1) if m else 'unknown'} backend, "
                    f"omp_get_max_threads {o.group(1) if o else 'n/a'}")
info["worker_threads"] = int(next(iter(DataLoader(Threads(), num_workers=1)))[0])
import time
def fill(t):
    t0 = time.perf_counter()
    t.fill_(1)
    return (time.perf_counter() - t0) / (t.numel() / 4096) * 1e6
fresh = torch.empty(64 << 20, dtype=torch.uint8)  # 64 MiB: glibc maps new pages for it
info["first_touch_us"], info["second_touch_us"] = fill(fresh), fill(fresh)
try:
    import PIL
    info["pil"] = PIL.__version__
except ImportError:
    info["pil"] = None
print(json.dumps(info))
"""


def peer_env(keep=False):
    """The peer process's environment: this one's, less the SLOWING variables (unless keep)."""
    env = dict(os.environ)
    if not keep:
        for k in SLOWING:
            env.pop(k, None)
    return env


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def describe(keep=False):
    """Lines describing the peer's environment (measured in a child with that environment)."""
    import json
    out = subprocess.run([sys.executable, "-c", PROBE], env=peer_env(keep), check=True,
                         capture_output=True, text=True).stdout
    info = json.loads(out.strip().splitlines()[-1])
    removed = [f"{k}={os.environ[k]}" for k in SLOWING if k in os.environ and not keep]
    noted = sorted(f"{k}={v}" for k, v in os.environ.items()
                   if k.startswith(NOTED_PREFIXES) and (keep or k not in SLOWING))
    return [
        f"peer: torch {info['torch']} (BLAS {info['blas']}; {info['parallel']}), "
        f"PIL {info['pil'] or 'absent'}, "
        f"python {sys.version.split()[0]}; torch threads: {info['main_threads']} in the main "
        f"process, {info['worker_threads']} per DataLoader worker (measured in a worker)",
        f"host: {cpu_model()}, {os.cpu_count()} cores, {len(os.sched_getaffinity(0))} usable; "
        f"a first write to fresh memory {info['first_touch_us']:.2f} us per 4 KiB page, "
        f"a second {info['second_touch_us']:.2f} us (torch filling a new 64 MiB tensor)",
        "peer env removed: " + (", ".join(removed) if removed else "nothing (none was set)")
        + ("" if not keep else " (--keep-env: the peer inherits everything)"),
        "peer env kept: " + (", ".join(noted) if noted else "no BLAS/OpenMP variable"),
    ]


def main():
    """peer_env.py [--keep-env] -- COMMAND...: prints the peer's environment (describe()),
    then runs COMMAND in it; exits with COMMAND's status."""
    args = sys.argv[1:]
    keep = "--keep-env" in args[: args.index("--")] if "--" in args else False
    if "--" not in args or args.index("--") == len(args) - 1:
        sys.exit("usage: peer_env.py [--keep-env] -- COMMAND [ARG...]")
    for line in describe(keep):
        print(line, flush=True)
    cmd = args[args.index("--") + 1:]
    sys.exit(subprocess.run(cmd, env=peer_env(keep)).returncode)


if __name__ == "__main__":
    main()
