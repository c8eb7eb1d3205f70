"""Zero-copy concat (`graph/passes/concat_views.py`): producers write their slices of the
concat's buffer, no concat kernel runs, results equal ONNX Runtime's."""

from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
helper = pytest.importorskip("onnx.helper")


def _model(nodes, consts, c=8, hw=6):
    from onnx import TensorProto, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in consts.items()]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                             opset_imports=[helper.make_opsetid("", 17)])


def _w(o, c, seed):
    return np.random.default_rng(seed).standard_normal((o, c, 1, 1)) / np.sqrt(c)


def _run(model, target, opt_level: int = 3):
    """Compile `model`, check it against ONNX Runtime, return the compiled model."""
    import tensorforge

    x = np.random.default_rng(0).standard_normal((1, 8, 6, 6)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    cm = tensorforge.compile(model, target, opt_level=opt_level)
    np.testing.assert_allclose(cm.run({"x": x})[0], ref, rtol=1e-4, atol=1e-5)
    return cm


def _dense_block(n_layers: int):
    """DenseNet's pattern: layer k reads cat(x0, f1..fk-1); the block ends in cat(x0..fn)."""
    nodes = [helper.make_node("Conv", ["x", "w0"], ["f0"])]
    consts = {"w0": _w(16, 8, 0)}
    feats = ["f0"]
    for k in range(1, n_layers + 1):
        cat = f"cat{k}"
        nodes += [helper.make_node("Concat", list(feats), [cat], axis=1),
                  helper.make_node("Relu", [cat], [f"r{k}"]),
                  helper.make_node("Conv", [f"r{k}", f"w{k}"], [f"f{k}"])]
        consts[f"w{k}"] = _w(16, 16 * k, k)
        feats.append(f"f{k}")
    nodes += [helper.make_node("Concat", feats, ["out"], axis=1),
              helper.make_node("Relu", ["out"], ["y"])]
    return _model(nodes, consts)


@pytest.mark.parametrize("threads", [1, 2])
def test_dense_block_copies_nothing(threads: int, llvm_target, plugins) -> None:
    plugins.register("tensorforge_onnx.plugin")
    cm = _run(_dense_block(4), f"{llvm_target} -num-threads={threads}")
    mem = cm.desc["memory"]
    assert mem["concat_copy_bytes"] == 0 and mem["concat_view_bytes"] > 0
    assert not any("concat" in k["ops"] for k in cm.desc["kernels"])
    offsets = [v.get("offset", 0) for v in cm.desc["values"]]
    assert max(offsets) > 0


def test_dense_block_without_layout_pass(llvm_target, plugins) -> None:
    """NCHW concats (opt-level 1: no blocked layout) are views too."""
    plugins.register("tensorforge_onnx.plugin")
    cm = _run(_dense_block(3), llvm_target, opt_level=1)
    assert cm.desc["memory"]["concat_copy_bytes"] == 0


def test_a_value_in_two_orders_is_copied_once(llvm_target, plugins) -> None:
    """cat(a, b) and cat(b, a): a value has one address, so one concat stays a kernel."""
    plugins.register("tensorforge_onnx.plugin")
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"]),
             helper.make_node("Conv", ["x", "wb"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["ab"], axis=1),
             helper.make_node("Concat", ["b", "a"], ["ba"], axis=1),
             helper.make_node("Add", ["ab", "ba"], ["y"])]
    cm = _run(_model(nodes, {"wa": _w(16, 8, 1), "wb": _w(16, 8, 2)}), str(llvm_target))
    mem = cm.desc["memory"]
    assert mem["concat_copy_bytes"] > 0 and mem["concat_view_bytes"] > 0


def test_graph_input_and_output_concats_are_copies(llvm_target, plugins) -> None:
    """A part that is a graph input, and a concat that is a graph output, keep their own
    memory: those concats run as kernels (NCHW, opt-level 1, so the input is read as is)."""
    plugins.register("tensorforge_onnx.plugin")
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"]),
             helper.make_node("Concat", ["x", "a"], ["xa"], axis=1),
             helper.make_node("Conv", ["xa", "wb"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    cm = _run(_model(nodes, {"wa": _w(8, 8, 1), "wb": _w(8, 16, 2)}), llvm_target, opt_level=1)
    assert cm.desc["memory"]["concat_view_bytes"] == 0
    assert sum("concat" in k["ops"] for k in cm.desc["kernels"]) == 2


def test_package_carries_the_views_and_refuses_a_bad_offset(llvm_target, plugins,
                                                            tmp_path) -> None:
    """Offsets travel in the package's graph description; `load` runs the views, and a
    description whose offset runs past its storage is refused before anything is bound."""
    import zipfile

    import tensorforge
    from tensorforge.errors import TensorforgeError

    plugins.register("tensorforge_onnx.plugin")
    model = _dense_block(3)
    x = np.random.default_rng(0).standard_normal((1, 8, 6, 6)).astype(np.float32)
    cm = tensorforge.compile(model, llvm_target)
    path = cm.export(tmp_path / "m.tfpkg")
    loaded = tensorforge.load(path)
    np.testing.assert_allclose(loaded.run({"x": x})[0], cm.run({"x": x})[0], rtol=0, atol=0)
    desc = dict(cm.desc)
    vals = [dict(v) for v in desc["values"]]
    k = next(i for i, v in enumerate(vals) if v.get("offset"))
    vals[k]["offset"] = max(desc["storages"]) * 2
    from tensorforge.runtime.validate import check_description

    with pytest.raises(TensorforgeError, match="offset"):
        check_description({**desc, "values": vals}, dict(cm.params))
    assert zipfile.is_zipfile(path)  # a real package file
