"""Reshapes out of fusion's way (passes/reshapes.py) and the group merges after the fusion
walk (passes/fuse_merge.py): an ONNX MatMul on 3-d data with its bias, GELU and residual add
becomes one kernel, a shared reshape is read in place by each reader."""

from __future__ import annotations

import numpy as np

from tensorforge.graph import Graph, run_reference
from tensorforge.graph.passes import copy_graph, fuse_ops
from tensorforge.graph.passes.fuse_merge import split_shared_reshapes
from tensorforge.graph.passes.reshapes import fold_reshapes, sink_row_reshapes
from tensorforge.graph.passes.simplify import sink_reshape_past_bias

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def ffn(s: int = 6, d: int = 8, hidden: int = 16) -> tuple[Graph, dict[str, np.ndarray]]:
    """LN -> MatMul(3-d) + bias -> GELU (erf, written out) -> MatMul(3-d) + bias + residual,
    as the ONNX frontend imports it (reshape, dense, reshape around each product)."""
    g = Graph()
    x = g.add_input("x", (1, s, d), "float32")
    ln = g.add("layer_norm", x, g.add_const("ga", 1 + rand(d) * 0.1), g.add_const("be", rand(d)),
               axis=2, epsilon=1e-5)

    def linear(v, din, dout):
        y = g.add("dense", g.add("reshape", v, shape=(s, din)), g.add_const("w", rand(dout, din)))
        return g.add("add", g.add("reshape", y, shape=(1, s, dout)), g.add_const("b", rand(dout)))

    h = linear(ln, d, hidden)
    e = g.add("erf", g.add("div", h, g.add_const("r2", np.float32(np.sqrt(2)))))
    h = g.add("mul", g.add("mul", h, g.add("add", e, g.add_const("one", np.float32(1)))),
              g.add_const("half", np.float32(0.5)))
    out = g.add("add", linear(h, hidden, d), ln)
    g.outputs = [g.add("identity", out)]
    return g, {"x": rand(1, s, d)}


def _same(g1: Graph, g2: Graph, inputs: dict[str, np.ndarray]) -> None:
    for a, b in zip(run_reference(g1, inputs), run_reference(g2, inputs)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _ops(groups) -> list[list[str]]:
    return [[n.op for n in grp.nodes] for grp in groups]


def test_gelu_and_residual_become_epilogues() -> None:
    g, inputs = ffn()
    before = [[n.op for n in grp.nodes] for grp in fuse_ops(copy_graph(g))]
    assert len(before) > 4  # reshape copies, the GELU diamond and the residual apart
    g2 = split_shared_reshapes(sink_row_reshapes(sink_reshape_past_bias(copy_graph(g))))
    _same(g, g2, inputs)
    groups = _ops(fuse_ops(g2))
    # LN; dense + bias + GELU (diamond); dense + bias + residual (reading LN's output
    # through a reshape); the trailing identity hands the output to the reshape back to
    # 3-d, which the executor does without a copy (a graph output that reshapes one value)
    assert groups == [["layer_norm"],
                      ["reshape", "dense", "add", "div", "erf", "add", "mul", "mul"],
                      ["dense", "add", "reshape", "add"], ["reshape"]], groups
    assert "identity" not in g2.op_counts()


def test_row_reshape_rules() -> None:
    g = Graph()
    x = g.add_input("x", (4, 6), "float32")
    y = g.add("reshape", x, shape=(2, 2, 6))
    per_col = g.add("add", y, g.add_const("c", rand(1, 1, 6)))  # over the last axis: moves
    per_row = g.add("add", y, g.add_const("r", rand(2, 1, 1)))  # over a leading axis: stays
    g.outputs = [per_col, per_row]
    g2 = sink_row_reshapes(copy_graph(g))
    _same(g, g2, {"x": rand(4, 6)})
    ops = [(n.op, n.outputs[0].shape) for n in g2.nodes]
    assert ("add", (4, 6)) in ops and ("add", (2, 2, 6)) in ops


def test_fold_reshapes() -> None:
    g = Graph()
    x = g.add_input("x", (4, 6), "float32")
    y = g.add("reshape", g.add("reshape", x, shape=(24,)), shape=(4, 6))  # back to x
    z = g.add("reshape", g.add("reshape", x, shape=(2, 12)), shape=(3, 8))
    g.outputs = [g.add("relu", y), z]
    g2 = fold_reshapes(copy_graph(g))
    _same(g, g2, {"x": rand(4, 6)})
    relu = next(n for n in g2.nodes if n.op == "relu")
    assert relu.inputs[0] is g2.inputs[0]
    assert [n.op for n in g2.nodes].count("reshape") == 1


def test_shared_reshape_is_read_in_place_by_each_reader() -> None:
    g = Graph()
    x = g.add_input("x", (1, 4, 8), "float32")
    r = g.add("reshape", g.add("relu", x), shape=(4, 8))
    outs = [g.add("dense", r, g.add_const(f"w{i}", rand(8, 8))) for i in range(3)]
    g.outputs = outs
    g2 = split_shared_reshapes(copy_graph(g))
    assert [n.op for n in g2.nodes].count("reshape") == 3
    _same(g, g2, {"x": rand(1, 4, 8)})
    assert _ops(fuse_ops(g2)) == [["relu"], ["reshape", "dense"], ["reshape", "dense"],
                                  ["reshape", "dense"]]


def test_diamond_that_leaves_two_outputs_is_not_merged() -> None:
    g = Graph()
    x = g.add_input("x", (4, 8), "float32")
    y = g.add("dense", x, g.add_const("w", rand(8, 8)))
    a = g.add("exp", y)
    g.outputs = [g.add("mul", y, a), a]  # exp's result is also an output
    groups = _ops(fuse_ops(g))
    assert ["dense", "exp", "mul"] not in groups and ["dense"] in groups


def test_diamond_merges_stay_within_the_group_size_limit() -> None:
    """A long chain of diamonds after a product (each step reads its input twice) stops
    growing one group at `MAX_FUSED_NODES`: the loop-IR passes recurse through a kernel's
    expressions, and a chain of thousands overflowed the stack before the limit."""
    from tensorforge.graph.passes.fuse import MAX_FUSED_NODES

    g = Graph()
    x = g.add_input("x", (4, 8), "float32")
    y = g.add("dense", x, g.add_const("w", rand(8, 8)))
    for _ in range(3 * MAX_FUSED_NODES):
        y = g.add("mul", y, g.add("exp", y))
    g.outputs = [y]
    groups = fuse_ops(g)
    assert max(len(grp.nodes) for grp in groups) <= MAX_FUSED_NODES
    assert len(groups) >= 6
