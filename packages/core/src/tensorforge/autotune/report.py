"""Showing a tuning run: a live progress display (rich when installed and on a terminal, else a
plain line per round) and the tuning curves of a database as a PNG (matplotlib)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..text import plural
from .database import Database
from .scheduler import SchedulerProgress
from .task import Task

__all__ = ["PlainDisplay", "RichDisplay", "make_display", "plot_curves", "summary_lines"]


def _clock(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "--:--"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m:02d}:{s:02d}"


def _num(value: float | None, fmt: str = ".1f") -> str:
    """A figure, or a dash while there is none (an unmeasured task)."""
    return "-" if value is None or not math.isfinite(value) else format(value, fmt)


def _footer(p: SchedulerProgress) -> str:
    cap = f"/{p.n_trials}" if p.n_trials is not None else ""
    earlier = f" ({p.earlier} earlier)" if p.earlier else ""
    lat = p.latency
    est = (f"{lat * 1e3:.3f} ms" if lat is not None else
           f"- ({p.measured_tasks}/{plural(len(p.states), 'task')} measured)")
    return (f"{p.new_trials}{cap} new trials{earlier}, est. latency {est}, "
            f"elapsed {_clock(p.elapsed)}, ETA {_clock(p.eta)}")


class PlainDisplay:
    """One line per round: the task tuned, its trials and best GFLOP/s, totals and ETA."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stdout

    def __call__(self, p: SchedulerProgress) -> None:
        if p.finished:
            print(f"done: {_footer(p)}", file=self.stream, flush=True)
            return
        st = p.states[p.current]
        print(f"[{p.current + 1}/{len(p.states)}] {st.task.name}: {st.n_measured}/{st.space} "
              f"trials, best {_num(st.best_gflops)} GFLOP/s | {_footer(p)}",
              file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichDisplay:
    """A live table (task, weight, trials, best GFLOP/s, speed-up over the default)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.live = Live(console=Console(), refresh_per_second=4, transient=False)
        self.live.start()

    def _table(self, p: SchedulerProgress) -> Any:
        from rich.table import Table

        t = Table(title="tforge tune", caption=_footer(p), expand=False)
        for col in ("#", "task", "w", "trials", "GFLOP/s", "vs default", ""):
            t.add_column(col, justify="left" if col in ("task", "") else "right")
        for i, st in enumerate(p.states):
            speed = (f"{st.default_cost / st.best_cost:.2f}x"
                     if math.isfinite(st.default_cost) and math.isfinite(st.best_cost) else "")
            mark = "<" if i == p.current else st.done
            t.add_row(str(i + 1), st.task.name, f"{st.task.weight:g}",
                      f"{st.n_measured}/{st.space}", _num(st.best_gflops), speed, mark)
        return t

    def __call__(self, p: SchedulerProgress) -> None:
        self.live.update(self._table(p), refresh=True)

    def close(self) -> None:
        self.live.stop()


def make_display(kind: str = "auto") -> PlainDisplay | RichDisplay:
    """``rich`` (a live table), ``plain`` (a line per round) or ``auto``: rich when it is
    installed and stdout is a terminal."""
    if kind == "auto":
        try:
            import rich  # noqa: F401

            kind = "rich" if sys.stdout.isatty() else "plain"
        except ImportError:
            kind = "plain"
    return RichDisplay() if kind == "rich" else PlainDisplay()


def summary_lines(states: Sequence[Any]) -> list[str]:
    """The final per-task table as text."""
    lines = [f"{'task':<60} {'w':>3} {'trials':>9} {'default':>10} {'best':>10} {'GFLOP/s':>8}"]
    for st in states:
        d = f"{st.default_cost * 1e3:.3f}ms" if math.isfinite(st.default_cost) else "-"
        b = f"{st.best_cost * 1e3:.3f}ms" if math.isfinite(st.best_cost) else "-"
        note = f" {st.done}" if st.done and st.done != "exhausted" else ""
        lines.append(f"{st.task.name[:60]:<60} {st.task.weight:>3g} "
                     f"{st.n_measured:>4}/{st.space:<4} {d:>10} {b:>10} "
                     f"{_num(st.best_gflops):>8}{note}")
    return lines


def _curves(db: Database, tasks: Sequence[Task]) -> list[tuple[Task, list[float], list[float]]]:
    """Per task: (task, wall time of each record, best cost so far after it)."""
    out = []
    for task in tasks:
        best, times, costs = math.inf, [], []
        for r in db.records(task.key, task.target_str):
            best = min(best, r.cost)
            times.append(r.timestamp)
            costs.append(best)
        out.append((task, times, costs))
    return out


def _gflops(task: Task, cost: float) -> float:
    return task.flop / cost / 1e9 if math.isfinite(cost) and task.flop else 0.0


def _latency_curve(curves: list[tuple[Task, list[float], list[float]]],
                   t0: float) -> tuple[list[float], list[float]]:
    """Wall time (min) and sum of weight x best cost (ms); a task counts with its first
    record (the default config) until it is measured, so the curve starts at the untuned
    estimate."""
    best = {k: costs[0] for k, (_, _, costs) in enumerate(curves) if costs}
    if not best or not all(math.isfinite(c) for c in best.values()):
        return [], []
    events = sorted((t, k, c) for k, (_, times, costs) in enumerate(curves)
                    for t, c in zip(times, costs))
    xs, ys = [0.0], [sum(curves[j][0].weight * c for j, c in best.items()) * 1e3]
    for t, k, cost in events:
        best[k] = cost
        xs.append((t - t0) / 60)
        ys.append(sum(curves[j][0].weight * c for j, c in best.items()) * 1e3)
    return xs, ys


def plot_curves(db: Database, tasks: Sequence[Task], path: str | os.PathLike[str]) -> str:
    """Best GFLOP/s against trials and against wall time per task, and the estimated latency
    (sum of weight x best cost) against wall time, as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = _curves(db, tasks)
    starts = [t[0] for _, t, _ in curves if t]
    t0 = min(starts) if starts else 0.0
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
    for task, times, costs in curves:
        if not times:
            continue
        gflops = [_gflops(task, c) for c in costs]
        label = f"{task.name[:48]} (w{task.weight:g})"
        axes[0].plot(range(1, len(gflops) + 1), gflops, label=label, lw=1, ds="steps-post")
        axes[1].plot([(t - t0) / 60 for t in times], gflops, lw=1, ds="steps-post")
    xs, ys = _latency_curve(curves, t0)
    if xs:
        axes[2].plot(xs, ys, color="k", ds="steps-post")
    axes[0].set(xlabel="trials", ylabel="best GFLOP/s", title="per task, against trials")
    axes[1].set(xlabel="wall time (min)", ylabel="best GFLOP/s",
                title="per task, against wall time")
    axes[2].set(xlabel="wall time (min)", ylabel="ms",
                title="estimated latency (sum of weight x best cost; unmeasured: default)")
    for ax in axes:
        ax.grid(alpha=0.3)
    if len(curves) <= 24:
        axes[0].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    path = os.fspath(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
