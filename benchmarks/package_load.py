"""Package size and load time per model (issue 16): `python benchmarks/package_load.py
[MODELS] [REPEAT]`.

For each model of the zoo: the ONNX file's size, the `.tfpkg`'s size and their ratio, and the
median / min of REPEAT `tensorforge.load` calls in this process (after one warm-up load, so the
file is in the page cache); then one `run` checks the loaded model against the compiled one.
Uses only `compile`, `export` and `load`, so it measures any version of the package format
(run it with PYTHONPATH pointing at another checkout to compare)."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

import tensorforge
from tensorforge_onnx import models


def main(argv: list[str]) -> None:
    names = argv[1].split(",") if len(argv) > 1 else ["resnet18", "mobilenet_v2", "lstm_lm",
                                                       "dqn", "dcgan", "squeezenet1_1"]
    repeat = int(argv[2]) if len(argv) > 2 else 7
    print("| model | ONNX | package | ratio | load median | load min |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            onnx_path = str(models.save(name, os.path.join(d, f"{name}.onnx")))
            model = tensorforge.compile(onnx_path, target="llvm -num-threads=1")
            pkg = model.export(os.path.join(d, f"{name}.tfpkg"))
            tensorforge.load(pkg)  # warm the page cache
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                loaded = tensorforge.load(pkg)
                times.append(time.perf_counter() - t0)
            x = models.example_inputs(name)
            np.testing.assert_array_equal(loaded.run(x)[0], model.run(x)[0])
            a, b = os.path.getsize(onnx_path), os.path.getsize(pkg)
            print(f"| {name} | {a / 1e6:.1f} MB | {b / 1e6:.1f} MB | {b / a:.2f}x | "
                  f"{statistics.median(times) * 1e3:.0f} ms | {min(times) * 1e3:.0f} ms |",
                  flush=True)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main(sys.argv)
