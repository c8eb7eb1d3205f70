"""Bounded dynamic sizes as static specializations (`compiler.dynamic`,
``dynamic="specialize"``; the one-compile form: tests/test_symbolic_shapes.py): a BERT-like
encoder whose ONNX inputs have a symbolic sequence dimension, compiled with
``input_shapes={...: (1, "seq<=24")}``, runs any length within the bounds and matches ONNX
Runtime (rtol 1e-4, atol 1e-5 x max |output|) on the same dynamic model; sizes outside the
bounds and inconsistent inputs are clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from tensorforge.compiler.dynamic import DimBound, parse_dim, split_input_shapes
from tensorforge.errors import TensorforgeError

ort = pytest.importorskip("onnxruntime")

SMALL = {"layers": 1, "d": 32, "heads": 2, "hidden": 64, "vocab": 50}
NAMES = ("input_ids", "token_type_ids", "attention_mask")


def test_parse_dim() -> None:
    assert parse_dim("seq<=512", "x") == DimBound("seq", 1, 512)
    assert parse_dim(" 16 <= seq <= 512", "x") == DimBound("seq", 16, 512)
    for bad in ("seq", "seq<512", "0<=seq<=4", "8<=seq<=4", "<=4"):
        with pytest.raises(TensorforgeError, match="dynamic dimension"):
            parse_dim(bad, "input_shapes['x'][1]")
    template, dims = split_input_shapes({"a": (1, "s<=8"), "b": ("s<=8", 3)})
    assert dims == {"s": DimBound("s", 1, 8)} and template["b"] == (DimBound("s", 1, 8), 3)
    assert split_input_shapes({"a": (1, 8)}) == ({}, {})
    with pytest.raises(TensorforgeError, match="two bounds"):
        split_input_shapes({"a": (1, "s<=8"), "b": (1, "s<=9")})


@pytest.fixture(scope="module")
def dynamic_bert(tmp_path_factory):
    from tensorforge_onnx import models

    path = tmp_path_factory.mktemp("dyn") / "bert_dynamic.onnx"
    models.save("bert", path, dynamic=1, **SMALL)
    return path


def _inputs(seq: int) -> dict[str, np.ndarray]:
    from tensorforge_onnx import models

    return models.example_inputs("bert", seq=seq, **SMALL)


@pytest.mark.slow
def test_one_model_runs_every_length_within_bounds(dynamic_bert, llvm_target, plugins) -> None:
    import tensorforge
    from tensorforge.compiler.dynamic import DynamicModel
    from tensorforge.runtime.graph_executor import InputError

    plugins.register("tensorforge_onnx.plugin")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(dynamic_bert), so, providers=["CPUExecutionProvider"])
    model = tensorforge.compile(str(dynamic_bert), llvm_target,
                                input_shapes={k: (1, "seq<=24") for k in NAMES},
                                dynamic="specialize")
    assert isinstance(model, DynamicModel)
    assert model.compiled_sizes == [{"seq": 24}]  # the bounds, at compile
    for seq in (24, 5, 17):
        x = _inputs(seq)
        (out,) = model.run(x)
        ref = sess.run(None, x)[0]
        assert out.shape == (1, seq, 32)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())
    assert model.compiled_sizes == [{"seq": 24}, {"seq": 5}, {"seq": 17}]
    assert model.specialize(seq=5) is model.specialize(seq=5)  # cached, not recompiled
    # each length's specialization runs through its own ahead-of-time entry
    assert {model.specialize(seq=s).executor_kind for s in (24, 5, 17)} == {"aot"}
    # the weights are held once: every constant of length 5's that has an equal one at the
    # bounds is that array (the position table differs: sliced to the length)
    big, small = (model.specialize(seq=n).params for n in (24, 5))
    by_bytes = {(a.shape, a.tobytes()): a for a in big.values()}
    shared = [a for a in small.values() if (a.shape, a.tobytes()) in by_bytes]
    assert len(shared) >= 10 and all(np.shares_memory(a, by_bytes[(a.shape, a.tobytes())])
                                     for a in shared)

    with pytest.raises(InputError, match=r"seq = 25 is outside the bounds .*1<=seq<=24"):
        model.run(_inputs(25))
    assert len(model.compiled_sizes) == 3  # refused before any compile
    x = _inputs(8)
    x["attention_mask"] = x["attention_mask"][:, :6]
    with pytest.raises(InputError, match="size 'seq' is 8 in input 'input_ids' but 6"):
        model.run(x)
    with pytest.raises(InputError, match="must have 2 dims"):
        model.run({**_inputs(8), "input_ids": np.zeros((8,), np.int64)})
    with pytest.raises(TensorforgeError, match=r"export one: model.specialize\(seq=...\)"):
        model.export("x.tfpkg")
    model.close()


def test_static_dimension_must_match_and_graph_is_refused(dynamic_bert) -> None:
    from tensorforge.compiler.dynamic import DynamicModel
    from tensorforge.graph import Graph
    from tensorforge.runtime.graph_executor import InputError

    model = DynamicModel.__new__(DynamicModel)  # the input checks alone, no compile
    model.template, model.dims = split_input_shapes({"input_ids": (1, "seq<=8")})
    with pytest.raises(InputError, match="dim 0 must be 1, got 2"):
        model.sizes_of({"input_ids": np.zeros((2, 4), np.int64)})
    with pytest.raises(InputError, match="by name"):
        model.sizes_of([np.zeros((1, 4), np.int64)])
    with pytest.raises(TensorforgeError, match="model file or an ONNX"):
        DynamicModel(Graph(), "llvm", *split_input_shapes({"x": ("n<=4",)}))
