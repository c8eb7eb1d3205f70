"""Per-model latency of `tensorforge.compile` (untuned) vs ONNX Runtime, interleaved medians.

    python benchmarks/models_vs_ort.py resnet18,mobilenet_v2,dqn,dcgan,lstm_lm 1,2 10

Arguments: model names, thread counts, rounds (each round runs 3 of ours, then 3 of ORT's)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np


def _times(f: Callable[[], object], n: int) -> list[float]:
    """Seconds of each of ``n`` calls of ``f`` (the other benchmark scripts import this)."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str]) -> None:
    import onnxruntime as ort

    import tensorforge
    from tensorforge_onnx import models

    names = argv[0].split(",") if argv else list(models.PAPER_MODELS)
    threads = [int(x) for x in argv[1].split(",")] if len(argv) > 1 else [1]
    rounds = int(argv[2]) if len(argv) > 2 else 10
    d = tempfile.mkdtemp()
    for name in names:
        path = str(models.save(name, os.path.join(d, name + ".onnx")))
        inputs = models.example_inputs(name)
        for th in threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads, so.inter_op_num_threads = th, 1
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            ref = sess.run(None, inputs)[0]
            cm = tensorforge.compile(path, target=f"llvm -num-threads={th}")
            err = float(np.max(np.abs(cm.run(inputs)[0] - ref)) / np.max(np.abs(ref)))
            ours: list[float] = []
            theirs: list[float] = []
            for _ in range(rounds):
                ours += _times(lambda cm=cm, x=inputs: cm.run(x), 3)
                theirs += _times(lambda s=sess, x=inputs: s.run(None, x), 3)
            a, b = np.median(ours) * 1e3, np.median(theirs) * 1e3
            print(f"{name:14s} threads={th} tensorforge={a:8.2f} ms ort={b:8.2f} ms "
                  f"ratio={a / b:5.2f} max_rel_err={err:.1e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
