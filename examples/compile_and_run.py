"""The main job: build a model, compile it for this CPU, run it, check it against ONNX Runtime,
and time both.

    python examples/compile_and_run.py                     # ResNet-18
    python examples/compile_and_run.py --model dqn         # any of --list
    python examples/compile_and_run.py --model paper --markdown docs/models.md

The model is built by `tensorforge_onnx.models` (the paper's architectures, seeded random
weights; nothing is downloaded), written to a temporary .onnx file, compiled with
`tensorforge.compile(path, target="llvm")` and run on a fixed-seed input. The output must match
ONNX Runtime (CPU, one thread) within rtol 1e-4, atol 1e-5. Latencies are medians at one
thread (interleaved: ours, then ORT's, alternately) and at the default threads (phased: all of
ours, then all of ORT's, each after its own warm-up; see `interleaved`)."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort

import tensorforge
from tensorforge_onnx import models

RTOL, ATOL = 1e-4, 1e-5


@dataclass
class Result:
    """One model's figures; latencies in milliseconds keyed by thread setting."""

    model: str
    compile_s: float
    max_abs: float
    max_rel: float
    ok: bool
    ours_ms: dict[str, float] = field(default_factory=dict)
    ort_ms: dict[str, float] = field(default_factory=dict)


def ort_session(path: str, threads: int) -> ort.InferenceSession:
    """ONNX Runtime on the CPU; `threads` 0 means its default (the physical cores)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def errors(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float, bool]:
    """Max abs error; max relative error where |ref| > atol/rtol (elsewhere the abs bound
    decides); whether `np.allclose(ours, ref, rtol, atol)` holds."""
    diff = np.abs(ours.astype(np.float64) - ref)
    big = np.abs(ref) > ATOL / RTOL
    rel = float((diff[big] / np.abs(ref[big])).max()) if big.any() else 0.0
    return float(diff.max()), rel, bool(np.allclose(ours, ref, rtol=RTOL, atol=ATOL))


def interleaved(fns: list[Callable[[], object]], repeat: int, warmup: int = 2,
                phased: bool = False) -> list[float]:
    """Median seconds of each function, timed alternately `repeat` times after a warm-up;
    `phased`: all runs of one (after `warmup` of its own), then the next. With several
    threads, alternation times each engine against the other's idle pool: ORT's workers spin
    on after a run and take the core ours need (ResNet-18 at 2 threads on a Zen 4: ours
    46.7 ms alternated, 11.7 ms phased; ORT 18.9 and 17.6)."""
    times: list[list[float]] = [[] for _ in fns]
    if phased:
        for f, t in zip(fns, times):
            for _ in range(warmup):
                f()
            for _ in range(repeat):
                t0 = time.perf_counter()
                f()
                t.append(time.perf_counter() - t0)
        return [statistics.median(t) for t in times]
    for _ in range(warmup):
        for f in fns:
            f()
    for _ in range(repeat):
        for f, t in zip(fns, times):
            t0 = time.perf_counter()
            f()
            t.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def compile_model(path: str, target: str) -> tuple[object, float]:
    t0 = time.perf_counter()
    compiled = tensorforge.compile(path, target=target)
    return compiled, time.perf_counter() - t0


def run_one(name: str, workdir: str, repeat: int, threads: list[int], seed: int = 0,
            log: Callable[[str], None] = print) -> Result:
    """Build, compile, check and time the model `name`; `threads` 0 is the default count."""
    path = str(models.save(name, Path(workdir) / f"{name}.onnx", seed=seed))
    inputs = models.example_inputs(name, seed)
    ref = ort_session(path, 1).run(None, inputs)[0]
    res: Result | None = None
    for th in threads:
        target = "llvm" if th == 0 else f"llvm -num-threads={th}"
        compiled, secs = compile_model(path, target)
        log(f"  compiled for {target!r} in {secs:.1f} s")
        if res is None:
            out = np.asarray(compiled.run(inputs)[0])
            res = Result(name, secs, *errors(out, ref))
            log(f"  output {list(out.shape)}: max abs err {res.max_abs:.2e}, max rel err "
                f"{res.max_rel:.2e} -> {'OK' if res.ok else 'MISMATCH'} "
                f"(rtol {RTOL:g}, atol {ATOL:g})")
        sess = ort_session(path, th)
        many = (th or os.cpu_count() or 1) > 1  # several threads: ours, then ORT's
        ours, theirs = interleaved([lambda c=compiled: c.run(inputs),
                                    lambda s=sess: s.run(None, inputs)], repeat, phased=many)
        key = str(th) if th else f"default ({os.cpu_count()})"
        res.ours_ms[key], res.ort_ms[key] = ours * 1e3, theirs * 1e3
        log(f"  {key:>12} thread(s): tensorforge {ours * 1e3:8.2f} ms   "
            f"onnxruntime {theirs * 1e3:8.2f} ms   (medians of {repeat})")
    assert res is not None
    return res


def machine() -> list[str]:
    """CPU, the vector features our llvm target uses, threads, versions."""
    from tensorforge.target import Target

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    opts = Target.parse("llvm").options
    vec = sorted(f[1:] for f in str(opts.get("mattr", "")).split(",")
                 if f.startswith("+") and f[1:].startswith(("avx", "fma", "sse4", "neon", "sve")))
    return [f"CPU: {cpu} ({platform.machine()}), LLVM cpu `{opts.get('mcpu')}`",
            f"Vector features used: {', '.join(vec) or 'none'}",
            f"Logical CPUs: {os.cpu_count()}; our default threads (`num-threads`): "
            f"{opts.get('num-threads')}; ORT default intra-op threads: physical cores",
            f"Python {platform.python_version()}, numpy {np.__version__}, onnxruntime "
            f"{ort.__version__}, tensorforge {tensorforge.__version__}",
            f"Load average when written: {', '.join(f'{x:.1f}' for x in os.getloadavg())}"]


def table(results: list[Result]) -> str:
    """The results as a markdown table."""
    keys = list(results[0].ours_ms)
    head = ["model", "compile (s)"] + [f"ours / ORT, {k} thr (ms)" for k in keys] + [
        "max abs err", "max rel err", f"allclose (rtol {RTOL:g}, atol {ATOL:g})"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        lat = [f"{r.ours_ms[k]:.2f} / {r.ort_ms[k]:.2f}" for k in keys]
        rows.append("| " + " | ".join([r.model, f"{r.compile_s:.1f}", *lat, f"{r.max_abs:.1e}",
                                       f"{r.max_rel:.1e}", "yes" if r.ok else "**no**"]) + " |")
    return "\n".join(rows) + "\n"


def markdown(results: list[Result], repeat: int) -> str:
    """Machine description, method and table."""
    info = "\n".join(f"- {line}" for line in machine())
    return (f"{info}\n- Latency: medians of {repeat} runs of `CompiledModel.run` and "
            f"`InferenceSession.run`, interleaved at 1 thread (after two warm-up pairs), phased "
            f"(ours, then ORT's, two warm-up runs each) at more; compile: the first build "
            f"(`llvm -num-threads=1`), wall clock\n\n{table(results)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet18",
                   help="a model of --list, 'paper' (the five of the paper) or 'all'")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per setting (default 20)")
    p.add_argument("--threads", default="1,0",
                   help="thread counts to time, 0 = default (default '1,0')")
    p.add_argument("--markdown", help="also write the results table to this file")
    p.add_argument("--list", action="store_true", help="list the models")
    args = p.parse_args(argv)
    if args.list:
        for s in models.MODELS.values():
            print(f"{s.name:16} {s.description}")
        return 0
    names = {"paper": list(models.PAPER_MODELS), "all": list(models.MODELS)}.get(
        args.model, [args.model])
    threads = [int(t) for t in args.threads.split(",")]
    print("\n".join(machine()))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print(f"{name}: {models.MODELS[name].description}")
            results.append(run_one(name, tmp, args.repeat, threads))
    print("\n" + table(results))
    if args.markdown:
        Path(args.markdown).write_text(markdown(results, args.repeat))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
