"""The models of the paper's evaluation, end to end, against ONNX Runtime.

The five of the paper (ResNet-18, MobileNetV2, the LSTM language model, DQN, the DCGAN
generator), plus the LSTM model at opset 13 (LSTM-7) and SqueezeNet 1.1. Two checks per model,
both against onnxruntime (CPU, one intra-op thread) within the issue's
tolerance, rtol 1e-4 and atol 1e-5, applied as is (`np.testing.assert_allclose`; the outputs
are of order one by construction of the weights, see `tensorforge_onnx.models`, so no
normalization is needed):

* the importer: `tensorforge_onnx.frontend.load` + `tensorforge.graph.run_reference` (the numpy
  oracle, float64 accumulation), independent of code generation;
* the compiler: `tensorforge.compile(path, target="llvm")` and `CompiledModel.run`.

Compile time dominates; it is printed per model (`pytest -s`, or `-rP`)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tensorforge_onnx import models

ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-4, 1e-5
SLOW = {"resnet18", "mobilenet_v2", "lstm_lm", "lstm_lm_opset13", "squeezenet1_1"}  # run in CI


def _params(names: list[str]) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


class _Cache:
    """Model files, inputs and onnxruntime outputs, built once per module."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._ref: dict[str, tuple[str, dict[str, np.ndarray], np.ndarray]] = {}

    def get(self, name: str) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
        if name not in self._ref:
            path = str(models.save(name, self.root / f"{name}.onnx"))
            inputs = models.example_inputs(name)
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            self._ref[name] = (path, inputs, sess.run(None, inputs)[0])
        return self._ref[name]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> _Cache:
    return _Cache(tmp_path_factory.mktemp("models"))


CNN_AND_RNN = [n for n in models.MODELS if n not in models.TRANSFORMERS]  # (test_transformers)


@pytest.mark.parametrize("name", _params(CNN_AND_RNN))
def test_importer_matches_onnxruntime(name: str, cache: _Cache) -> None:
    """Frontend + numpy oracle == onnxruntime (checks the importer, not the code generator)."""
    from tensorforge.graph import run_reference
    from tensorforge_onnx.frontend import load

    path, inputs, ref = cache.get(name)
    graph = load(path)
    (out,) = run_reference(graph, inputs)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", _params(CNN_AND_RNN))
def test_compiled_matches_onnxruntime(name: str, cache: _Cache, llvm_target, plugins) -> None:
    """`tensorforge.compile` for the host CPU == onnxruntime."""
    import tensorforge

    plugins.register("tensorforge_onnx.plugin")
    path, inputs, ref = cache.get(name)
    t0 = time.perf_counter()
    compiled = tensorforge.compile(path, target=llvm_target)
    secs = time.perf_counter() - t0
    print(f"\n{name}: compiled in {secs:.1f} s")
    outs = compiled.run(inputs)
    assert len(outs) == 1
    out = np.asarray(outs[0])
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)
