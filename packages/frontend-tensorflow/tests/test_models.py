"""Whole Keras models through the compiler against TensorFlow: a seeded MobileNetV2 and a small
LSTM + GRU model from a Keras object, a .keras file (`tforge compile`), a SavedModel
(`tforge compile --model-format tensorflow`) and a frozen .pb; ResNet50 from a Keras object.
Plus the structure of the imported MobileNetV2: one transpose, batch norm folded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge.cli import main as tforge
from tensorforge.graph.passes import optimize

pytest.importorskip("tensorflow",
                    reason="no TensorFlow here (pip install tensorflow-cpu)")

from tensorforge_tensorflow import load  # noqa: E402
from tensorforge_tensorflow.testing import assert_close, resnet50  # noqa: E402

TARGET = "llvm -num-threads=1"


@pytest.mark.slow
@pytest.mark.parametrize("form", ["object", "keras_cli", "saved_model_cli", "frozen_pb"])
@pytest.mark.parametrize("name", ["mobilenet_v2", "lstm_gru"])
def test_model_matches_tensorflow(name: str, form: str, saved_models: Any, llvm_target: Any,
                                  tf_frontend: Any, tmp_path: Path) -> None:
    case = saved_models(name)
    if form == "object":
        out = tensorforge.compile(case.model, TARGET).run({case.input_name: case.x})
    elif form == "frozen_pb":
        out = tensorforge.compile(str(case.frozen_pb), TARGET).run({"input": case.x})
    else:
        src, extra = ((case.keras_file, []) if form == "keras_cli" else
                      (case.saved_model, ["--model-format", "tensorflow"]))
        pkg = tmp_path / "model.tfpkg"
        assert tforge(["compile", str(src), "--target", TARGET, "-o", str(pkg), *extra]) == 0
        model = tensorforge.load(str(pkg))
        out = model.run({model.input_specs[0]["name"]: case.x})
    assert out[0].shape == case.ref.shape
    assert_close(out[0], case.ref)


@pytest.mark.slow
def test_mobilenet_layout_and_batch_norm_folding(saved_models: Any) -> None:
    case = saved_models("mobilenet_v2")
    g = load(case.model)
    counts = g.op_counts()
    assert counts.get("transpose", 0) <= 2
    # Keras 3 batch norm arrives as per-channel mul/add after each of the 52 convolutions
    assert counts["conv2d"] == 52 and counts["mul"] == 52
    opt = optimize(g)
    after = opt.op_counts()
    assert "mul" not in after and after["add"] == 10  # what is left: the residual adds
    producers = {n.op: 0 for n in opt.nodes}
    for n in opt.nodes:
        if n.op == "clip":  # each ReLU6 reads its convolution directly
            producers[n.inputs[0].producer.op] += 1
    assert producers["conv2d"] == after["clip"] == 35
    assert all(len(n.inputs) == 3 for n in opt.nodes if n.op == "conv2d")


@pytest.mark.slow
def test_resnet50_from_a_keras_object(llvm_target: Any, tf_frontend: Any) -> None:
    model = resnet50()
    x = np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype("float32")
    ref = model(x, training=False).numpy()
    g = load(model)
    assert g.op_counts()["conv2d"] == 53 and g.op_counts().get("transpose", 0) <= 2
    out = tensorforge.compile(g, TARGET).run({model.inputs[0].name: x})
    assert_close(out[0], ref)
