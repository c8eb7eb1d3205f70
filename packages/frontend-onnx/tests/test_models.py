"""The built-in models: valid ONNX, deterministic, runnable in onnxruntime, quick to build."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from tensorforge_onnx import models
from tensorforge_onnx.models.__main__ import main

ort = pytest.importorskip("onnxruntime")


# the transformers at a small width here (the full ones take seconds to build)
SMALL = {"layers": 2, "d": 64, "heads": 4, "hidden": 256}
SMALL_CONFIG = {"bert": {**SMALL, "vocab": 1000}, "gpt2": {**SMALL, "vocab": 1000},
                "vit_b_16": {**SMALL, "image": 64}}


@pytest.mark.parametrize("name", list(models.MODELS))
def test_model_checks_and_runs(name: str) -> None:
    cfg = SMALL_CONFIG.get(name, {})
    m = models.build(name, **cfg)  # (no timing assert: a loaded machine took 2.2 s for one)
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == models.MODELS[name].opset
    assert all(t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL)
               for t in m.graph.initializer if t.data_type != onnx.TensorProto.INT64)
    assert {i.name: tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
            for i in m.graph.input} == {k: s for k, (s, _) in models.input_specs(
                name, **cfg).items()}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, models.example_inputs(name, **cfg))
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


def test_transformer_architectures() -> None:
    """The full depth (12 layers) at a small width: the op counts of each architecture."""
    small = {"d": 64, "heads": 4, "hidden": 128}

    def ops(name: str, **cfg: int) -> list[str]:
        return [n.op_type for n in models.build(name, **cfg).graph.node]

    bert = ops("bert", **small, vocab=100)
    assert bert.count("MatMul") == 12 * 8 and bert.count("Softmax") == 12
    assert bert.count("LayerNormalization") == 25 and bert.count("Erf") == 12
    gpt = ops("gpt2", **small, vocab=100)
    assert gpt.count("MatMul") == 12 * 6 + 1 and gpt.count("Split") == 12
    assert gpt.count("Where") == 12 and gpt.count("Tanh") == 12
    assert gpt.count("LayerNormalization") == 25
    vit = ops("vit_b_16", **small)
    assert vit.count("Conv") == 1 and vit.count("Softmax") == 12 and vit.count("Gemm") == 1
    assert models.input_specs("vit_b_16")["input"] == ((1, 3, 224, 224), "float32")
    assert models.input_specs("bert", seq=512)["attention_mask"] == ((1, 512), "int64")
    assert dict(models.MODELS["gpt2"].config)["vocab"] == 50257


def test_transformer_options() -> None:
    x = models.example_inputs("bert", seq=32, vocab=100)
    assert x["input_ids"].shape == (1, 32) and x["input_ids"].max() < 100
    assert x["attention_mask"].sum() == 28 and x["token_type_ids"].sum() == 16
    with pytest.raises(TypeError, match="no option image"):
        models.build("bert", image=3)
    with pytest.raises(TypeError, match="options: none"):
        models.build("dqn", layers=2)
    with pytest.raises(ValueError, match="longer than 512"):
        models.build("bert", seq=600, d=8, heads=2, hidden=8, vocab=10, layers=1)


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
