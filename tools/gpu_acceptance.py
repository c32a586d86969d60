#!/usr/bin/env python3
"""Acceptance checks for the CUDA device; prints a PASS/FAIL table.

tools/gpu_check.sh runs this last, on the output directory OUT it has just filled.
It reads these files from OUT and nothing else:

  compute_bound.json  `stallscope run scenarios/gpu_compute_bound.yaml --json` (step 4):
                      per variant (cublas, own-gemm) gpu_idle_fraction, gpu.busy_fraction,
                      gpu.event_busy_fraction, gpu.loss, gpu.model; gpu.h2d of "cublas"
  starved.json        `stallscope run scenarios/gpu_starved.yaml --json` (step 5):
                      variants "cuda" and "emulated": gpu_idle_fraction, bottleneck;
                      gpu.busy_fraction and gpu.event_busy_fraction of "cuda"
  h2d.txt             bench_h2d's output (step 6): its H2D_PLAIN_BYTES_PER_SECOND line
  kernels.json        `stallscope kernels --json` (step 3): rows of the GEMM ladder
  graph-STEP-true.json  `stallscope run scenarios/gpu_compute_bound.yaml --variant cublas
                      --set gpu.step_time=STEP --set gpu.graph=true --json` (step 4b), STEP
                      50ms and 5ms: gpu_idle_fraction, gpu.busy_fraction, gpu.event_busy_fraction

The GPU test suite's and compute-sanitizer's exit statuses (steps 2 and 7) come as options.

By hand, e.g. on a copy of a run's output:
  python3 tools/gpu_acceptance.py /tmp/stallscope-gpu --tests-rc 0 --sanitizer-rc 0
Without --tests-rc / --sanitizer-rc those two checks FAIL with "missing input"; so does
every check whose file is absent (the other checks still run).

Exit status: 0 when every check passes, 1 when any fails (2: bad command line).

The checks are the acceptance criteria of the GPU issue (#4 in README.md's table); each is
one function below, registered with @check in the order the table prints them.
"""

import argparse
import json
import os
import re
import sys

# Thresholds. Fractions are in [0, 1]; "pp" means percentage points, an absolute
# difference of two fractions (0.01 = 1 pp), not a relative one. Every bound is inclusive.
COMPUTE_BOUND_IDLE_MAX = 0.01  # compute-bound: GPU idle fraction <= 1%
BUSY_FRACTION_AGREEMENT_PP = 0.01  # CUPTI vs CUDA-event busy fraction, |a - b| <= 1 pp
STARVED_IDLE_AGREEMENT_PP = 0.03  # starved: |idle(cuda) - idle(emulated)| <= 3 pp
LOSS_FACTOR_MAX = 0.5  # training loss: last <= 0.5 * first
H2D_FRACTION_OF_PLAIN_MIN = 0.9  # pipeline H2D >= 90% of a plain pinned copy
LADDER_SIZE = 4096  # the ladder checks compare kernels at n = 4096
OWN_FP32_PERCENT_OF_CUBLAS_MIN = 80  # best own fp32 GEMM >= 80% of cuBLAS
OWN_BF16_PERCENT_OF_CUBLAS_MIN = 50  # best own bf16 tensor-core GEMM >= 50% of cuBLAS
RUNG9 = "9 tma-wgmma bf16"
RUNG9_SIZES = (4096, 8192)  # issue #20: rung 9 >= 80% of cuBLAS bf16 at 4096³ and 8192³
RUNG9_PERCENT_OF_CUBLAS_MIN = 80
ALTERNATED_PAIRS_MIN = 20  # ... as the median of >= 20 runs alternated with cuBLAS
# Issue #20, graph-captured steps: CUDA events minus CUPTI busy fraction, by step time, and
# the compute-bound idle with graphs (50 ms steps).
GRAPH_EVENTS_MINUS_CUPTI_PP = {"50ms": 0.001, "5ms": 0.005}
GRAPH_COMPUTE_BOUND_IDLE_MAX = 0.003


class MissingInput(Exception):
    """An input file, a line in it, or a command-line option is absent."""


class Inputs:
    """OUT's files, each read once, and the exit statuses from the command line."""

    def __init__(self, out, tests_rc, sanitizer_rc):
        self.out = out
        self.tests_rc = tests_rc
        self.sanitizer_rc = sanitizer_rc
        self._cache = {}

    def _read(self, name):
        if name not in self._cache:
            path = os.path.join(self.out, name)
            try:
                with open(path) as f:
                    self._cache[name] = f.read()
            except FileNotFoundError:
                raise MissingInput(f"{path} not found") from None
        return self._cache[name]

    def json(self, name):
        return json.loads(self._read(name))

    def variants(self, name):
        """A scenario JSON's variants by name."""
        return {v["name"]: v for v in self.json(name)["variants"]}

    def plain_h2d_bytes_per_second(self):
        m = re.search(r"H2D_PLAIN_BYTES_PER_SECOND (\d+)", self._read("h2d.txt"))
        if not m:
            raise MissingInput(f"no H2D_PLAIN_BYTES_PER_SECOND line in {self.out}/h2d.txt")
        return float(m.group(1))

    def own_best_at_ladder_size(self, precision):
        """The fastest kernel of our own (not cuBLAS) at LADDER_SIZE in this precision."""
        rows = [r for r in self.json("kernels.json")["rows"]
                if r["size"] == LADDER_SIZE and r["precision"] == precision
                and not r["kernel"].startswith("cuBLAS")]
        if not rows:
            raise MissingInput(f"no own {precision} kernel at size {LADDER_SIZE} in kernels.json")
        return max(rows, key=lambda r: r["tflops"])


# Each check yields (suffix, ok, value) rows: suffix (None or e.g. "(cublas)") is appended
# to the check's title in the table, value is what was measured.
CHECKS = []


def check(title):
    def register(fn):
        fn.title = title
        CHECKS.append(fn)
        return fn
    return register


@check("compute-bound idle <= 1%")
def check_compute_bound_gpu_is_never_idle(inp):
    """Data from RAM keeps the GPU busy: idle fraction <= 1% in every variant."""
    for name, v in inp.variants("compute_bound.json").items():
        g = v["gpu"]
        yield (f"({name})", v["gpu_idle_fraction"] <= COMPUTE_BOUND_IDLE_MAX,
               f"idle {100*v['gpu_idle_fraction']:.2f}%, "
               f"step {g['model'].get('calibrated_step_seconds', 0)*1e3:.1f} ms, "
               f"hidden {g['model']['hidden_width']:.0f}")


def _busy_fractions_agree(g):
    return (abs(g["busy_fraction"] - g["event_busy_fraction"]) <= BUSY_FRACTION_AGREEMENT_PP,
            f"{100*g['busy_fraction']:.2f}% vs {100*g['event_busy_fraction']:.2f}%")


@check("CUPTI vs events within 1 pp")
def check_cupti_and_events_agree_on_busy_time(inp):
    """CUPTI's busy fraction and the CUDA events' agree within 1 pp, compute-bound variants."""
    for name, v in inp.variants("compute_bound.json").items():
        yield (f"({name})",) + _busy_fractions_agree(v["gpu"])


@check("loss halves")
def check_training_loss_halves(inp):
    """The MLP really trains: last loss <= half the first, every compute-bound variant."""
    for name, v in inp.variants("compute_bound.json").items():
        loss = v["gpu"]["loss"]
        yield (f"({name})", loss["last"] <= LOSS_FACTOR_MAX * loss["first"],
               f"{loss['first']:.3f} -> {loss['last']:.3f} over {loss['steps']} steps")


@check("pipeline H2D >= 90% of plain pinned copy")
def check_pipeline_h2d_keeps_up_with_plain_pinned_copy(inp):
    """The pipeline's H2D rate (cublas variant) >= 90% of bench_h2d's plain pinned copy."""
    plain = inp.plain_h2d_bytes_per_second()
    pipe = inp.variants("compute_bound.json")["cublas"]["gpu"]["h2d"]["bytes_per_second"]
    yield (None, pipe >= H2D_FRACTION_OF_PLAIN_MIN * plain,
           f"{pipe/1e9:.1f} vs {plain/1e9:.1f} GB/s = {100*pipe/plain:.0f}%")


@check("starved: cuda idle within 3 pp of emulated")
def check_starved_cuda_idle_matches_emulated(inp):
    """Starved storage idles the real GPU as much as the emulated device, within 3 pp."""
    st = inp.variants("starved.json")
    c, e = st["cuda"], st["emulated"]
    yield (None,
           abs(c["gpu_idle_fraction"] - e["gpu_idle_fraction"]) <= STARVED_IDLE_AGREEMENT_PP,
           f"{100*c['gpu_idle_fraction']:.1f}% vs {100*e['gpu_idle_fraction']:.1f}%")


@check("starved: verdict fetch")
def check_starved_verdict_is_fetch(inp):
    """Both starved variants blame the fetch stage."""
    st = inp.variants("starved.json")
    c, e = st["cuda"], st["emulated"]
    yield (None, c["bottleneck"]["stage"] == "fetch" and e["bottleneck"]["stage"] == "fetch",
           c["bottleneck"]["text"])


@check("CUPTI vs events within 1 pp (starved)")
def check_cupti_and_events_agree_on_busy_time_when_starved(inp):
    """As check_cupti_and_events_agree_on_busy_time, for the starved scenario's cuda variant."""
    yield (None,) + _busy_fractions_agree(inp.variants("starved.json")["cuda"]["gpu"])


@check("every ladder version validated")
def check_every_ladder_rung_validates(inp):
    """Every kernel-ladder run matched the reference (its "valid" flag)."""
    rows = inp.json("kernels.json")["rows"]
    yield (None, all(r["valid"] for r in rows), f"{len(rows)} runs")


@check("best own fp32 >= 80% cuBLAS at 4096")
def check_best_own_fp32_gemm_near_cublas(inp):
    """Our fastest fp32 GEMM at 4096 reaches >= 80% of cuBLAS (its percent_of_cublas)."""
    r = inp.own_best_at_ladder_size("fp32")
    yield (None, r["percent_of_cublas"] >= OWN_FP32_PERCENT_OF_CUBLAS_MIN,
           f"{r['kernel']}: {r['tflops']:.1f} TFLOP/s = {r['percent_of_cublas']:.0f}%")


@check("best own bf16 tensor core >= 50% cuBLAS at 4096")
def check_best_own_bf16_tensor_core_gemm_near_cublas(inp):
    """Our fastest bf16 (tensor-core) GEMM at 4096 reaches >= 50% of cuBLAS bf16."""
    r = inp.own_best_at_ladder_size("bf16")
    yield (None, r["percent_of_cublas"] >= OWN_BF16_PERCENT_OF_CUBLAS_MIN,
           f"{r['kernel']}: {r['tflops']:.1f} TFLOP/s = {r['percent_of_cublas']:.0f}%")


@check("rung 9 >= 80% cuBLAS bf16, alternated")
def check_rung9_near_cublas(inp):
    """Rung 9 at 4096³ and 8192³: >= 80% of cuBLAS bf16, from >= 20 alternated pairs."""
    rows = inp.json("kernels.json")["rows"]
    for size in RUNG9_SIZES:
        found = [r for r in rows if r["size"] == size and r["kernel"] == RUNG9]
        if not found:
            raise MissingInput(f"no {RUNG9} row at size {size} in kernels.json")
        r = found[0]
        ok = (r["valid"] and r["percent_of_cublas"] >= RUNG9_PERCENT_OF_CUBLAS_MIN
              and r.get("alternated_pairs", 0) >= ALTERNATED_PAIRS_MIN)
        yield (f"({size})", ok, f"{r['tflops']:.1f} TFLOP/s = {r['percent_of_cublas']:.1f}%, "
               f"{r.get('alternated_pairs', 0)} pairs")


@check("graph steps: events - CUPTI <= 0.1 pp (50 ms), 0.5 pp (5 ms)")
def check_graph_steps_events_near_cupti(inp):
    """With gpu.graph, CUDA events' busy fraction exceeds CUPTI's by <= 0.1 pp at 50 ms
    steps and <= 0.5 pp at 5 ms steps (the launch gaps left inside a step)."""
    for step, bound in GRAPH_EVENTS_MINUS_CUPTI_PP.items():
        g = inp.json(f"graph-{step}-true.json")["variants"][0]["gpu"]
        d = g["event_busy_fraction"] - g["busy_fraction"]
        yield (f"({step})", d <= bound, f"{100 * d:.3f} pp (at most {100 * bound:.1f})")


@check("graph steps: compute-bound idle <= 0.3%")
def check_graph_steps_compute_bound_idle(inp):
    """With gpu.graph and 50 ms steps fed from RAM, the GPU idles <= 0.3% of the window."""
    v = inp.json("graph-50ms-true.json")["variants"][0]
    yield ("(50ms)", v["gpu_idle_fraction"] <= GRAPH_COMPUTE_BOUND_IDLE_MAX,
           f"idle {100 * v['gpu_idle_fraction']:.3f}%")


@check("GPU test suite")
def check_gpu_test_suite_passes(inp):
    """cuda_device_test exited 0."""
    if inp.tests_rc is None:
        raise MissingInput("--tests-rc not given")
    yield (None, inp.tests_rc == 0, f"cuda_device_test exit {inp.tests_rc}")


@check("compute-sanitizer memcheck + racecheck")
def check_compute_sanitizer_is_clean(inp):
    """compute-sanitizer memcheck and racecheck exited 0 (gpu_check.sh passes 0 when skipped)."""
    if inp.sanitizer_rc is None:
        raise MissingInput("--sanitizer-rc not given")
    yield (None, inp.sanitizer_rc == 0, f"exit {inp.sanitizer_rc}")


def run_checks(inp):
    """[(name, ok, value)] for every registered check; a check that cannot read its
    inputs gives one FAIL row saying why instead of a traceback."""
    table = []
    for fn in CHECKS:
        rows = []
        try:
            for suffix, ok, value in fn(inp):
                rows.append((f"{fn.title} {suffix}" if suffix else fn.title, ok, value))
        except MissingInput as e:
            rows.append((fn.title, False, f"missing input: {e}"))
        except Exception as e:  # a field absent or malformed, as the heredoc did: one FAIL row
            rows.append((fn.title, False, f"bad input: {e!r}"))
        if not rows:
            rows.append((fn.title, False, "no results (no variants in the input?)"))
        table.extend(rows)
    return table


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="gpu_check.sh's output directory (OUT)")
    p.add_argument("--tests-rc", type=int, help="cuda_device_test's exit status (step 2)")
    p.add_argument("--sanitizer-rc", type=int,
                   help="compute-sanitizer's exit status, 0 if clean or skipped (step 7)")
    args = p.parse_args(argv)

    table = run_checks(Inputs(args.out, args.tests_rc, args.sanitizer_rc))
    w = max(len(name) for name, _, _ in table)
    print("\n== summary")
    for name, ok, value in table:
        print(f"{name:<{w}}  {'PASS' if ok else 'FAIL'}  {value}")
    return 0 if all(ok for _, ok, _ in table) else 1


if __name__ == "__main__":
    sys.exit(main())
