"""The benchmark's outputs: a Markdown table, a PNG chart (matplotlib, when installed) and a
JSON that later runs compare against (a ratio that drops by more than 10% is a regression)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from .baselines import LABELS

SCHEMA = "tensorforge.bench"
VERSION = 1
RATIOS = ("ratio_ort", "ratio_torch", "pct_peak", "ratio_tf", "ratio_tf-xla")
THRESHOLD = 0.10


def row_id(row: dict[str, Any]) -> str:
    return f"{row['level']}/{row['name']}/t{row['threads']}"


def document(rows: list[dict[str, Any]], machine: dict[str, Any],
             config: dict[str, Any]) -> dict[str, Any]:
    """The JSON document of a run (rows keep every figure; `ratios` the comparable ones)."""
    machine = dict(machine)
    machine["loadavg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    ratios = {row_id(r): {k: r[k][1] for k in RATIOS if r.get(k)} for r in rows}
    return {"schema": SCHEMA, "version": VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "machine": machine, "config": config, "rows": rows, "ratios": ratios}


def compare(doc: dict[str, Any], base: dict[str, Any],
            threshold: float = THRESHOLD) -> list[dict[str, Any]]:
    """Ratios of `doc` that fell by more than `threshold` (relative) from `base`."""
    out = []
    for rid, new in doc.get("ratios", {}).items():
        old = base.get("ratios", {}).get(rid, {})
        for key, value in new.items():
            before = old.get(key)
            if before and value < before * (1 - threshold):
                out.append({"id": rid, "ratio": key, "baseline": before, "now": value,
                            "change": value / before - 1})
    return out


def load_baseline(path: str | os.PathLike[str] | None) -> tuple[dict[str, Any] | None, str]:
    """(document or None, a note saying what was used)."""
    if path is None:
        return None, "no baseline (first run)"
    p = Path(path)
    if not p.exists():
        return None, f"baseline {p} does not exist"
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        return None, f"baseline {p} unreadable: {exc}"
    if doc.get("schema") != SCHEMA:
        return None, f"baseline {p} is not a tensorforge.bench JSON"
    return doc, f"compared with {p} ({doc.get('created', '?')})"


def _q(q: Any, fmt: str, scale: float = 1.0) -> str:
    if not q:
        return "-"
    a, m, b = (x * scale for x in q)
    return f"{a:{fmt}} / **{m:{fmt}}** / {b:{fmt}}"


def _ok(r: dict[str, Any]) -> str:
    if "correct" not in r:
        return "unchecked"
    return "yes" if r["correct"] else f"NO ({r.get('max_abs_err')})"


def busy_warning(machine: dict[str, Any]) -> str | None:
    """A warning when the 1-minute load average exceeded the usable CPUs during the run."""
    cpus = machine.get("usable_cpus") or machine.get("logical_cpus") or 0
    loads = [la[0] for la in (machine.get("loadavg_start"), machine.get("loadavg_end")) if la]
    if not cpus or not loads or max(loads) <= cpus:
        return None
    return (f"**Warning: the machine was busy** (1-minute load average "
            f"{' -> '.join(f'{x:.1f}' for x in loads)} on {cpus} usable CPUs): other processes "
            "took CPU time, so the figures, multi-threaded ones above all (OpenMP threads wait "
            "at barriers for a descheduled peer), are not reliable.")


def geomean(values: list[float]) -> float | None:
    """Geometric mean of positive ratios (None when there are none)."""
    import math

    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def markdown(doc: dict[str, Any], regressions: list[dict[str, Any]], note: str,
             extra: str = "") -> str:
    rows = doc["rows"]
    cfg = doc["config"]
    lines = [f"# tensorforge benchmark, {doc['created']}", "",
             f"`{cfg.get('command', '')}`; {cfg.get('rounds')} interleaved rounds per case. "
             "Times are q1 / **median** / q3. Ratios are speed-ups (baseline time / our time, "
             "per round; above 1 we are faster); % of peak is our GFLOP/s over the FMA-peak "
             "kernel's, per round.", ""]
    busy = busy_warning(doc["machine"])
    if busy:
        lines += [busy, ""]
    models = [r for r in rows if r["level"] == "model"]
    if models:
        lines += ["## End to end (batch 1)", "",
                  "| model | threads | ours ms | ONNX Runtime ms | PyTorch ms | vs ONNX Runtime "
                  "| vs PyTorch | correct | kernels |", "|" + "---|" * 9]
        for r in models:
            lines.append(f"| {r['name']} | {r['threads']} | {_q(r['ours_s'], '.3g', 1e3)} | "
                         f"{_q(r.get('ort_s'), '.3g', 1e3)} | {_q(r.get('torch_s'), '.3g', 1e3)}"
                         f" | {_q(r.get('ratio_ort'), '.2f')} | {_q(r.get('ratio_torch'), '.2f')}"
                         f" | {_ok(r)} | {r.get('kernels', '')} |")
        for th in sorted({r["threads"] for r in models}):
            geo = geomean([r["ratio_ort"][1] for r in models
                           if r["threads"] == th and r.get("ratio_ort")])
            if geo:
                lines.append(f"| **geometric mean** | {th} | | | | **{geo:.2f}** | | | |")
        lines.append("")
    ops = [r for r in rows if r["level"] == "op"]
    if ops:
        lines += ["## Operators (ResNet-18, MobileNetV2; op + bias)", "",
                  "| workload | models | threads | MFLOP | ours GFLOP/s | % of FMA peak | "
                  "vs ONNX Runtime | vs PyTorch | correct |", "|" + "---|" * 9]
        for r in ops:
            lines.append(f"| {r['name']} | {', '.join(r['models'])} | {r['threads']} | "
                         f"{r['flops'] / 1e6:.1f} | {_q(r.get('gflops'), '.3g')} | "
                         f"{_q(r.get('pct_peak'), '.1f', 100)} | {_q(r.get('ratio_ort'), '.2f')}"
                         f" | {_q(r.get('ratio_torch'), '.2f')} | {_ok(r)} |")
        peaks = {r["threads"]: r["peak_gflops"][1] for r in ops if r.get("peak_gflops")}
        lines += ["", "FMA peak (median over the operator rounds): "
                  + ", ".join(f"{t} thread(s) {g:.1f} GFLOP/s" for t, g in sorted(peaks.items())),
                  ""]
    lines += _tensorflow_table(rows)
    skipped = {f"{LABELS.get(k, k)}: {v}" for r in rows for k, v in r.get("skipped", {}).items()}
    if skipped:
        lines += ["Skipped baselines: " + "; ".join(sorted(skipped)), ""]
    lines += ["## Regressions (a ratio down by more than 10%)", "", note + ".", ""]
    lines += [f"- **{g['id']}** {g['ratio']}: {g['baseline']:.3g} -> {g['now']:.3g} "
              f"({g['change']:+.0%})" for g in regressions] or ["None."]
    if extra:
        lines += ["", extra.rstrip()]
    lines += ["", "## Machine", ""]
    lines += [f"- {k}: {v}" for k, v in doc["machine"].items()]
    return "\n".join(lines) + "\n"


def _tensorflow_table(rows: list[dict[str, Any]]) -> list[str]:
    """Models and operators against TensorFlow (`tf.function`) and TF-XLA, where measured."""
    tf_rows = [r for r in rows if r.get("tf_s") or r.get("tf-xla_s")]
    if not tf_rows:
        return []
    lines = ["## Against TensorFlow and TF-XLA (batch 1; NHWC, weights laid out once)", "",
             "| level | case | threads | ours ms | TensorFlow ms | TF-XLA ms | vs TensorFlow | "
             "vs TF-XLA | same result as ORT |", "|" + "---|" * 9]
    for r in tf_rows:
        same = [f"{LABELS[b]}: {'yes' if r[f'{b}_matches_ort'] else 'NO'}"
                for b in ("tf", "tf-xla") if f"{b}_matches_ort" in r]
        lines.append(f"| {r['level']} | {r['name']} | {r['threads']} | "
                     f"{_q(r['ours_s'], '.3g', 1e3)} | {_q(r.get('tf_s'), '.3g', 1e3)} | "
                     f"{_q(r.get('tf-xla_s'), '.3g', 1e3)} | {_q(r.get('ratio_tf'), '.2f')} | "
                     f"{_q(r.get('ratio_tf-xla'), '.2f')} | {', '.join(same) or '-'} |")
    return lines + [""]


def chart(doc: dict[str, Any], path: Path) -> str | None:
    """Write the PNG; returns why not when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): no chart"
    rows = doc["rows"]
    models = [r for r in rows if r["level"] == "model"]
    ops = [r for r in rows if r["level"] == "op" and r.get("pct_peak")]
    panels = [p for p in (models, ops) if p]
    if not panels:
        return "nothing to plot"
    size = (max(8.0, 0.32 * len(ops) + 4), 4.5 * len(panels))
    fig, axes = plt.subplots(len(panels), 1, figsize=size, squeeze=False)
    ax_list = [a for (a,) in axes]
    if models:
        ax = ax_list.pop(0)
        series = [(f"vs {LABELS[b]}, {t} thr", b, t) for b in ("ort", "torch")
                  for t in sorted({r["threads"] for r in models})]
        _bars(ax, models, series, lambda r, key: (r.get(f"ratio_{key}") or [None] * 3))
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_ylabel("speed-up (baseline time / ours)")
        ax.set_yscale("log")
        ax.set_title("End to end, batch 1 (median, bars: quartiles)")
    if ops:
        ax = ax_list.pop(0)
        series = [(f"{t} thr", "pct_peak", t) for t in sorted({r["threads"] for r in ops})]
        _bars(ax, ops, series, lambda r, key: [100 * v for v in r[key]])
        ax.set_ylabel("% of FMA peak")
        ax.set_title("Operators of ResNet-18 and MobileNetV2")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def _bars(ax: Any, rows: list[dict[str, Any]], series: list[tuple[str, str, int]],
          get: Any) -> None:
    names = list(dict.fromkeys(r["name"] for r in rows))
    by = {(r["name"], r["threads"]): r for r in rows}
    width = 0.8 / max(1, len(series))
    for i, (label, key, threads) in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for j, n in enumerate(names):
            r = by.get((n, threads))
            q = get(r, key) if r else None
            if q and q[1] is not None:
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(q[1])
                lo.append(q[1] - q[0])
                hi.append(q[2] - q[1])
        if xs:
            ax.bar(xs, ys, width, yerr=[lo, hi], label=label, capsize=2)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def write(doc: dict[str, Any], results: Path, baseline: str | os.PathLike[str] | None,
          extra_md: str = "") -> dict[str, Any]:
    """Write `results/<stamp>/` and `results/latest.{md,json,png}`; compare with `baseline`
    (default: the previous `latest.json`); `extra_md` is a section added to the Markdown.
    Returns paths, regressions and notes."""
    results = Path(results)
    previous = results / "latest.json"
    base, note = load_baseline(baseline if baseline is not None
                               else (previous if previous.exists() else None))
    regressions = compare(doc, base) if base else []
    doc["baseline"] = {"note": note, "regressions": regressions}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = results / stamp
    folder.mkdir(parents=True, exist_ok=True)
    md = markdown(doc, regressions, note, extra_md)
    text = json.dumps(doc, indent=1, default=float) + "\n"
    why_not = chart(doc, folder / "results.png")
    for target in (folder / "results", results / "latest"):
        target.with_suffix(".md").write_text(md)
        target.with_suffix(".json").write_text(text)
    if why_not is None:
        (results / "latest.png").write_bytes((folder / "results.png").read_bytes())
    return {"folder": folder, "markdown": md, "regressions": regressions, "note": note,
            "chart": why_not or str(folder / "results.png")}
