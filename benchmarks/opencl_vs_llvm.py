"""OpenCL on pocl's CPU device next to the llvm target on the same CPU: GFLOP/s of the tuned
GPU matmul (dense 512^3) and conv2d (ResNet-18's 3x3, 64->64, 56x56) templates, and of the
llvm target's own templates at their default (hand-chosen) configs.

pocl is not a speed target: the figure shows the GPU schedules (shared tiles, register tiles,
barriers) are not pathological when a CPU runs them as work-groups.

    python benchmarks/opencl_vs_llvm.py [--trials 32] [--rounds 11] [--tuner xgb]

Tuning records go to `benchmarks/results/opencl_tuning.db` (resumed when present); the table
is printed and written to `benchmarks/results/opencl_vs_llvm.md`. OpenCL times are device
events (`time_evaluator`), llvm times wall clock around the call; each round times both,
interleaved, and the medians with quartiles are reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"

WORKLOADS = {
    "dense 512x512x512": ("dense.gpu", (512, 512, 512), "matmul_packed.llvm", (512, 512, 512),
                          2.0 * 512**3),
    "conv2d 3x3 64->64 56x56": ("conv2d.gpu", (1, 64, 56, 56, 64), "conv2d_nchwc.llvm",
                                (1, 64, 56, 56, 64), 2.0 * 64 * 64 * 9 * 56 * 56),
}


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def _arrays(args: list) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(tuple(int(d.value) for d in a.shape)).astype(str(a.dtype))
            for a in args]


def prepare(name: str, trials: int, threads: int, tuner: str = "xgb") -> dict:
    """Tune the OpenCL template of workload `name` (resuming the records), build its best
    config and the llvm template's default; returns callables and their arguments."""
    import tensorforge
    from tensorforge.autotune import Builder, Measurer, Runner, Task, tune_task
    from tensorforge.target import Target

    gt, gargs, lt, largs, flop = WORKLOADS[name]
    RESULTS.mkdir(exist_ok=True)
    ocl = Target.parse("opencl")
    cpu = Target.parse(f"llvm -num-threads={threads}")
    task = Task(gt, gargs, ocl)
    with Measurer(Builder(), Runner(repeat=3, timeout=120.0)) as measurer:
        res = tune_task(task, trials, tuner, db=str(RESULTS / "opencl_tuning.db"),
                        measurer=measurer)
    s, args = task.instantiate(res.best.config_index if res.best is not None
                               else task.config_space.default_index)
    gmod = tensorforge.build(s, args, target=ocl)
    ltask = Task(lt, largs, cpu)
    ls, largs_te = ltask.instantiate(ltask.config_space.default_index)
    lmod = tensorforge.build(ls, largs_te, target=cpu)
    gfn = gmod.get_function(gmod.entry_name)
    dargs = [gmod.to_device(a) for a in _arrays(args)]
    lfn, larr = lmod.get_function(lmod.entry_name), _arrays(largs_te)
    gfn.time(dargs, 1, 1)  # warm-up (pocl compiles at the first launch)
    lfn(*larr)
    return {"flop": flop, "trials": res.n_measured,
            "opencl": lambda: gfn.time(dargs, 3, 1).median,
            "llvm": lambda: _wall(lambda: lfn(*larr), 3)}


def _wall(fn: Any, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--tuner", default="xgb")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    opts = ap.parse_args()
    lines = ["| workload | OpenCL on pocl, tuned (GFLOP/s) | trials | llvm template, default "
             "config (GFLOP/s) | OpenCL / llvm |", "|---|---|---|---|---|"]
    for name in WORKLOADS:
        w = prepare(name, opts.trials, opts.threads, opts.tuner)
        g_t, l_t = [], []
        for _ in range(opts.rounds):  # interleaved: both see the same machine state
            g_t.append(w["opencl"]())
            l_t.append(w["llvm"]())
        g = _quartiles([w["flop"] / t / 1e9 for t in g_t])
        c = _quartiles([w["flop"] / t / 1e9 for t in l_t])
        ratio = _quartiles([lt_ / gt_ for gt_, lt_ in zip(g_t, l_t)])
        lines.append(f"| {name} | {g[1]:.2f} [{g[0]:.2f}, {g[2]:.2f}] | {w['trials']} | "
                     f"{c[1]:.2f} [{c[0]:.2f}, {c[2]:.2f}] | {ratio[1]:.2f} |")
    load = os.getloadavg()
    lines += ["", f"{opts.threads} thread(s) for llvm; pocl uses every core of the machine. "
              f"Medians [quartiles] of {opts.rounds} interleaved rounds; load average at the "
              f"end {load[0]:.1f}."]
    text = "\n".join(lines)
    print(text)
    (RESULTS / "opencl_vs_llvm.md").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
