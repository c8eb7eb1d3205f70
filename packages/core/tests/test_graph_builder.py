"""The frontends' GraphBuilder: folding at import, reuse of folded results, reshape chains,
transposes that only move axes of size 1, output naming."""

from __future__ import annotations

import numpy as np

from tensorforge.graph import Graph, run_reference
from tensorforge.graph.builder import GraphBuilder


def test_constant_inputs_fold_once() -> None:
    b = GraphBuilder(Graph())
    w = b.constant(np.arange(6, dtype="float32").reshape(2, 3), "w")
    t1 = b.transpose(w, (1, 0))
    t2 = b.transpose(w, (1, 0))
    assert t1.is_const and t1 is t2  # one constant, not one per use
    np.testing.assert_array_equal(t1.const, np.arange(6).reshape(2, 3).T)
    assert not b.g.nodes


def test_reshape_chains_and_cheap_transposes() -> None:
    g = Graph()
    b = GraphBuilder(g)
    x = g.add_input("x", (1, 4, 1, 1), "float32")
    y = b.transpose(x, (0, 2, 3, 1))  # only size-1 axes move: a reshape
    z = b.reshape(y, (4,))             # reads x directly
    assert y.producer.op == "reshape" and z.producer.inputs[0] is x
    u = g.add_input("u", (2, 3), "float32")
    assert b.transpose(u, (0, 1)) is u
    assert b.transpose(u, (1, 0)).producer.op == "transpose"
    g.outputs = [b.output(z, "out", []), b.output(u, "u_out", [])]
    assert [v.name for v in g.outputs] == ["out", "u_out"]
    assert g.outputs[1].producer.op == "identity"  # an input becomes an output by identity
    a = np.arange(4, dtype="float32").reshape(1, 4, 1, 1)
    out, u_out = run_reference(g, {"x": a, "u": np.ones((2, 3), "float32")})
    np.testing.assert_array_equal(out, a.reshape(4))
