"""Per-run overhead of the ahead-of-time executor vs the Python graph executor (issue 15).

    python benchmarks/aot_overhead.py [--model dqn] [--threads 1] [--steps 600]

One compile of the zoo model (`tensorforge_onnx.models`) for `llvm -num-threads=T`; the same
kernels run two ways in this process: `CompiledModel` as compiled (the AOT entry: one native
call per run) and `CompiledModel(..., executor="graph")` over the same module (each kernel
called from Python), plus ONNX Runtime (intra_op_num_threads=T) on the same ONNX model.
Outputs are checked first (AOT vs graph bit-exact; vs ORT max relative error).

Interleaved call by call (`--steps` steps, the order rotating each step), each step times
one call of: `run` (input checks, inputs, the kernels, outputs) on each executor, `execute`
on each (the kernels alone over a held arena, what `CompiledModel.benchmark` times), ORT's
`run`, and one execution of the graph executor's kernels each timed alone from Python (their
sum is the step's "kernel time"). The figures are medians over steps; overhead = median over
steps of (time - kernel time) / time. The kernel time includes each kernel's Python call and
clock reads (a microsecond or two each on a loaded machine), so it is an over-estimate and an
overhead near zero can come out negative. The load average (1 minute) before and after is
printed: the machine may be shared."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np


def main(argv: list[str]) -> int:
    import onnxruntime as ort
    from _common import machine_info

    import tensorforge as tf
    from tensorforge.runtime.graph_executor import CompiledModel
    from tensorforge_onnx import models

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="dqn")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=600)
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    proto = models.build(args.model, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aot = tf.compile(proto, f"llvm -num-threads={args.threads}")
    graph = CompiledModel(aot.module, aot.desc, dict(aot.params), executor="graph")
    if aot.executor_kind != "aot":
        print(f"the model runs on the graph executor: {aot.executor_reason}")
        return 1
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    sess = ort.InferenceSession(proto.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    x = {k: np.asarray(v) for k, v in models.example_inputs(args.model).items()}
    a, g, r = aot.run(x), graph.run(x), sess.run(None, x)
    exact = all(np.array_equal(p, q) for p, q in zip(a, g))
    err = max(float(np.max(np.abs(p - q)) / max(float(np.max(np.abs(q))), 1e-30))
              for p, q in zip(a, r))
    print(f"{args.model}: {len(aot.kernels)} kernels, threads={args.threads}; AOT == graph "
          f"bit-exact: {exact}; max rel err vs ORT {err:.1e}")
    if not exact:
        return 1
    held = {}
    for name, m in (("aot", aot), ("graph", graph)):
        arena = m.executor.pool.acquire()
        m.executor.set_inputs(arena, x)
        held[name] = (m, arena)
    timed: dict[str, Callable[[], object]] = {
        "run aot": lambda: aot.run(x),
        "run graph": lambda: graph.run(x),
        "exec aot": lambda: aot.executor.execute(held["aot"][1]),
        "exec graph": lambda: graph.executor.execute(held["graph"][1]),
        "ort": lambda: sess.run(None, x),
    }
    rows: dict[str, list[float]] = {k: [] for k in [*timed, "kernels"]}
    pc = time.perf_counter
    gex, garena = graph.executor, held["graph"][1]

    def kernels() -> float:  # one execution, each kernel timed alone from Python
        total = 0.0
        for i in range(len(garena.calls)):
            t = pc()
            gex.execute_kernel(garena, i)
            total += pc() - t
        return total

    for f in timed.values():  # warm-up
        f()
    names = list(timed)
    for rnd in range(args.steps):
        order = names[rnd % len(names):] + names[:rnd % len(names)]  # rotate the order
        for name in order:
            t = pc()
            timed[name]()
            rows[name].append(pc() - t)
        rows["kernels"].append(kernels())
    for m, arena in held.values():
        m.executor.pool.release(arena)
    med = {k: statistics.median(v) for k, v in rows.items()}
    kern = med["kernels"]

    def over(key: str) -> str:
        per_round = [(t - k) / t for t, k in zip(rows[key], rows["kernels"])]
        return f"{statistics.median(per_round):+.1%}"

    print(f"kernel time (median over steps of the kernels' summed times): {kern * 1e3:.4f} ms")
    print("| what | graph executor | AOT executor |")
    print("|---|---|---|")
    print(f"| `run` (ms) | {med['run graph'] * 1e3:.4f} | {med['run aot'] * 1e3:.4f} |")
    print(f"| `run` overhead | {over('run graph')} | {over('run aot')} |")
    print(f"| `execute` (ms) | {med['exec graph'] * 1e3:.4f} | {med['exec aot'] * 1e3:.4f} |")
    print(f"| `execute` overhead | {over('exec graph')} | {over('exec aot')} |")
    ratio = {k: statistics.median([t / o for t, o in zip(rows[f"run {k}"], rows["ort"])])
             for k in ("graph", "aot")}
    print(f"| `run` / ORT run ({med['ort'] * 1e3:.4f} ms) | {ratio['graph']:.2f} | "
          f"{ratio['aot']:.2f} |")
    info = machine_info()
    print(f"machine: {info['cpu_model']}, {info['usable_cpus']} usable CPUs, LLVM "
          f"{info['llvm_version']}")
    print(f"load average (1 min): {load0:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{args.steps} interleaved steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
