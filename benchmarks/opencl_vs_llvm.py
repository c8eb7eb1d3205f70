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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--tuner", default="xgb")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    opts = ap.parse_args()

    import tensorforge
    from tensorforge.autotune import Builder, Measurer, Runner, Task, tune_task
    from tensorforge.target import Target

    RESULTS.mkdir(exist_ok=True)
    ocl = Target.parse("opencl")
    cpu = Target.parse(f"llvm -num-threads={opts.threads}")
    db_path = RESULTS / "opencl_tuning.db"
    lines = ["| workload | OpenCL on pocl, tuned (GFLOP/s) | trials | llvm template, default "
             "config (GFLOP/s) | OpenCL / llvm |", "|---|---|---|---|---|"]
    for name, (gt, gargs, lt, largs, flop) in WORKLOADS.items():
        task = Task(gt, gargs, ocl)
        measurer = Measurer(Builder(), Runner(repeat=3, timeout=120.0))
        with measurer:
            res = tune_task(task, opts.trials, opts.tuner, db=str(db_path), measurer=measurer)
        best = res.best
        s, args = task.instantiate(best.config_index if best is not None
                                   else task.config_space.default_index)
        gmod = tensorforge.build(s, args, target=ocl)
        ltask = Task(lt, largs, cpu)
        ls, largs_te = ltask.instantiate(ltask.config_space.default_index)
        lmod = tensorforge.build(ls, largs_te, target=cpu)
        garr, larr = _arrays(args), _arrays(largs_te)
        gfn = gmod.get_function(gmod.entry_name)
        dargs = [gmod.to_device(a) for a in garr]
        lfn = lmod.get_function(lmod.entry_name)
        g_t, l_t = [], []
        gfn.time(dargs, 1, 1)  # warm-up (pocl compiles at first launch)
        lfn(*larr)
        for _ in range(opts.rounds):
            g_t.append(gfn.time(dargs, 3, 1).median)
            t0 = time.perf_counter()
            for _ in range(3):
                lfn(*larr)
            l_t.append((time.perf_counter() - t0) / 3)
        g = _quartiles([flop / t / 1e9 for t in g_t])
        c = _quartiles([flop / t / 1e9 for t in l_t])
        ratio = _quartiles([lt_ / gt_ for gt_, lt_ in zip(g_t, l_t)])
        trials = res.n_measured
        lines.append(f"| {name} | {g[1]:.2f} [{g[0]:.2f}, {g[2]:.2f}] | {trials} | "
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
