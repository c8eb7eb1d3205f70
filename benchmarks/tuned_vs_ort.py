"""End-to-end latency of a model compiled untuned, compiled with a tuning database, and ONNX
Runtime, one thread each, interleaved medians (what docs/tuning.md reports).

    tforge tune resnet18.onnx --target "llvm -num-threads=1" --time-budget 10m --db tuning.db
    python benchmarks/tuned_vs_ort.py resnet18.onnx tuning.db [rounds] [target]

Each round runs 3 of each in turn (untuned, tuned, ORT); the load average is printed before
and after because the machine may be shared."""

from __future__ import annotations

import os
import platform
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models_vs_ort import _times  # noqa: E402


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: list[str]) -> None:
    import onnxruntime as ort

    import tensorforge

    path, db = argv[0], argv[1]
    rounds = int(argv[2]) if len(argv) > 2 else 20
    target = argv[3] if len(argv) > 3 else "llvm -num-threads=1"
    print(f"{_cpu()}, {os.cpu_count()} CPUs, {target!r}, load average {os.getloadavg()}")
    untuned = tensorforge.compile(path, target=target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuned = tensorforge.compile(path, target=target, tuning_db=db)
    tuning = tuned.desc["tuning"]
    print(f"tuned kernels: {len(tuning['applied'])} tasks applied, "
          f"{len(tuning['missing'])} without records {[str(w.message) for w in caught][:1]}")
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    inputs = untuned.random_inputs()
    ref = sess.run(None, inputs)[0]
    for name, m in (("untuned", untuned), ("tuned", tuned)):
        err = float(np.max(np.abs(m.run(inputs)[0] - ref)) / np.max(np.abs(ref)))
        print(f"{name}: max relative error vs ORT {err:.1e}")
    runs = {"untuned": lambda: untuned.run(inputs), "tuned": lambda: tuned.run(inputs),
            "ort": lambda: sess.run(None, inputs)}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for f in runs.values():
        _times(f, 3)  # warm up
    for _ in range(rounds):
        for k, f in runs.items():
            times[k] += _times(f, 3)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    print(f"medians over {rounds} x 3 interleaved runs: untuned {med['untuned']:.2f} ms, "
          f"tuned {med['tuned']:.2f} ms, ORT {med['ort']:.2f} ms; tuned/untuned "
          f"{med['tuned'] / med['untuned']:.3f}, tuned/ORT {med['tuned'] / med['ort']:.3f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main(sys.argv[1:])
