"""Search efficiency of the tuners (issue 6), measured once and replayed.

    python benchmarks/tuner_efficiency.py measure [TASK ...]   # the tables (slow, once)
    python benchmarks/tuner_efficiency.py replay [--seeds 20]  # the tuners on the tables

**Tables.** Each task's space is measured once, every config (or a random sample of
``--sample`` configs where the space is large): built, checked against the default config's
output, and timed ``repeat=3`` times of at least 10 ms; the table keeps the fastest of the
three (the minimum is the figure least disturbed by other processes on a shared machine),
in two passes over the space at different times, keeping the better.
Tables are JSON files under ``benchmarks/results/tuning-tables/`` (ignored by git):
``{"task": Task.to_json(), "space": n, "default_index": i, "gflops": {index: GFLOP/s}}``
(0 for a config that failed), written as the measurement goes, so an interrupted run resumes.

**Replay.** :func:`replay` drives a tuner through its own code (``create_tuner``,
``next_batch``, ``update``; ``pretrain`` for transfer) in batches of 8, as ``TuningSession``
does; only the measurement is replaced by a look-up in the table. The default config is not
given to the tuners and not counted. Where a table is a sample, the configs outside it are
marked visited before the search, so every tuner searches the same sampled space. The figure:
trials until the best found reaches 95% (99%) of the table's best, median and IQR over seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

TARGET = "llvm -num-threads=1"
TABLES = Path(__file__).resolve().parent / "results" / "tuning-tables"
GOALS = (0.95, 0.99)
SAMPLE = 2000  # spaces up to this size are measured whole (the matmul: 1680)


# ---- the tasks ---------------------------------------------------------------------------------
def _conv(C: int, H: int, OC: int, k: int, stride: int) -> Any:
    from tensorforge.autotune import Task

    pad = k // 2
    return Task("conv2d_nchwc.llvm", (1, C, H, H, OC, k, k, stride, pad, 16, 16), TARGET)


def _graph_task(model_path: str, strategy: str, index: int = 0) -> Any:
    from tensorforge.compiler.model_tuning import extract_tasks

    tasks = [t for t in extract_tasks(model_path, TARGET) if t.name.startswith(strategy)]
    return tasks[index]


def _dense_model(path: str, m: int, k: int, n: int) -> str:
    """A one-node ONNX model: Gemm (m x k) x (k x n) + bias, weights as initializers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((n, k)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "B")
    node = helper.make_node("Gemm", ["X", "W", "B"], ["Y"], transB=1)
    graph = helper.make_graph([node], "dense", [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, [m, k])], [helper.make_tensor_value_info(
            "Y", TensorProto.FLOAT, [m, n])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


def _resnet18_path() -> str:
    from tensorforge_onnx import models

    path = TABLES / "resnet18.onnx"
    if not path.exists():
        TABLES.mkdir(parents=True, exist_ok=True)
        models.save("resnet18", str(path))
    return str(path)


def _family_task(model: str, label: str) -> Any:
    """The graph task of torchvision ``model`` (the cache of ``export_torchvision.py``) whose
    label (``str(task)``'s first part, e.g. ``conv2d_nchwc+relu 1x16x56x56x16->...``) is
    ``label``."""
    from families_vs_ort import CACHE  # the export cache (TENSORFORGE_MODEL_CACHE)

    from tensorforge.compiler.model_tuning import extract_tasks

    path = CACHE / f"{model}.onnx"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run `benchmarks/export_torchvision.py` first "
                         "(torch and torchvision in a separate venv: its docstring says how)")
    found = [t for t in extract_tasks(str(path), TARGET) if str(t).startswith(f"Task({label},")]
    if not found:
        raise SystemExit(f"{model} has no task {label!r} on {TARGET} (layouts differ by "
                         "machine: the vector width sets the channel blocks)")
    return found[0]


#: issue 15's spaces: 1x1 convs with the GEMM forms, a grouped conv, from the torchvision
#: families (ResNet-50, ResNeXt-50, MobileNetV2); NCHW16c as on an AVX2 or AVX-512 machine
FAMILY_TASKS = {
    "r50 1x1 256->64 56x56 (graph)": ("resnet50", "conv2d_nchwc+relu 1x16x56x56x16->1x4x56x56x16"),
    "r50 1x1 64->256 +add 56x56 (graph)": (
        "resnet50", "conv2d_nchwc+add+relu 1x4x56x56x16->1x16x56x56x16"),
    "r50 1x1 1024->256 14x14 (graph)": (
        "resnet50", "conv2d_nchwc+relu 1x64x14x14x16->1x16x14x14x16"),
    "resnext 3x3 g32 28x28 (graph)": (
        "resnext50_32x4d", "conv2d_nchwc+relu 1x32x28x28x8->1x32x28x28x8"),
    "mbv2 1x1 32->192 28x28 (graph)": (
        "mobilenet_v2", "conv2d_nchwc+clip 1x2x28x28x16->1x12x28x28x16"),
}


def make_tasks() -> dict[str, Callable[[], Any]]:
    """Name -> a function making the task (graph tasks need a model file)."""
    from tensorforge.autotune import Task

    family = {name: (lambda m=m, label=label: _family_task(m, label))
              for name, (m, label) in FAMILY_TASKS.items()}
    return {
        "matmul 512^3": lambda: Task("matmul_packed.llvm", (512, 512, 512), TARGET),
        "conv 3x3 64->64 56x56": lambda: _conv(64, 56, 64, 3, 1),
        "conv 3x3 256->256 14x14": lambda: _conv(256, 14, 256, 3, 1),
        "conv 1x1 128->256 /2 28x28": lambda: _conv(128, 28, 256, 1, 2),
        "r18 stem conv (graph)": lambda: _graph_task(_resnet18_path(), "conv2d_nchwc+relu"),
        "dense 64x512->1000 (graph)": lambda: _graph_task(
            _dense_model(str(TABLES / "dense64.onnx"), 64, 512, 1000), "dense_packed"),
    } | family


# ---- measuring a table -------------------------------------------------------------------------
def table_path(name: str) -> Path:
    slug = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    return TABLES / f"{slug}.json"


def measure_table(name: str, task: Any, sample: int = SAMPLE, passes: int = 2, chunk: int = 16,
                  seed: int = 0) -> dict[str, Any]:
    """Measure every config of ``task`` (a random ``sample`` of them when the space is
    larger), min of 3 timings each, in ``passes`` passes over the space at different times
    (a config keeps its best pass: a neighbour's burst during one pass does not decide);
    resumes from and writes to ``table_path(name)``."""
    from tensorforge.autotune import Builder, Measurer, Runner

    path = table_path(name)
    space = task.config_space
    if path.exists():
        table = json.loads(path.read_text())
    else:
        table = {"name": name, "task": task.to_json(), "key": task.key, "space": len(space),
                 "flop": task.flop, "default_index": space.default_index, "gflops": {},
                 "errors": {}}
    passes_of = table.setdefault("passes", {i: 1 for i in table["gflops"]})
    every = list(range(len(space)))
    if len(space) > sample:
        every = sorted(random.Random(seed).sample(every, sample))
    table["sampled"] = len(every) < len(space)
    meas = Measurer(Builder(timeout=120, n_parallel=2),
                    Runner(number=1, repeat=3, min_repeat_ms=10, timeout=60))
    t0 = time.monotonic()
    try:
        ref = meas.reference_result(task) if meas.reference(task) is not None else None
        if ref is not None and ref.costs:
            table["default_gflops"] = max(table.get("default_gflops", 0.0),
                                          task.flop / min(ref.costs) / 1e9)
        for p in range(1, passes + 1):
            todo = [i for i in every if passes_of.get(str(i), 0) < p]
            for c in range(0, len(todo), chunk):
                part = todo[c:c + chunk]
                for i, r in zip(part, meas.measure(task, part, check=True)):
                    ok = r.ok and r.costs
                    g = task.flop / min(r.costs) / 1e9 if ok else 0.0
                    table["gflops"][str(i)] = max(g, table["gflops"].get(str(i), 0.0))
                    passes_of[str(i)] = p
                    if not ok:
                        table["errors"][str(i)] = r.error_class
                TABLES.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(table))
                os.replace(tmp, path)
                print(f"[{name}] pass {p}: {c + len(part)}/{len(todo)} measured, "
                      f"{time.monotonic() - t0:.0f} s", flush=True)
    finally:
        meas.close()
    return table


def _main_measure(names: Sequence[str], sample: int, passes: int = 2) -> None:
    tasks = make_tasks()
    for name in names or list(tasks):
        measure_table(name, tasks[name](), sample, passes)


# ---- replaying the tuners ----------------------------------------------------------------------
TUNERS = ("random", "xgb", "xgb+transfer", "ga")


@dataclass
class Outcome:
    name: str
    space: int
    searched: int
    default_gflops: float
    best_gflops: float
    trials: dict[str, dict[float, list[float]]]  # tuner -> goal -> trials per seed
    at_goal: dict[float, int]  # configs of the searched set that reach the goal
    passes: int = 1  # measurement passes every config of the table had


def load_tables(names: Sequence[str] | None = None) -> dict[str, Any]:
    from tensorforge.autotune.replay import Table

    out = {}
    for name in names or list(make_tasks()):
        path = table_path(name)
        if path.exists():
            data = json.loads(path.read_text())
            t = Table.from_json(data)
            t.meta = data  # type: ignore[attr-defined]
            out[name] = t
    return out


def run_replay(tables: dict[str, Any], seeds: int = 20, tuners: Sequence[str] = TUNERS,
               only: str | None = None, log: Callable[[str], None] = print) -> list[Outcome]:
    """Every tuner x seed on every table (or table ``only``); xgb+transfer is pretrained on
    the other tables."""
    from tensorforge.autotune.replay import replay, transfer_from, trials_to

    outcomes = []
    for name, table in tables.items():
        if only is not None and name != only:
            continue
        trials: dict[str, dict[float, list[float]]] = {}
        others = [t for n, t in tables.items() if n != name]
        for tuner in tuners:
            trials[tuner] = {g: [] for g in GOALS}
            t0 = time.monotonic()
            for seed in range(seeds):
                kw: dict[str, Any] = {}
                if tuner.endswith("+transfer"):
                    kw["transfer"] = transfer_from(others, seed=seed)
                curve = replay(table, tuner.split("+")[0], seed, stop_at=max(GOALS), **kw)
                for g in GOALS:
                    trials[tuner][g].append(trials_to(curve, g * table.best))
            log(f"[{name}] {tuner}: " + ", ".join(
                f"{int(g * 100)}%: median {np.median(v):.0f}" for g, v in trials[tuner].items())
                + f" ({time.monotonic() - t0:.0f} s)")
        meta = getattr(table, "meta", {})
        outcomes.append(Outcome(name, len(table.task.config_space), len(table.searched),
                                table.gflops.get(table.task.config_space.default_index,
                                                float(meta.get("default_gflops", 0.0))),
                                table.best, trials,
                                {g: sum(table.gflops[i] >= g * table.best for i in table.searched)
                                 for g in GOALS},
                                min(meta.get("passes", {"": 1}).values())))
    return outcomes


def report(outcomes: Sequence[Outcome]) -> str:
    """A markdown table: per task, median [IQR] trials to 95% / 99% per tuner, xgb/random."""
    from tensorforge.autotune.replay import summarize

    def cell(v: list[float]) -> str:
        m, lo, hi = summarize(v)
        return f"{m:.0f} [{lo:.0f}-{hi:.0f}]"

    lines = []
    for g in GOALS:
        head = " | ".join(TUNERS)
        lines += [f"\n**Trials to {int(g * 100)}% of the table's best** (median [IQR])\n",
                  "| task | searched / space (passes) | configs >= goal | default, best GFLOP/s "
                  f"| {head} | xgb / random | xgb+transfer / random |",
                  "|---|---|---|---|" + "---|" * (len(TUNERS) + 2)]
        for o in outcomes:
            med = {t: float(np.median(o.trials[t][g])) for t in TUNERS if t in o.trials}
            ratio = [f"{med[t] / med['random']:.2f}" if t in med else "-"
                     for t in ("xgb", "xgb+transfer")]
            cells = " | ".join(cell(o.trials[t][g]) if t in o.trials else "-" for t in TUNERS)
            lines.append(f"| {o.name} | {o.searched} / {o.space} ({o.passes}) | {o.at_goal[g]} | "
                         f"{o.default_gflops:.1f}, "
                         f"{o.best_gflops:.1f} | {cells} | {ratio[0]} | {ratio[1]} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=["measure", "replay"])
    ap.add_argument("tasks", nargs="*", help="task names (default: all)")
    ap.add_argument("--sample", type=int, default=SAMPLE)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args(argv)
    if args.cmd == "measure":
        _main_measure(args.tasks, args.sample, args.passes)
        return
    outcomes = run_replay(load_tables(args.tasks or None), args.seeds)
    text = report(outcomes)
    print(text)
    out = TABLES.parent / "tuner-efficiency.md"
    out.write_text(text + "\n")
    (TABLES.parent / "tuner-efficiency.json").write_text(json.dumps(
        [{"name": o.name, "space": o.space, "searched": o.searched,
          "default_gflops": o.default_gflops, "best_gflops": o.best_gflops,
          "at_goal": {str(g): k for g, k in o.at_goal.items()}, "passes": o.passes,
          "trials": {t: {str(g): v for g, v in d.items()} for t, d in o.trials.items()}}
         for o in outcomes]))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
