"""Glue between pytest-benchmark and `tensorforge.bench` (issue 5): the rows of this session,
the pytest-benchmark round runner, and the report at the end of the session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ROWS: list[dict[str, Any]] = []
MACHINE: dict[str, Any] = {}  # filled by the first test (it needs the plugin registry)


def pedantic_runner(benchmark: Any) -> Callable[..., list[float]]:
    """A `tensorforge.bench.stats.RoundRunner` timing ours with pytest-benchmark (the
    baselines run in its `setup`, before every round)."""
    from tensorforge.bench.stats import _plain_rounds

    def run(ours: Callable[[], Any], setup: Callable[[], None], rounds: int) -> list[float]:
        benchmark.pedantic(ours, setup=setup, rounds=rounds, iterations=1, warmup_rounds=0)
        stats = getattr(benchmark, "stats", None)
        if stats is not None and getattr(stats, "stats", None) is not None:
            return list(stats.stats.data)
        return _plain_rounds(ours, setup, rounds)  # --benchmark-disable

    return run


def record(benchmark: Any, row: dict[str, Any]) -> None:
    if not MACHINE:
        from tensorforge.bench.machine import machine_info

        MACHINE.update(machine_info())
    ROWS.append(row)
    keep = ("ratio_ort", "ratio_torch", "pct_peak", "gflops", "correct", "threads")
    benchmark.extra_info.update({k: row[k] for k in keep if k in row})
