"""`CompiledModel.run` from many threads at once: the paper's models (the
`tensorforge_onnx.models` zoo), compiled and loaded from a package, each called by 8 threads
with different inputs; every output must be bit-identical to the output of the same input run
alone. Before per-call arenas the threads shared the executor's planned buffers (4 threads on
the DQN: 768 of 800 results wrong, no error).

Runs per thread: 200, except ResNet-18 (50: one run costs ~50 ms on one core, and CI machines
have two) -- the races this catches show up within the first few runs. The DQN is compiled for
two OpenMP threads, so concurrent calls also run concurrent OpenMP teams; the others for one.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import tensorforge

models = pytest.importorskip("tensorforge_onnx.models")

THREADS = 8
RUNS = {"resnet18": 50, "mobilenet_v2": 200, "lstm_lm": 200, "dqn": 200, "dcgan": 200,
        "squeezenet1_1": 200}
N_INPUTS = 4  # thread t uses input t % 4: a call reading another call's buffers shows


def _inputs(name: str) -> list[dict[str, np.ndarray]]:
    return [models.example_inputs(name, seed=s) for s in range(N_INPUTS)]


def _hammer(model, inputs, expected, runs: int) -> list[str]:
    """Run `model` from THREADS threads, `runs` times each; the mismatches found."""
    errors: list[str] = []
    barrier = threading.Barrier(THREADS)

    def work(t: int) -> None:
        k = t % len(inputs)
        barrier.wait()
        try:
            for r in range(runs):
                outs = model.run(inputs[k])
                for o, (got, want) in enumerate(zip(outs, expected[k])):
                    if got.dtype != want.dtype or not np.array_equal(got, want):
                        errors.append(f"thread {t} run {r} output {o}")
        except Exception as e:  # reported, not lost in the thread
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_concurrent_runs_are_bit_identical(name: str, tmp_path: Path, llvm_target,
                                           plugins) -> None:
    plugins.register("tensorforge_onnx.plugin")
    path = models.save(name, tmp_path / f"{name}.onnx")
    threads = 2 if name == "dqn" else 1
    compiled = tensorforge.compile(str(path), target=f"llvm -num-threads={threads}")
    inputs = _inputs(name)
    expected = [compiled.run(x) for x in inputs]  # one call at a time
    loaded = tensorforge.load(compiled.export(tmp_path / f"{name}.tfpkg"))
    for k, x in enumerate(inputs):
        for a, b in zip(loaded.run(x), expected[k]):
            np.testing.assert_array_equal(a, b)
    for which, model in (("compiled", compiled), ("loaded", loaded)):
        errors = _hammer(model, inputs, expected, RUNS[name])
        assert not errors, f"{name} ({which}): {len(errors)} wrong: {errors[:5]}"
        assert model.executor.pool.created <= model.max_concurrency
    loaded.close()
