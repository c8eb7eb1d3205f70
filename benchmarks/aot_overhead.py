"""Per-run overhead of the ahead-of-time executor vs the Python graph executor (issue 15).

    python benchmarks/aot_overhead.py [--model dqn] [--threads 1] [--steps 600] [--fifo]

One compile of the zoo model (`tensorforge_onnx.models`) for `llvm -num-threads=T`; the same
kernels run three ways in this process: `CompiledModel` as compiled (the AOT entry: one native
call per run, `run` through the native quick path), the same with `run`'s checks in Python
(TENSORFORGE_AOT_QUICK=python: what `run` did before the quick path) and
`CompiledModel(..., executor="graph")` over the same module (each kernel called from Python),
plus ONNX Runtime (intra_op_num_threads=T) on the same ONNX model. Outputs are checked first
(AOT vs graph bit-exact; vs ORT max relative error).

Interleaved call by call (`--steps` steps, each in a new random order, seeded), each step times
one call of: `run` (input checks, inputs, the kernels, outputs) on each executor, `execute`
on each (the kernels alone, what `CompiledModel.benchmark` times, over the arena that
executor's `run` works in: the workspace's place in memory moves kernel times by a few per
cent from one arena to another, more than the overhead measured here), ORT's
`run`, and, per executor, one execution of the kernels over that arena, each kernel timed
alone from Python (their sum is the step's "kernel time"). The figures are medians over steps;
overhead = median over
steps of (time - kernel time) / time. The kernel time includes each kernel's Python call and
clock reads (a microsecond or two each on a loaded machine), so it is an over-estimate and an
overhead near zero can come out negative; "`run` over `execute`" (median over steps of
(run - execute) / run, the same executor's kernels in one native call) has no such bias. The
load average (1 minute) before and after is printed: the machine may be shared; `--fifo` times
under SCHED_FIFO (root), as `families_vs_ort.py --fifo`, so its other jobs do not preempt the
timed calls."""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def arena_of_run(model: Any) -> Any:
    """The arena `model.run` works in when one thread calls it: the native quick path's, else
    the one the pool lends next (it lends the last returned)."""
    ex = model.executor
    if ex._aot is not None and ex._aot.native is not None:
        return ex._aot.fast
    arena = ex.pool.acquire()
    ex.pool.release(arena)
    return arena


def main(argv: list[str]) -> int:
    import onnxruntime as ort
    from _common import machine_info
    from families_vs_ort import _Fifo

    import tensorforge as tf
    from tensorforge.runtime.graph_executor import CompiledModel
    from tensorforge_onnx import models

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="dqn")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--fifo", action="store_true",
                    help="time under SCHED_FIFO (root): a loaded machine's figures")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    proto = models.build(args.model, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aot = tf.compile(proto, f"llvm -num-threads={args.threads}")
    graph = CompiledModel(aot.module, aot.desc, dict(aot.params), executor="graph")
    os.environ["TENSORFORGE_AOT_QUICK"] = "python"
    try:
        pychecks = CompiledModel(aot.module, aot.desc, dict(aot.params))
    finally:
        del os.environ["TENSORFORGE_AOT_QUICK"]
    if aot.executor._aot.native is None:
        print(f"note: no native quick path: {aot.executor._aot.native_reason}")
    if aot.executor_kind != "aot":
        print(f"the model runs on the graph executor: {aot.executor_reason}")
        return 1
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    sess = ort.InferenceSession(proto.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    x = {k: np.asarray(v) for k, v in models.example_inputs(args.model).items()}
    a, g, r = aot.run(x), graph.run(x), sess.run(None, x)
    exact = all(np.array_equal(p, q) for p, q in zip(a, g)) and all(
        np.array_equal(p, q) for p, q in zip(pychecks.run(x), g))
    err = max(float(np.max(np.abs(p - q)) / max(float(np.max(np.abs(q))), 1e-30))
              for p, q in zip(a, r))
    print(f"{args.model}: {len(aot.kernels)} kernels, threads={args.threads}; AOT == graph "
          f"bit-exact: {exact}; max rel err vs ORT {err:.1e}")
    if not exact:
        return 1
    held = {}
    for name, m in (("aot", aot), ("py", pychecks), ("graph", graph)):
        held[name] = (m, arena_of_run(m))
        m.executor.set_inputs(held[name][1], x)
    timed: dict[str, Callable[[], object]] = {
        "run aot": lambda: aot.run(x),
        "run py": lambda: pychecks.run(x),
        "run graph": lambda: graph.run(x),
        "exec aot": lambda: aot.executor.execute(held["aot"][1]),
        "exec py": lambda: pychecks.executor.execute(held["py"][1]),
        "exec graph": lambda: graph.executor.execute(held["graph"][1]),
        "ort": lambda: sess.run(None, x),
    }
    rows: dict[str, list[float]] = {k: [] for k in [*timed, *(f"kernels {c}" for c in held)]}
    pc = time.perf_counter

    def kernels(m: Any, arena: Any) -> float:  # one execution, each kernel timed alone
        total = 0.0
        for i in range(len(arena.calls)):
            t = pc()
            m.executor.execute_kernel(arena, i)
            total += pc() - t
        return total

    for f in timed.values():  # warm-up
        f()
    names = list(timed)
    rng = random.Random(0)
    with _Fifo(args.fifo):
        for _ in range(args.steps):
            # a new order every step: a rotation keeps each call's predecessor, and `run aot`
            # always came right after ORT (its own weights: ours evicted) while `exec aot`
            # came after the graph executor (the same weights, warm); on a Zen 4 with 1 MiB
            # L2 that put `run` 8-13% over `execute`, which back to back are the same
            order = rng.sample(names, len(names))
            for name in order:
                t = pc()
                timed[name]()
                rows[name].append(pc() - t)
            for c, (m, arena) in held.items():
                rows[f"kernels {c}"].append(kernels(m, arena))
    med = {k: statistics.median(v) for k, v in rows.items()}

    def over(key: str, base: str) -> float:
        return statistics.median([(t - k) / t for t, k in zip(rows[key], rows[base])])

    cols = ("graph", "py", "aot")

    def row(what: str, cell: Callable[[str], str]) -> None:
        print(f"| {what} | " + " | ".join(cell(c) for c in cols) + " |")

    print("| what | graph executor | AOT executor, checks in Python | AOT executor |")
    print("|---|---|---|---|")
    row("kernel time (ms)", lambda c: f"{med['kernels ' + c] * 1e3:.4f}")
    row("`run` (ms)", lambda c: f"{med['run ' + c] * 1e3:.4f}")
    row("`run` overhead", lambda c: f"{over('run ' + c, 'kernels ' + c):+.1%}")
    row("`run` over `execute`", lambda c: f"{over('run ' + c, 'exec ' + c):+.1%}")
    row("`execute` (ms)", lambda c: f"{med['exec ' + c] * 1e3:.4f}")
    row("`execute` overhead", lambda c: f"{over('exec ' + c, 'kernels ' + c):+.1%}")
    ratio = {k: statistics.median([t / o for t, o in zip(rows[f"run {k}"], rows["ort"])])
             for k in cols}
    row(f"`run` / ORT run ({med['ort'] * 1e3:.4f} ms)", lambda c: f"{ratio[c]:.2f}")
    info = machine_info()
    print(f"machine: {info['cpu_model']}, {info['usable_cpus']} usable CPUs, LLVM "
          f"{info['llvm_version']}")
    print(f"load average (1 min): {load0:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{args.steps} interleaved steps{' under SCHED_FIFO' if args.fifo else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
