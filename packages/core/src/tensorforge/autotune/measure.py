"""Measurement: build candidates in parallel workers, time them in an isolated runner.

* :class:`Builder` instantiates the template with the config, lowers and compiles it and
  exports a shared library (bytes travel to the runner, so a Ray cluster works too); jobs run
  in parallel on an executor with a build time-out.
* :class:`Runner` loads a library in a worker, fills the inputs from a fixed seed, runs it
  once and compares the outputs with the reference (the default config's), then times it:
  ``repeat`` measurements of ``number`` runs each, ``number`` raised until one measurement
  takes ``min_repeat_ms``; with ``flush_cache`` a buffer larger than the last-level cache is
  rewritten before each measurement. Runs are one at a time (timings do not share the CPU).
  A device library (OpenCL ...) is timed by its module's ``time_evaluator``: device events
  around the kernels, inputs copied to the device once.

A candidate that fails is recorded with its error class and the search goes on:
``COMPILE_ERROR`` (the template refused the config, lowering or code generation failed),
``RUNTIME_ERROR`` (the kernel crashed its worker, e.g. SIGSEGV, or raised), ``WRONG_RESULT``
(outputs differ from the reference), ``TIMEOUT`` (building or running took too long: the
worker was killed and replaced).
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .executor import Executor, JobResult, LocalExecutor
from .task import Task

__all__ = [
    "COMPILE_ERROR",
    "RUNTIME_ERROR",
    "TIMEOUT",
    "WRONG_RESULT",
    "BuildResult",
    "Builder",
    "MeasureResult",
    "Measurer",
    "Runner",
]

COMPILE_ERROR = "COMPILE_ERROR"
RUNTIME_ERROR = "RUNTIME_ERROR"
WRONG_RESULT = "WRONG_RESULT"
TIMEOUT = "TIMEOUT"


@dataclass
class BuildResult:
    artifact: dict[str, Any] | None  # lib bytes, sidecar, arg specs, number of outputs
    error_class: str | None = None
    error_msg: str = ""
    time: float = 0.0


@dataclass
class MeasureResult:
    costs: list[float] = field(default_factory=list)
    error_class: str | None = None
    error_msg: str = ""
    all_cost: float = 0.0  # seconds spent building and running
    timestamp: float = field(default_factory=time.time)
    outputs: list[np.ndarray] | None = None

    @property
    def ok(self) -> bool:
        return self.error_class is None


# ---- the jobs (run in workers) ---------------------------------------------------------------
def build_job(payload: dict[str, Any]) -> dict[str, Any]:
    """Instantiate, lower, compile and export one config; returns the library as bytes."""
    from ..driver import build
    from ..tir.stmt import PrimFunc

    task = Task.from_json(payload["task"])
    sch, args = task.instantiate(payload["index"])
    mod = build(sch, args if not isinstance(sch, PrimFunc) else (), target=task.target_str)
    specs, n_out = [], 0
    for a in args:
        shape = tuple(int(getattr(x, "value", x)) for x in a.shape)
        specs.append((shape, str(a.dtype)))
        op = getattr(a, "op", None)
        n_out += op is not None and type(op).__name__ != "PlaceholderOp"
    with tempfile.TemporaryDirectory(prefix="tensorforge-build-") as tmp:
        path = os.path.join(tmp, "kernel.so")
        mod.export_library(path)
        with open(path, "rb") as f:
            lib = f.read()
        with open(path + ".json", encoding="utf-8") as f:
            meta = f.read()
    return {"lib": lib, "meta": meta, "specs": specs, "n_out": max(1, n_out)}


def make_arrays(specs: Sequence[tuple[tuple[int, ...], str]], n_out: int,
                seed: int) -> list[np.ndarray]:
    """Inputs from a fixed seed; outputs filled with NaN (so unwritten elements show)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i, (shape, dtype) in enumerate(specs):
        if i >= len(specs) - n_out:
            fill = np.nan if np.dtype(dtype).kind == "f" else 0
            arrays.append(np.full(shape, fill, dtype=dtype))
        elif np.dtype(dtype).kind == "f":
            arrays.append(rng.uniform(-1, 1, size=shape).astype(dtype))
        else:
            arrays.append(rng.integers(-8, 8, size=shape).astype(dtype))
    return arrays


_FLUSH: np.ndarray | None = None
#: with ``flush_cache``, at most this many single calls are timed per ``repeat``
FLUSH_MAX_CALLS = 10


def _flush_cache() -> None:
    """Sweep a buffer larger than the last-level cache, so the next call finds its weights
    and outputs in memory, as a kernel does inside a model (its weights were last read a
    whole inference ago); `run_job` then reads the first argument back in (`_warm`: a
    model's previous kernel has just written it). Timed back to back, a kernel finds its
    weights in L2/L3 instead, and a config that prefetches weights (which pays only when
    they are far) looks slower than one that does not: tuned that way, ResNet-18's
    512-channel 3x3 convs ran 25% slower in the model. With the input swept out too,
    MobileNetV2's early layers (large inputs, small weights) looked memory-bound: configs
    estimated 20% faster ran no faster in the model (docs/tuning.md). TVM's
    ``enable_cpu_cache_flush`` flushes every argument but the first for the same reasons."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = np.zeros(64 << 20 >> 3)  # 64 MiB, larger than the last-level cache
    _FLUSH += 1.0


def _warm(a: np.ndarray) -> None:
    """Read one element of every cache line of `a` (the kernel's data input, which the
    previous kernel of a model has just written: it is in the cache, unlike the weights)."""
    flat = a.reshape(-1)
    np.add.reduce(flat[::max(1, 64 // flat.itemsize)], dtype=np.float64)


def run_job(payload: dict[str, Any]) -> dict[str, Any]:
    """Load a built library, check it against the reference, then time it."""
    from ..runtime.module import load_module

    art = payload["artifact"]
    with tempfile.TemporaryDirectory(prefix="tensorforge-run-") as tmp:
        path = os.path.join(tmp, f"k{uuid.uuid4().hex}.so")
        with open(path, "wb") as f:
            f.write(art["lib"])
        with open(path + ".json", "w", encoding="utf-8") as f:
            f.write(art["meta"])
        mod = load_module(path)  # the mapping outlives the file
    arrays = make_arrays(art["specs"], art["n_out"], payload["seed"])
    mod(*arrays)
    outs = arrays[len(arrays) - art["n_out"]:]
    ref = payload.get("ref")
    if ref is not None:
        for got, want in zip(outs, ref):
            scale = float(np.nanmax(np.abs(want))) if want.size else 1.0
            if got.shape != want.shape or not np.allclose(got, want, rtol=payload["rtol"],
                                                          atol=payload["rtol"] * scale):
                bad = np.abs(got - want) if got.shape == want.shape else np.array([np.inf])
                return {"wrong": f"max abs difference {np.nanmax(bad):.3g} (or NaN) vs the "
                                 f"reference (scale {scale:.3g})"}
    number, repeat = payload["number"], payload["repeat"]
    timing = getattr(mod, "timing", "wall")
    if timing != "wall":  # device events (OpenCL ...) or simulated cycles (VDLA)
        extra = {"min_repeat_ms": payload["min_repeat_ms"]} if timing == "device" else {}
        t = mod.time_evaluator(mod.entry_name, number, repeat, **extra)(*arrays)
        return {"costs": list(t.results), "outputs": outs if payload.get("return_outputs")
                else None}
    min_s = payload["min_repeat_ms"] / 1000.0
    if min_s > 0 or payload["flush_cache"]:
        t0 = time.perf_counter()
        mod(*arrays)
        one = max(time.perf_counter() - t0, 1e-7)
        if payload["flush_cache"]:  # one call per timing, each after a sweep (see _flush_cache)
            repeat = int(min(FLUSH_MAX_CALLS * repeat, max(repeat, np.ceil(repeat * min_s / one))))
            number = 1
        else:
            number = max(number, int(np.ceil(min_s / one)))
    costs = []
    for _ in range(repeat):
        if payload["flush_cache"]:
            _flush_cache()
            _warm(arrays[0])
        t0 = time.perf_counter()
        for _ in range(number):
            mod(*arrays)
        costs.append((time.perf_counter() - t0) / number)
    return {"costs": costs, "outputs": outs if payload.get("return_outputs") else None}


# ---- the parent side -------------------------------------------------------------------------
def _error_of(res: JobResult, stage: str) -> tuple[str, str]:
    if res.status == "timeout":
        return TIMEOUT, f"{stage}: {res.error}"
    if stage == "build":
        return COMPILE_ERROR, res.error
    return RUNTIME_ERROR, f"{stage}: {res.error}"


class Builder:
    """Compiles candidates on an executor (default: a local pool of ``n_parallel``).

    The last ``KEEP`` successful builds are kept: a config timed again (the default after
    ``Measurer.reference``, the best and the default in ``confirm.confirm_best``, which
    times each pair twice) is not compiled again; its ``time`` stays the first build's."""

    KEEP = 16

    def __init__(self, timeout: float = 30.0, n_parallel: int | None = None,
                 executor: Executor | None = None):
        self.timeout = timeout
        self.executor = executor or LocalExecutor(n_parallel)
        self._own = executor is None
        self._kept: OrderedDict[tuple[str, int], BuildResult] = OrderedDict()

    def build(self, task: Task, indices: Sequence[int]) -> list[BuildResult]:
        keys = [(task.key, int(i)) for i in indices]  # a task's key covers its target
        todo = [i for i, k in zip(indices, keys) if k not in self._kept]
        payloads = [{"task": task.to_json(), "index": i} for i in dict.fromkeys(todo)]
        fresh = {}
        for p, res in zip(payloads, self.executor.map(f"{__name__}:build_job", payloads,
                                                      self.timeout)):
            if res.ok:
                fresh[p["index"]] = BuildResult(res.value, None, "", res.duration)
            else:
                cls, msg = _error_of(res, "build")
                fresh[p["index"]] = BuildResult(None, cls, msg, res.duration)
        out = []
        for i, k in zip(indices, keys):
            b = fresh[i] if i in fresh else self._kept[k]
            if b.artifact is not None:
                self._kept[k] = b
                self._kept.move_to_end(k)
            out.append(b)
        while len(self._kept) > self.KEEP:
            self._kept.popitem(last=False)
        return out

    def close(self) -> None:
        if self._own:
            self.executor.close()


class Runner:
    """Times built candidates one at a time on an executor (default: one local worker)."""

    def __init__(self, number: int = 1, repeat: int = 3, min_repeat_ms: float = 0.0,
                 timeout: float = 10.0, flush_cache: bool = False, rtol: float = 1e-3,
                 executor: Executor | None = None, resource: str | None = None):
        self.number, self.repeat, self.min_repeat_ms = number, repeat, min_repeat_ms
        self.timeout, self.flush_cache, self.rtol = timeout, flush_cache, rtol
        self.resource = resource
        self.executor = executor or LocalExecutor(1)
        self._own = executor is None

    def run(self, task: Task, builds: Sequence[BuildResult], ref: list[np.ndarray] | None,
            return_outputs: bool = False,
            on_result: Callable[[int, MeasureResult], None] | None = None,
            ) -> list[MeasureResult]:
        """Results in the order of ``builds``; ``on_result(i, result)`` as each completes."""
        out: list[MeasureResult | None] = [None] * len(builds)
        todo = []
        for i, b in enumerate(builds):
            if b.artifact is None:
                out[i] = MeasureResult([], b.error_class, b.error_msg, b.time)
                if on_result is not None:
                    on_result(i, out[i])
            else:
                todo.append(i)
        seed = int(task.key[:8], 16)
        for i in todo:  # one job at a time: a crash or time-out hits only its own candidate
            payload = {"artifact": builds[i].artifact, "seed": seed, "ref": ref,
                       "rtol": self.rtol, "number": self.number, "repeat": self.repeat,
                       "min_repeat_ms": self.min_repeat_ms, "flush_cache": self.flush_cache,
                       "return_outputs": return_outputs}
            (res,) = self.executor.map(f"{__name__}:run_job", [payload], self.timeout,
                                       self.resource)
            spent = builds[i].time + res.duration
            if not res.ok:
                cls, msg = _error_of(res, "run")
                out[i] = MeasureResult([], cls, msg, spent)
            elif "wrong" in res.value:
                out[i] = MeasureResult([], WRONG_RESULT, res.value["wrong"], spent)
            else:
                out[i] = MeasureResult(res.value["costs"], None, "", spent,
                                       outputs=res.value["outputs"])
            if on_result is not None:
                on_result(i, out[i])
        return [r for r in out if r is not None]

    def close(self) -> None:
        if self._own:
            self.executor.close()


class Measurer:
    """Builder + runner + the reference outputs of each task's default config."""

    def __init__(self, builder: Builder | None = None, runner: Runner | None = None):
        self.builder = builder or Builder()
        self.runner = runner or Runner()
        self._refs: dict[str, MeasureResult] = {}

    def reference(self, task: Task) -> list[np.ndarray]:
        """The default config's outputs (built and run once per task)."""
        if task.key not in self._refs:
            idx = task.config_space.default_index
            (b,) = self.builder.build(task, [idx])
            (r,) = self.runner.run(task, [b], None, return_outputs=True)
            if not r.ok or r.outputs is None:
                raise RuntimeError(f"the default config of {task} does not run, so candidates "
                                   f"cannot be checked: {r.error_class}: {r.error_msg}")
            self._refs[task.key] = r
        outputs = self._refs[task.key].outputs
        assert outputs is not None
        return outputs

    def reference_result(self, task: Task) -> MeasureResult | None:
        """The default config's measurement made by ``reference`` (None before it)."""
        r = self._refs.get(task.key)
        return None if r is None else MeasureResult(r.costs, None, "", r.all_cost, r.timestamp)

    def measure(self, task: Task, indices: Sequence[int], check: bool = True,
                on_result: Callable[[int, MeasureResult], None] | None = None,
                ) -> list[MeasureResult]:
        """Build and run configs ``indices``; ``on_result(k, result)`` as each completes."""
        ref = self.reference(task) if check else None
        return self.runner.run(task, self.builder.build(task, indices), ref,
                               on_result=on_result)

    def close(self) -> None:
        self.builder.close()
        self.runner.close()

    def __enter__(self) -> Measurer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
