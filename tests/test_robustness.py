"""Whole-model robustness: deep and wide graphs compile and match ONNX Runtime; impossible
shapes are refused before anything is allocated. Each case failed before: a 5,000-node
chain was a RecursionError, a 1e12-element input a MemoryError, a concat of 1,100 tensors a
RecursionError (and then a ctypes ArgumentError), 14 chained softplus a two-minute compile."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tensorforge
from tensorforge.errors import TensorforgeError

F = TensorProto.FLOAT


def _model(nodes, inputs, out: str) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, [helper.make_value_info(out, onnx.TypeProto())])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _chain(ops: list[str], n: int, shape: list[int]) -> onnx.ModelProto:
    nodes, prev = [], "x"
    for k in range(n):
        nodes.append(helper.make_node(ops[k % len(ops)], [prev], [f"t{k}"], name=f"n{k}"))
        prev = f"t{k}"
    return _model(nodes, [helper.make_tensor_value_info("x", F, shape)], prev)


def _check(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    from tensorforge_onnx.testing import ort_run

    got = tensorforge.compile(m, "llvm -num-threads=1").run(feeds)
    for a, b in zip(got, ort_run(m, feeds)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_a_10000_node_chain_imports_and_compiles(llvm_target, onnx_frontend):
    m = _chain(["Relu", "Neg", "Abs", "Sigmoid"], 10_000, [2, 8])
    _check(m, {"x": np.linspace(-3, 3, 16, dtype="float32").reshape(2, 8)})


def test_chained_ops_that_read_their_input_twice_compile_quickly(llvm_target, onnx_frontend):
    m = _chain(["Softplus", "HardSwish"], 40, [8])
    _check(m, {"x": np.linspace(-3, 3, 8, dtype="float32")})


@pytest.mark.slow
def test_a_concat_of_1100_tensors(llvm_target, onnx_frontend):
    n = 1100  # more than ctypes' 1024 arguments, far deeper than the recursion limit
    nodes = [helper.make_node("Concat", [f"x{k}" for k in range(n)], ["y"], axis=0)]
    m = _model(nodes, [helper.make_tensor_value_info(f"x{k}", F, [1, 4]) for k in range(n)],
               "y")
    _check(m, {f"x{k}": np.full((1, 4), k, "float32") for k in range(n)})


def test_a_shape_of_1e12_elements_is_refused_before_allocation(llvm_target, onnx_frontend):
    m = _chain(["Relu"], 1, [10**6, 10**6])
    with pytest.raises(TensorforgeError, match=r"graph input 'x' of shape \[1000000, 1000000\] "
                                               r"needs 3.6 TiB"):
        tensorforge.compile(m, "llvm")


def test_the_memory_limit_is_configurable(llvm_target, onnx_frontend, monkeypatch):
    m = _chain(["Relu"], 2, [1024, 1024])  # 4 MiB per tensor
    monkeypatch.setenv("TENSORFORGE_MEMORY_LIMIT", "2M")
    with pytest.raises(TensorforgeError, match=r"needs 4.0 MiB.*limit is 2.0 MiB "
                                               r"\(TENSORFORGE_MEMORY_LIMIT"):
        tensorforge.compile(m, "llvm")
    monkeypatch.setenv("TENSORFORGE_MEMORY_LIMIT", "64M")
    tensorforge.compile(m, "llvm -num-threads=1")


def test_a_folded_huge_constant_is_refused(llvm_target, onnx_frontend):
    """ConstantOfShape with a huge shape was allocated by numpy at import."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [10**6, 10**6])
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["c"]),
             helper.make_node("Add", ["x", "c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1])],
                          [helper.make_value_info("y", onnx.TypeProto())], [shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with pytest.raises(TensorforgeError, match=r"needs 3.6 TiB"):
        tensorforge.compile(m, "llvm")
