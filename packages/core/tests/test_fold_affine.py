"""fold_batch_norm on batch norm as Keras 3 exports it: per-channel constant mul / add / sub
right after a conv2d or dense, folded into the weights and bias (numerics vs the reference
interpreter), and left alone wherever folding would change the result."""

from __future__ import annotations

import numpy as np
import pytest

from tensorforge.graph import Graph, run_reference
from tensorforge.graph.passes import copy_graph, fold_batch_norm

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def close(g1: Graph, g2: Graph, **inputs: np.ndarray) -> None:
    for a, b in zip(run_reference(g1, inputs), run_reference(g2, inputs)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def conv_graph(scale_shape: tuple[int, ...], bias: bool = False, ops: tuple[str, ...] = (
        "mul", "add")) -> Graph:
    g = Graph()
    x = g.add_input("x", (1, 3, 6, 6), "float32")
    ins = [x, g.add_const("w", rand(4, 3, 3, 3))] + ([g.add_const("b", rand(4))] if bias else [])
    y = g.add("conv2d", *ins, pads=(1, 1, 1, 1))
    for op in ops:
        y = g.add(op, y, g.add_const(op, rand(*scale_shape)))
    g.outputs = [g.add("relu", y)]
    return g


@pytest.mark.parametrize("shape", [(4, 1, 1), (1, 4, 1, 1), (1,), ()])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_mul_add_folds_into_weights_and_bias(shape: tuple[int, ...], bias: bool) -> None:
    g = conv_graph(shape, bias)
    folded = fold_batch_norm(copy_graph(g))
    assert folded.op_counts() == {"conv2d": 1, "relu": 1}
    conv = folded.nodes[0]
    assert len(conv.inputs) == 3 and conv.inputs[2].shape == (4,)
    close(g, folded, x=rand(1, 3, 6, 6))


def test_sub_and_constant_first_operands_fold() -> None:
    g = Graph()
    x = g.add_input("x", (1, 3, 5, 5), "float32")
    y = g.add("conv2d", x, g.add_const("w", rand(4, 3, 1, 1)))
    y = g.add("mul", g.add_const("s", rand(4, 1, 1)), y)   # constant first
    y = g.add("sub", y, g.add_const("t", rand(4, 1, 1)))
    g.outputs = [g.add("relu", y)]
    folded = fold_batch_norm(copy_graph(g))
    assert folded.op_counts() == {"conv2d": 1, "relu": 1}
    close(g, folded, x=rand(1, 3, 5, 5))


def test_dense_bias_add_folds() -> None:
    g = Graph()
    x = g.add_input("x", (2, 8), "float32")
    y = g.add("dense", x, g.add_const("w", rand(5, 8)))
    y = g.add("add", y, g.add_const("b", rand(5)))
    y = g.add("mul", y, g.add_const("s", rand(1, 5)))
    g.outputs = [g.add("tanh", y)]
    folded = fold_batch_norm(copy_graph(g))
    assert folded.op_counts() == {"dense": 1, "tanh": 1}
    close(g, folded, x=rand(2, 8))


@pytest.mark.parametrize("case", ["spatial", "shared", "output", "const_minus", "broadcasts"])
def test_not_folded_where_it_would_change_the_result(case: str) -> None:
    g = Graph()
    x = g.add_input("x", (1, 3, 5, 5), "float32")
    y = g.add("conv2d", x, g.add_const("w", rand(4, 3, 1, 1)))
    other = None
    if case == "spatial":  # not one value per channel
        z = g.add("mul", y, g.add_const("s", rand(1, 1, 5, 5)))
    elif case == "shared":  # the conv output has a second reader
        z = g.add("add", y, g.add_const("t", rand(4, 1, 1)))
        other = g.add("relu", y)
    elif case == "output":  # the conv output is a graph output
        z = g.add("add", y, g.add_const("t", rand(4, 1, 1)))
        other = y
    elif case == "const_minus":  # t - conv is not conv + shift
        z = g.add("sub", g.add_const("t", rand(4, 1, 1)), y)
    else:  # the constant makes the result bigger than the conv output
        z = g.add("add", y, g.add_const("t", rand(2, 4, 1, 1)))
    g.outputs = [z] + ([other] if other is not None else [])
    folded = fold_batch_norm(copy_graph(g))
    assert folded.op_counts() == g.op_counts()
    close(g, folded, x=rand(1, 3, 5, 5))
