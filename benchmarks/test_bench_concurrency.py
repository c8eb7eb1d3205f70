"""Throughput of concurrent `CompiledModel.run` (issue 12): two Python threads calling one
model compiled for one OpenMP thread, against one thread making the same calls in sequence.

Each call takes its own arena and the kernels run outside the GIL, so on two free cores the
ratio should approach 2x; Python work between kernels (one ctypes call per kernel) holds the
GIL and bounds it for models of many small kernels. Both sides make `2 * CALLS[model]` calls
per round, the one-thread baseline right before each two-thread round (interleaved);
throughput is calls per second, the ratio the median of the per-round ratios."""

from __future__ import annotations

import threading
import time

import pytest
from _common import Row, interleaved, quartiles

import tensorforge

models = pytest.importorskip("tensorforge_onnx.models")

#: calls per thread and round: a round takes ~0.2-0.5 s at batch 1 on one core
CALLS = {"dqn": 200, "lstm_lm": 60, "squeezenet1_1": 30, "mobilenet_v2": 20, "resnet18": 4}


def _two_threads(model, x, n: int) -> None:
    barrier = threading.Barrier(2)

    def work() -> None:
        barrier.wait()
        for _ in range(n):
            model.run(x)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("name", list(CALLS))
def test_two_threads_vs_one(name, benchmark, llvm_target, plugins, report, rounds, tmp_path):
    plugins.register("tensorforge_onnx.plugin")
    path = models.save(name, tmp_path / f"{name}.onnx")
    model = tensorforge.compile(str(path), target="llvm -num-threads=1")
    x = models.example_inputs(name)
    n = CALLS[name]

    def one_thread() -> None:
        for _ in range(2 * n):
            model.run(x)

    time.sleep(0.3)  # let other thread pools park
    mine, base = interleaved(benchmark, lambda: _two_threads(model, x, n), one_thread, rounds)
    if not mine:
        return
    calls = 2 * n
    ours = quartiles([calls / t for t in mine])
    one = quartiles([calls / t for t in base])
    ratio = quartiles([b / m for m, b in zip(mine, base)])
    report.add(Row(f"concurrent run: {name}, 2 threads x 1-thread model", 2, "calls/s", ours,
                   "1 thread", one, ratio, "-> 2x on 2 free cores", ratio[1] >= 1.6))
    benchmark.extra_info.update(calls_per_round=calls, ratio_median=ratio[1])


def test_control_numpy_two_threads_vs_one(benchmark, report, rounds):
    """What this machine allows right now: numpy matmuls (one BLAS thread each, GIL
    released) from 2 threads vs 1. On a busy machine both ratios fall together."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((384, 384)).astype("float32")
    n = 100

    def one_thread() -> None:
        for _ in range(2 * n):
            a @ a

    class _Model:
        @staticmethod
        def run(x):
            return x @ x

    with threadpool_limits(1):
        mine, base = interleaved(benchmark, lambda: _two_threads(_Model, a, n), one_thread,
                                 rounds)
    if not mine:
        return
    ours = quartiles([2 * n / t for t in mine])
    one = quartiles([2 * n / t for t in base])
    ratio = quartiles([b / m for m, b in zip(mine, base)])
    report.add(Row("control: numpy matmul 384^3, 2 threads vs 1 (1 BLAS thread)", 2,
                   "calls/s", ours, "1 thread", one, ratio, "machine capacity", None))
