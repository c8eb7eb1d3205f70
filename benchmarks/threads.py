"""1 vs 2 threads, ours and ONNX Runtime's, per model; run it under different libgomp wait
policies (the environment is read when libgomp loads):

    OMP_WAIT_POLICY=passive python benchmarks/threads.py resnet18,lstm_lm 10 [phased]

`phased`: all of ours first, then all of ORT's (no interleaving: ORT's spinning pool and
libgomp's spinning worker then never compete for the cores). Prints the load average."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np


def _med(f: Callable[[], object], n: int) -> float:
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main(argv: list[str]) -> None:
    import onnxruntime as ort

    import tensorforge
    from tensorforge_onnx import models

    names = argv[0].split(",")
    rounds = int(argv[1]) if len(argv) > 1 else 10
    phased = len(argv) > 2 and argv[2] == "phased"
    env = {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "GOMP_"))}
    print(f"# load average {os.getloadavg()}, {env or 'default wait policy'}, "
          f"{'phased' if phased else 'interleaved'}")
    for name in names:
        model = models.build(name)
        x = models.example_inputs(name)
        runs: dict[str, Callable[[], object]] = {}
        for th in (1, 2):
            cm = tensorforge.compile(model, target=f"llvm -num-threads={th}")
            runs[f"ours{th}"] = lambda cm=cm, x=x: cm.run(x)
        for th in (1, 2):
            so = ort.SessionOptions()
            so.intra_op_num_threads, so.inter_op_num_threads = th, 1
            sess = ort.InferenceSession(model.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])
            runs[f"ort{th}"] = lambda s=sess, x=x: s.run(None, x)
        times: dict[str, list[float]] = {k: [] for k in runs}
        order = [["ours1", "ours2"], ["ort1", "ort2"]] if phased else [list(runs)]
        for keys in order:
            for _ in range(rounds):
                for k in keys:
                    times[k].append(_med(runs[k], 3))
        m = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        print(f"{name:13s} ours 1t {m['ours1']:8.2f} 2t {m['ours2']:8.2f} ms (2t/1t "
              f"{m['ours2'] / m['ours1']:.2f}) | ORT 1t {m['ort1']:8.2f} 2t {m['ort2']:8.2f} ms"
              f" | 2t ours/ORT {m['ours2'] / m['ort2']:.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
