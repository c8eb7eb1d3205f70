"""The torchvision model families (issue 15) vs ONNX Runtime: untuned latency, interleaved.

    /work/torchenv/bin/python benchmarks/export_torchvision.py          # once: the cache
    python benchmarks/families_vs_ort.py --threads 1,2 --rounds 15 [--models a,b] [--md F]

Every model of the cache (`benchmarks/export_torchvision.py`, TorchScript exports) is
compiled for `llvm -num-threads=T` and loaded in ONNX Runtime with its default graph
optimizations and `intra_op_num_threads=T` (one inter-op thread), in this process. Outputs
are checked first (max |ours - ORT| / max |ORT|). Then `--rounds` rounds, each one run of
ours and one of ORT's in alternating order; the figures are the medians of each and the
median of the per-round ratios (ours / ORT: below 1 = we are faster), with the load average
(1 minute) before and after each model, since the machine may be shared. Beside the wall
time, the sums of per-kernel medians (ours: `CompiledModel.profile`; ORT: its profiler's
per-node times), which leave out the time the OS took between kernels. The geometric means
of the ratios per thread count close the table; with 1 and 2 threads, a second table gives
each model's speed-up from 1 to 2 threads (ours and ORT's).

With `--tuned DIR`, each model is also compiled with the records of `DIR/<model>.db` (made by
`benchmarks/tune_families.py`: `tforge tune` per model) and timed in the same rounds (the
three in rotating order); the table gains the tuned / ORT ratio and the tuned kernels' sum."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("TENSORFORGE_MODEL_CACHE", ROOT / "benchmarks" / ".models"))
ORDER = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "regnet_x_400mf",
         "resnext50_32x4d", "shufflenet_v2_x1_0", "densenet121",
         "deeplabv3_mobilenet_v3_large", "efficientnet_b0"]


def _session(path: Path, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


class _Fifo:
    """With `on`, every thread of this process runs SCHED_FIFO (priority 1) inside the block:
    ours, ORT's pool and OpenMP's workers alike, so a loaded machine's other jobs do not
    preempt the timed runs (root only; compiling stays at normal priority)."""

    def __init__(self, on: bool):
        self.on = on

    def _set(self, policy: int) -> None:
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setscheduler(int(tid), policy, os.sched_param(
                    1 if policy == os.SCHED_FIFO else 0))
            except (OSError, ProcessLookupError):
                pass

    def __enter__(self) -> None:
        if self.on:
            self._set(os.SCHED_FIFO)

    def __exit__(self, *exc: object) -> None:
        if self.on:
            self._set(os.SCHED_OTHER)


def measure(path: Path, threads: int, rounds: int, target_extra: str = "",
            fifo: bool = False, phased: bool = False, tuned_dir: str = "") -> dict:
    import tensorforge

    model = path.name.split(".")[0]
    sess = _session(path, threads)
    inp = sess.get_inputs()[0]
    x = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    ref = sess.run(None, x)[0]
    target = f"llvm -num-threads={threads} {target_extra}"
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cm = tensorforge.compile(str(path), target)
        compile_s = time.perf_counter() - t0
        tuned = None
        if tuned_dir:
            db = Path(tuned_dir) / f"{model}.db"
            if not db.exists():
                raise SystemExit(f"--tuned: no {db}; run benchmarks/tune_families.py first")
            tuned = tensorforge.compile(str(path), target, tuning_db=str(db))

    def rel_err(m) -> float:
        return float(np.max(np.abs(np.asarray(m.run(x)[0]) - ref)) /
                     max(np.max(np.abs(ref)), 1e-30))

    runs = {"ours": lambda: cm.run(x)}
    if tuned is not None:
        runs["tuned"] = lambda: tuned.run(x)
    # ORT last: phased, a phase right after ORT's shared the CPUs with its pool, which spins
    # on after its last run (2 threads, 2026-12-03: DeepLabV3 tuned 12.3 ms after ORT's
    # phase, 9.2-9.6 alone, and as fast as untuned in alternation)
    runs["ort"] = lambda: sess.run(None, x)
    for _ in range(2):  # warm them all (and start their thread pools)
        for fn in runs.values():
            fn()
    load0 = os.getloadavg()[0]
    with _Fifo(fifo):
        times = _rounds(runs, rounds, phased)
        kernel_ms, node_ms = kernel_sums(cm, path, threads, x, max(5, rounds // 2))
        tuned_kernel_ms = (our_kernel_ms(tuned, x, max(5, rounds // 2))
                           if tuned is not None else None)
    generic = sum(1 for k in cm.desc["kernels"] if not k["schedule"].startswith("strategy")
                  and any(s in k["master"] for s in ("conv", "dense", "pool")))
    row = {"model": model, "threads": threads,
           "ours_ms": statistics.median(times["ours"]) * 1e3,
           "ort_ms": statistics.median(times["ort"]) * 1e3,
           "ratio": _ratio(times["ours"], times["ort"], phased), "max_rel_err": rel_err(cm),
           "compile_s": compile_s, "kernels": len(cm.desc["kernels"]),
           "generic_heavy": generic, "load": (round(load0, 2), round(os.getloadavg()[0], 2)),
           "rounds": rounds, "ours_kernels_ms": kernel_ms, "ort_nodes_ms": node_ms,
           "kernel_ratio": kernel_ms / node_ms}
    if tuned is not None:
        info = tuned.desc["tuning"]
        row.update({"tuned_ms": statistics.median(times["tuned"]) * 1e3,
                    "tuned_ratio": _ratio(times["tuned"], times["ort"], phased),
                    "tuned_kernels_ms": tuned_kernel_ms,
                    "tuned_kernel_ratio": tuned_kernel_ms / node_ms,
                    "tuned_max_rel_err": rel_err(tuned),
                    "tuned_applied": len(info["applied"]), "tuned_missing": len(info["missing"])})
    return row


def _rounds(runs: dict, rounds: int, phased: bool = False) -> dict[str, list[float]]:
    """Seconds per run of each callable in `runs`: `rounds` rounds of one run each, in an
    order that rotates every round; `phased`: all runs of one, then the next (two spinning
    thread pools never overlap)."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)

    def once(name: str) -> None:
        t = time.perf_counter()
        runs[name]()
        times[name].append(time.perf_counter() - t)

    if phased:
        for name in names:
            for _ in range(2):  # unrecorded: the phase's caches, and the last pool's spin
                runs[name]()
            for _ in range(rounds):
                once(name)
        return times
    n = len(names)
    for r in range(rounds):  # each first, middle and last alike; predecessors vary too
        order = names[r % n:] + names[:r % n]
        for name in (order[::-1] if (r // n) % 2 else order):
            once(name)
    return times


def _ratio(a: list[float], b: list[float], phased: bool) -> float:
    """Median of the per-round ratios a / b (phased: of the sorted samples)."""
    pairs = zip(sorted(a), sorted(b)) if phased else zip(a, b)
    return statistics.median(x / y for x, y in pairs)


def our_kernel_ms(cm, x: dict, repeat: int) -> float:
    """The sum of a compiled model's per-kernel medians over `repeat` runs, in ms."""
    return sum(k["median"] for k in cm.profile(x, repeat=repeat)) * 1e3


def kernel_sums(cm, path: Path, threads: int, x: dict, repeat: int) -> tuple[float, float]:
    """(sum of our per-kernel medians, sum of ORT's per-node medians) in ms over `repeat`
    runs each: what the kernels cost without the time the OS took between them (on a loaded
    machine a run's wall time is mostly that)."""
    import tempfile

    import onnxruntime as ort

    ours = our_kernel_ms(cm, x, repeat)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    sess.run(None, x)  # warm-up, dropped below
    for _ in range(repeat):
        sess.run(None, x)
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    per: dict[str, list[float]] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            per.setdefault(e["name"], []).append(e["dur"] / 1e3)
    theirs = sum(statistics.median(v[-repeat:]) for v in per.values())
    return ours, theirs


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def markdown(rows: list[dict]) -> str:
    lines = ["| model | threads | ours ms | ORT ms | ours / ORT | sum of kernels: ours / ORT "
             "ms | ratio | max rel err | kernels | load (1 min) before-after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['threads']} | {r['ours_ms']:.2f} | {r['ort_ms']:.2f} "
                     f"| {r['ratio']:.2f} | {r['ours_kernels_ms']:.2f} / "
                     f"{r['ort_nodes_ms']:.2f} | {r['kernel_ratio']:.2f} | "
                     f"{r['max_rel_err']:.1e} | {r['kernels']} | "
                     f"{r['load'][0]}-{r['load'][1]} |")
    for th in sorted({r["threads"] for r in rows}):
        geo = [_geomean([r[k] for r in rows if r["threads"] == th])
               for k in ("ratio", "kernel_ratio")]
        lines.append(f"| **geomean** | {th} | | | **{geo[0]:.2f}** | | **{geo[1]:.2f}** | | "
                     "| |")
    tuned = [r for r in rows if "tuned_ratio" in r]
    if tuned:
        lines += ["", "| model | threads | untuned ms | tuned ms | ORT ms | untuned / ORT | "
                  "tuned / ORT | tuned kernels ms (/ ORT) | tasks tuned (no record) | "
                  "max rel err |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in tuned:
            lines.append(f"| {r['model']} | {r['threads']} | {r['ours_ms']:.2f} | "
                         f"{r['tuned_ms']:.2f} | {r['ort_ms']:.2f} | {r['ratio']:.2f} | "
                         f"{r['tuned_ratio']:.2f} | {r['tuned_kernels_ms']:.2f} "
                         f"({r['tuned_kernel_ratio']:.2f}) | {r['tuned_applied']} "
                         f"({r['tuned_missing']}) | {r['tuned_max_rel_err']:.1e} |")
        for th in sorted({r["threads"] for r in tuned}):
            sel = [r for r in tuned if r["threads"] == th]
            lines.append(f"| **geomean** | {th} | | | | **{_geomean([r['ratio'] for r in sel]):.2f}"
                         f"** | **{_geomean([r['tuned_ratio'] for r in sel]):.2f}** | "
                         f"({_geomean([r['tuned_kernel_ratio'] for r in sel]):.2f}) | | |")
    by = {(r["model"], r["threads"]): r for r in rows}
    scaling = [(m, by[(m, 1)], by[(m, 2)]) for m, t in by if t == 2 and (m, 1) in by]
    if scaling:
        lines += ["", "| model | ours 1t / 2t (speed-up) | ORT 1t / 2t |", "|---|---|---|"]
        for m, a, b in scaling:
            lines.append(f"| {m} | {a['ours_ms'] / b['ours_ms']:.2f} | "
                         f"{a['ort_ms'] / b['ort_ms']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--target-extra", default="", help="more target options, e.g. -winograd=off")
    ap.add_argument("--fifo", action="store_true",
                    help="time under SCHED_FIFO (root; see _Fifo): a loaded machine's figures")
    ap.add_argument("--phased", action="store_true",
                    help="all our runs, then all of ORT's (ratio of the sorted samples): under "
                    "--fifo at 2 threads, interleaving pits our workers against ORT's spinning "
                    "pool")
    ap.add_argument("--tuned", default="", metavar="DIR",
                    help="also time each model compiled with DIR/<model>.db's records")
    ap.add_argument("--json", default="")
    ap.add_argument("--md", default="")
    args = ap.parse_args(argv)
    names = args.models.split(",") if args.models else ORDER
    paths = [CACHE / f"{n}.onnx" for n in names if (CACHE / f"{n}.onnx").exists()]
    if not paths:
        print(f"no exported models in {CACHE}: run benchmarks/export_torchvision.py first")
        return 1
    rows = []
    for path in paths:
        for th in (int(t) for t in args.threads.split(",")):
            row = measure(path, th, args.rounds, args.target_extra, args.fifo, args.phased,
                          args.tuned)
            rows.append(row)
            print_row(row)
    write_tables(rows, markdown(rows), args.md, args.json)
    return 0


def print_row(row: dict) -> None:
    """One measured row as a JSON line, floats to 4 significant digits."""
    print(json.dumps({k: (float(f"{v:.4g}") if isinstance(v, float) else v)
                      for k, v in row.items()}), flush=True)


def write_tables(rows: list[dict], md: str, md_path: str | None, json_path: str | None) -> None:
    """Print the markdown table; write it and the raw rows where asked."""
    print(md)
    if md_path:
        Path(md_path).write_text(md + "\n")
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
