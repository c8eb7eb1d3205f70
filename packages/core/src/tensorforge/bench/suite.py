"""The two levels of the benchmark, one case at a time: an operator workload (ours vs ONNX
Runtime vs PyTorch, and the FMA-peak kernel for "% of peak") and a whole model (ours vs ONNX
Runtime vs PyTorch). Correctness (ours vs ONNX Runtime) is checked before timing; a case that
fails the check is still timed and reported with `correct: false`.

Ratios are speed-ups: baseline seconds / our seconds per round (above 1: we are faster)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import baselines as bl
from .stats import RoundRunner, interleave, quartiles, ratio_quartiles
from .workloads import Workload

RTOL, ATOL = 1e-4, 1e-5
# Documented exceptions to RTOL/ATOL, per model or workload key: (rtol, atol, why). Empty
# today: every model matches ONNX Runtime within 1e-4 / 1e-5 (docs/performance.md).
TOLERANCES: dict[str, tuple[float, float, str]] = {}

Row = dict[str, Any]


def target_string(threads: int) -> str:
    return f"llvm -num-threads={threads}"


def _check(ours: list[np.ndarray], ref: list[np.ndarray], key: str) -> dict[str, Any]:
    rtol, atol, why = TOLERANCES.get(key, (RTOL, ATOL, ""))
    ok, worst = True, 0.0
    for a, b in zip(ours, ref):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            return {"correct": False, "max_abs_err": None, "rtol": rtol, "atol": atol,
                    "note": f"shape {a.shape} vs {b.shape}"}
        d = np.abs(a - b)
        worst = max(worst, float(d.max(initial=0.0)))
        ok = ok and bool(np.all(d <= atol + rtol * np.abs(b)))
    return {"correct": ok, "max_abs_err": worst, "rtol": rtol, "atol": atol, "note": why}


def _summarize(row: Row, times: dict[str, list[float]], flops: float | None = None) -> Row:
    ours = times["ours"]
    row["rounds"] = len(ours)
    row["ours_s"] = quartiles(ours)
    if flops:
        row["gflops"] = quartiles([flops / t / 1e9 for t in ours])
    for name in bl.BASELINES:
        if name in times:
            row[f"{name}_s"] = quartiles(times[name])
            row[f"ratio_{name}"] = ratio_quartiles(times[name], ours)
    if "peak" in times and flops:
        row["peak_gflops"] = quartiles([row["_peak_flops"] / t / 1e9 for t in times["peak"]])
        row["pct_peak"] = quartiles([(flops / o) / (row["_peak_flops"] / p)
                                     for o, p in zip(ours, times["peak"])])
    row.pop("_peak_flops", None)
    return row


def _baseline_fns(which: tuple[str, ...], threads: int, make: dict[str, Callable[[], Any]],
                  row: Row) -> dict[str, Callable[[], Any]]:
    fns: dict[str, Callable[[], Any]] = {}
    for name in which:
        why = bl.available(name)
        if why:
            row.setdefault("skipped", {})[name] = why
            continue
        if name == "torch":
            bl.torch_threads(threads)
        if name in ("tf", "tf-xla"):
            why = bl.tf_threads(threads)
            if why:
                row.setdefault("skipped", {})[name] = why
                continue
        try:
            fns[name] = make[name]()
        except NotImplementedError as exc:
            row.setdefault("skipped", {})[name] = str(exc)
    return fns


def measure_op(w: Workload, threads: int, rounds: int, which: tuple[str, ...] = bl.BASELINES,
               peak: tuple[Callable[[], None], float] | None = None,
               runner: RoundRunner | None = None, min_sample_s: float = 0.005) -> Row:
    """One operator workload at `threads` threads; `peak` is (FMA kernel, its flops)."""
    import tensorforge

    model, arrays = w.onnx_model(), w.arrays()
    inputs = {"x": arrays["x"]}
    row: Row = {"level": "op", "name": w.key, "kind": w.kind, "models": list(w.models),
                "threads": threads, "flops": w.flops}
    t0 = time.perf_counter()
    cm = tensorforge.compile(model, target=target_string(threads))
    row["compile_s"] = time.perf_counter() - t0
    row["schedules"] = sorted({k["schedule"] for k in cm.desc["kernels"]})
    fns = _baseline_fns(which, threads, {
        "ort": lambda: bl.ort_runner(model, threads, inputs),
        "torch": lambda: bl.torch_op_runner(w, arrays),
        "tf": lambda: bl.tf_op_runner(model, inputs),
        "tf-xla": lambda: bl.tf_op_runner(model, inputs, xla=True)}, row)
    ours = lambda: cm.run(inputs)
    if "ort" in fns:
        row.update(_check(ours(), fns["ort"](), w.key))
    if peak is not None:
        fns["peak"], row["_peak_flops"] = peak
    return _summarize(row, interleave(ours, fns, rounds, min_sample_s, runner), w.flops)


def measure_model(name: str, threads: int, rounds: int, which: tuple[str, ...] = bl.BASELINES,
                  runner: RoundRunner | None = None, min_sample_s: float = 0.005) -> Row:
    """One model of `tensorforge_onnx.models` or of the exported families (`families.py`) at
    batch 1 and `threads` threads."""
    import tensorforge
    from tensorforge_onnx import models as zoo

    from . import families

    if name in zoo.MODELS:
        model, inputs = zoo.build(name), zoo.example_inputs(name)
    else:  # an exported torchvision family
        model, inputs = families.load(name)
    row: Row = {"level": "model", "name": name, "threads": threads,
                "inputs": {k: list(v.shape) for k, v in inputs.items()}}
    t0 = time.perf_counter()
    cm = tensorforge.compile(model, target=target_string(threads))
    row["compile_s"] = time.perf_counter() - t0
    row["kernels"] = len(cm.kernels)
    row["schedules"] = _schedule_counts(cm)
    fns = _baseline_fns(which, threads, {
        "ort": lambda: bl.ort_runner(model, threads, inputs),
        "torch": lambda: bl.torch_model_runner(model, inputs),
        "tf": lambda: bl.tf_op_runner(model, inputs),
        "tf-xla": lambda: bl.tf_op_runner(model, inputs, xla=True)}, row)
    ours = lambda: cm.run(inputs)
    if "ort" in fns:
        ref = fns["ort"]()
        row.update(_check(ours(), ref, name))
        if "torch" in fns:  # the PyTorch baseline must compute the same model
            t = _check(fns["torch"](), ref, name)
            row["torch_matches_ort"] = t["correct"] or (t["max_abs_err"] or 0) < 1e-3
        for tf_name in ("tf", "tf-xla"):  # and so must TensorFlow's
            if tf_name in fns:
                t = _check(fns[tf_name](), ref, name)
                row[f"{tf_name}_matches_ort"] = t["correct"] or (t["max_abs_err"] or 0) < 1e-3
    return _summarize(row, interleave(ours, fns, rounds, min_sample_s, runner))


def _schedule_counts(cm: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in cm.desc["kernels"]:
        out[k["schedule"]] = out.get(k["schedule"], 0) + 1
    return out
