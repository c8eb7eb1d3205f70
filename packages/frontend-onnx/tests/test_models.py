"""The built-in models: valid ONNX, deterministic, runnable in onnxruntime, quick to build."""

from __future__ import annotations

import time

import numpy as np
import onnx
import pytest

from tensorforge_onnx import models
from tensorforge_onnx.models.__main__ import main

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("name", list(models.MODELS))
def test_model_checks_and_runs(name: str) -> None:
    t0 = time.perf_counter()
    m = models.build(name)
    assert time.perf_counter() - t0 < 2.0
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == models.MODELS[name].opset
    assert all(t.data_type == onnx.TensorProto.FLOAT for t in m.graph.initializer
               if t.data_type != onnx.TensorProto.INT64)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, models.example_inputs(name))
    assert np.isfinite(out).all()
    assert 1e-2 < np.abs(out).max() < 100  # activations of order one, not vanishing/exploding


def test_deterministic_and_seeded() -> None:
    a, b = models.build("dqn"), models.build("dqn")
    assert a.SerializeToString() == b.SerializeToString()
    assert models.build("dqn", seed=1).SerializeToString() != a.SerializeToString()
    x1, x2 = models.example_inputs("lstm_lm"), models.example_inputs("lstm_lm")
    assert np.array_equal(x1["tokens"], x2["tokens"]) and x1["tokens"].max() < 10000


def test_architectures() -> None:
    ops = lambda n: [node.op_type for node in models.build(n).graph.node]  # noqa: E731
    r = ops("resnet18")
    assert r.count("Conv") == 20 and r.count("Add") == 8 and r.count("Gemm") == 1
    mb = models.build("mobilenet_v2").graph.node
    assert sum(1 for n in mb if n.op_type == "Conv") == 52
    assert sum(1 for n in mb if n.op_type == "Conv" and
               next(a.i for a in n.attribute if a.name == "group") > 1) == 17
    assert ops("lstm_lm").count("LSTM") == 2
    assert ops("dcgan").count("ConvTranspose") == 5


def test_lstm_opset_variants() -> None:
    a, b = models.build("lstm_lm"), models.build("lstm_lm_opset13")
    assert (a.opset_import[0].version, b.opset_import[0].version) == (17, 13)
    assert [i.name for i in a.graph.initializer] == [i.name for i in b.graph.initializer]


def test_cli(tmp_path, capsys) -> None:
    assert main(["dcgan", "-o", str(tmp_path / "g.onnx")]) == 0
    onnx.checker.check_model(onnx.load(str(tmp_path / "g.onnx")))
    assert main(["--list"]) == 0
    assert "resnet18" in capsys.readouterr().out
    with pytest.raises(KeyError, match="unknown model"):
        models.build("alexnet")
