"""Shared helpers of the benchmarks: machine description, interleaved timing, the report."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
SEED = 0


def host_options() -> Any:
    """The resolved options (mcpu, mattr, ...) our llvm target uses on this machine."""
    import types

    from tensorforge_llvm import jit

    return jit.resolve_options(types.SimpleNamespace(options={}))


def vector_lanes() -> int:
    """float32 lanes of the widest vector the host target uses (AVX-512: 16, AVX: 8, else 4)."""
    feats = set(host_options().mattr.split(","))
    if "+avx512f" in feats:
        return 16
    if "+avx" in feats or "+avx2" in feats:
        return 8
    return 4


def machine_info() -> dict[str, Any]:
    import llvmlite.binding as llvm
    import numpy as np

    import tensorforge

    model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.partition(":")[2].strip()
                    break
    except OSError:
        pass
    opts = host_options()
    vector = sorted(f[1:] for f in opts.mattr.split(",")
                    if f.startswith("+") and f[1:].startswith(("avx", "fma", "sse", "neon", "sve")))
    info: dict[str, Any] = {
        "cpu_model": model,
        "machine": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "llvm_mcpu": opts.mcpu,
        "llvm_vector_features": vector,
        "float32_lanes": vector_lanes(),
        "llvm_version": ".".join(map(str, llvm.llvm_version_info)),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tensorforge": getattr(tensorforge, "__version__", "?"),
        "loadavg_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    try:
        from threadpoolctl import threadpool_info

        info["numpy_threadpools"] = [
            {k: p.get(k) for k in ("internal_api", "version", "architecture", "threading_layer",
                                   "num_threads")} for p in threadpool_info()]
    except ImportError:
        info["numpy_threadpools"] = "threadpoolctl not installed"
    return info


def blas_threads(n: int) -> Any:
    """Context manager limiting numpy's BLAS to `n` threads (threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n, user_api="blas")


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def interleaved(benchmark: Any, ours: Callable[[], Any], baseline: Callable[[], Any],
                rounds: int, settle: float = 0.0) -> tuple[list[float], list[float]]:
    """Time `ours` with pytest-benchmark, running `baseline` (timed here) before every round,
    so that both see the same machine state; returns (ours seconds, baseline seconds) by
    round. Each is run once first (warm-up, JIT and page faults).

    `settle` seconds of sleep follow each baseline call: a multi-threaded baseline's pool
    (OpenBLAS's pthreads) keeps spinning after a call and would hold the cores our OpenMP
    region needs (measured: 2-thread matmul 100 GFLOP/s right after numpy, 217 after 0.2 s)."""
    ours()
    baseline()
    base: list[float] = []

    def setup() -> None:
        t = time.perf_counter()
        baseline()
        base.append(time.perf_counter() - t)
        if settle:
            time.sleep(settle)

    benchmark.pedantic(ours, setup=setup, rounds=rounds, iterations=1, warmup_rounds=0)
    stats = getattr(benchmark, "stats", None)
    if stats is not None and getattr(stats, "stats", None) is not None:
        mine = list(stats.stats.data)
    else:  # --benchmark-disable: pytest-benchmark ran it once without timing
        mine = []
        for _ in range(rounds):
            setup()
            t = time.perf_counter()
            ours()
            mine.append(time.perf_counter() - t)
    n = min(len(mine), len(base))
    return mine[-n:], base[-n:]


@dataclass
class Row:
    """One line of the summary: ours vs a baseline, as rates (higher is better)."""

    name: str
    threads: int
    unit: str
    ours: tuple[float, float, float]  # q1, median, q3
    baseline_name: str = ""
    baseline: tuple[float, float, float] | None = None
    ratio: tuple[float, float, float] | None = None  # of per-round ratios
    goal: str = ""
    met: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Report:
    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.info: dict[str, Any] = {}

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    def table(self) -> str:
        head = ("| benchmark | threads | ours (q1 / median / q3) | baseline | "
                "ratio (q1 / median / q3) | goal | met |")
        lines = [head, "|" + "---|" * 7]
        for r in self.rows:
            ours = f"{r.ours[0]:.3g} / **{r.ours[1]:.3g}** / {r.ours[2]:.3g} {r.unit}"
            base = (f"{r.baseline_name} {r.baseline[1]:.3g} {r.unit}"
                    if r.baseline else r.baseline_name)
            ratio = (f"{r.ratio[0]:.0%} / **{r.ratio[1]:.0%}** / {r.ratio[2]:.0%}"
                     if r.ratio else "")
            met = "" if r.met is None else ("yes" if r.met else "NO")
            lines.append(f"| {r.name} | {r.threads} | {ours} | {base} | {ratio} | {r.goal} "
                         f"| {met} |")
        return "\n".join(lines)

    def write(self) -> Path | None:
        if not self.rows:
            return None
        RESULTS.mkdir(exist_ok=True)
        self.info["loadavg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        data = {"machine": self.info, "rows": [asdict(r) for r in self.rows]}
        (RESULTS / f"results-{stamp}.json").write_text(json.dumps(data, indent=1) + "\n")
        info = "\n".join(f"- {k}: {v}" for k, v in self.info.items())
        md = (f"# tensorforge benchmarks, {time.strftime('%Y-%m-%d %H:%M')}\n\n{self.table()}\n\n"
              "Rates are GFLOP/s (higher is better) except where the unit says otherwise; "
              "ratios are medians of per-round ratios (ours and the baseline interleaved).\n\n"
              f"## Machine\n\n{info}\n")
        path = RESULTS / f"results-{stamp}.md"
        path.write_text(md)
        (RESULTS / "latest.md").write_text(md)
        return path
