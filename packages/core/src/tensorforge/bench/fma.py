"""The FMA peak calibration kernel: a PrimFunc built by hand and compiled by our own compiler.

(Moved here from `benchmarks/_fma.py`, which re-exports it, so `tforge bench` works from an
installed package.)

`fma_peak_func(chains, lanes, iters, threads)`: `threads` parallel iterations (an OpenMP
loop), each running `chains` independent vector chains `acc = acc * a + b` of `lanes` float32
lanes for `iters` iterations (2 flops per lane per step), kept in registers (a local buffer
indexed by constants, which LLVM promotes). It writes each chain to `Y` so nothing is dead.
"""

from __future__ import annotations

from typing import Any

from tensorforge.expr import Broadcast, Buffer, BufferLoad, IntImm, Ramp, Var
from tensorforge.tir import Allocate, BufferStore, For, PrimFunc, seq


def _ramp(base: Any, lanes: int) -> Ramp:
    return Ramp(base, IntImm(1), lanes)


def _for(var: Var, extent: int, body: Any, kind: str = "serial") -> For:
    return For(var, IntImm(0, var.dtype), IntImm(extent, var.dtype), kind, body)


def fma_peak_func(chains: int, lanes: int, iters: int, threads: int,
                  name: str = "fma_peak") -> PrimFunc:
    """Y[threads * chains * lanes] <- chains of `iters` FMAs on `lanes`-wide vectors."""
    width = chains * lanes
    X = Buffer("X", (2,), "float32")  # X[0] = multiplier, X[1] = addend
    Y = Buffer("Y", (threads * width,), "float32")
    acc = Buffer("acc", (width,), "float32", "local")
    t, i = Var("t"), Var("i")
    a = Broadcast(BufferLoad(X, (IntImm(0),)), lanes)
    b = Broadcast(BufferLoad(X, (IntImm(1),)), lanes)

    def chain(c: int) -> Ramp:
        return _ramp(IntImm(c * lanes), lanes)

    init = seq(*[BufferStore(acc, b, (chain(c),)) for c in range(chains)])
    step = seq(*[BufferStore(acc, BufferLoad(acc, (chain(c),)) * a + b, (chain(c),))
                 for c in range(chains)])
    out = seq(*[BufferStore(Y, BufferLoad(acc, (chain(c),)),
                            (_ramp(t * width + c * lanes, lanes),)) for c in range(chains)])
    body = Allocate(acc, seq(init, _for(i, iters, step), out))
    return PrimFunc(name, (X, Y), _for(t, threads, body, "parallel"))


def fma_flops(chains: int, lanes: int, iters: int, threads: int) -> float:
    """Floating-point operations of one call (an FMA counts 2)."""
    return 2.0 * chains * lanes * iters * threads


def peak_kernel(threads: int, lanes: int, flops_per_thread: float = 1e9,
                target: str | None = None) -> tuple[Any, float]:
    """(callable, flops of one call): the calibration kernel built for `threads` threads.

    Chains: 16 with 32 vector registers (AVX-512, NEON), 12 with 16 (AVX2, SSE); FMA latency
    4-5 cycles x 2 pipes needs 8-10 in flight."""
    import numpy as np

    import tensorforge

    chains = 16 if lanes >= 16 else 12
    iters = max(1, int(flops_per_thread / (2 * chains * lanes)))
    func = fma_peak_func(chains, lanes, iters, threads, name=f"fma_peak_{threads}")
    mod = tensorforge.build(func, target=target or f"llvm -num-threads={threads}")
    x = np.array([0.999, 0.001], "float32")
    y = np.zeros(threads * chains * lanes, "float32")

    def run() -> None:
        mod(x, y)

    run()
    # acc -> b / (1 - a) = 1: the chains really ran (and stayed finite)
    if not np.allclose(y, 1.0, rtol=1e-3):
        raise AssertionError(f"FMA peak kernel computed {y[:4]}..., expected 1.0")
    return run, fma_flops(chains, lanes, iters, threads)
