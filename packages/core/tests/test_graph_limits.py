"""Graph-level robustness: size limits before allocation, type inference that checks its
inputs (no bare IndexError/ValueError/ZeroDivisionError from an op), fusion bounded so that
kernels stay small enough to lower, and wide concats split."""

from __future__ import annotations

import numpy as np
import pytest

from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph
from tensorforge.graph.limits import GraphLimitError, format_bytes, memory_limit, parse_bytes
from tensorforge.graph.passes import fuse_ops
from tensorforge.graph.passes.fuse import MAX_FUSED_NODES
from tensorforge.graph.passes.inline_size import MAX_INLINE_SIZE, input_reads
from tensorforge.graph.passes.memory import plan_memory
from tensorforge.graph.passes.simplify import MAX_NODE_INPUTS, split_wide_nodes


def test_parse_bytes():
    assert parse_bytes("512M") == 512 << 20 and parse_bytes("8G") == 8 << 30
    assert parse_bytes("1.5K") == 1536 and parse_bytes("1000") == 1000
    assert parse_bytes("0") is None and parse_bytes("none") is None
    with pytest.raises(GraphLimitError, match="not a size"):
        parse_bytes("lots")
    assert format_bytes(3 << 40) == "3.0 TiB"


def test_default_limit_is_physical_memory(monkeypatch):
    monkeypatch.delenv("TENSORFORGE_MEMORY_LIMIT", raising=False)
    assert memory_limit() is not None and memory_limit() > 1 << 26


def test_huge_input_is_refused_before_allocation():
    """A 1e12-element shape was a MemoryError (or an OOM kill) at run time."""
    g = Graph()
    with pytest.raises(GraphLimitError, match=r"graph input 'x' of shape \[1000000, 1000000\] "
                                              r"needs 3.6 TiB.*TENSORFORGE_MEMORY_LIMIT"):
        g.add_input("x", (10**6, 10**6), "float32")


def test_huge_node_output_is_refused(monkeypatch):
    monkeypatch.setenv("TENSORFORGE_MEMORY_LIMIT", "1M")
    g = Graph()
    x = g.add_input("x", (256, 256), "float32")  # 256 KiB: fine
    with pytest.raises(GraphLimitError, match=r"matmul node .* needs 4.0 MiB"):
        g.add("matmul", g.add("reshape", x, shape=(1024, 64)), g.add("reshape", x,
                                                                     shape=(64, 1024)))


def test_planned_buffers_together_are_checked(monkeypatch):
    g = Graph()
    x = g.add_input("x", (1024, 256), "float32")  # 1 MiB each
    a = g.add("relu", x)
    b = g.add("exp", x)
    g.outputs = [g.add("add", a, b)]
    groups = fuse_ops(g, enabled=False)
    monkeypatch.setenv("TENSORFORGE_MEMORY_LIMIT", "3M")
    with pytest.raises(GraphLimitError, match="intermediate buffers"):
        plan_memory(g, groups)
    monkeypatch.setenv("TENSORFORGE_MEMORY_LIMIT", "5M")
    plan_memory(g, groups)


def test_node_count_limit(monkeypatch):
    monkeypatch.setenv("TENSORFORGE_MAX_GRAPH_NODES", "10")
    g = Graph()
    v = g.add_input("x", (2,), "float32")
    for _ in range(10):
        v = g.add("relu", v)
    with pytest.raises(GraphLimitError, match="more than 10 nodes.*TENSORFORGE_MAX_GRAPH_NODES"):
        g.add("relu", v)


@pytest.mark.parametrize("op, shapes, attrs, match", [
    ("conv2d", [(1, 2, 5, 5), (2, 2, 3, 3)], {"strides": (0, 1)}, "strides .* positive"),
    ("conv2d", [(1, 2, 3, 3), (2, 2, 5, 5)], {}, "kernel spans 5 .* padded input"),
    ("conv2d", [(1, 2, 5), (2, 2, 3, 3)], {}, "rank 4"),
    ("max_pool2d", [(1, 1, 3, 3)], {"kernel": (4, 4)}, "kernel spans 4"),
    ("max_pool2d", [(1, 1, 3, 3)], {"kernel": (2, 2), "strides": (0, 0)}, "strides"),
    ("dense", [(2, 3), (4, 5)], {}, "inner dimensions differ"),
    ("matmul", [(2, 3), (4, 5)], {}, "inner dimensions differ"),
    ("reshape", [(2, 3)], {"shape": (4, 2)}, "cannot reshape"),
    ("transpose", [(2, 3, 4)], {"perm": (0, 2)}, "not a permutation"),
    ("concat", [(2, 3), (2, 3, 1)], {"axis": 0}, "differ outside axis"),
    ("conv2d_transpose", [(1, 3, 4, 4), (2, 1, 2, 2)], {}, "3 channels"),
])
def test_type_inference_checks_its_inputs(op, shapes, attrs, match):
    g = Graph()
    ins = [g.add_input(f"x{k}", s, "float32") for k, s in enumerate(shapes)]
    with pytest.raises(TensorforgeError, match=match):
        g.add_node(op, ins, attrs)


def test_inference_failures_name_the_node():
    """An inference that trips over its inputs (here a missing attribute: KeyError) is a
    TensorforgeError naming the node, the input types and the attributes."""
    g = Graph()
    x = g.add_input("x", (2, 3), "float32")
    with pytest.raises(TensorforgeError, match=r"transpose node 'mine': the inputs "
                                               r"\(float32\[2, 3\]\) or attributes \{\} do not "
                                               r"fit the op \(KeyError: 'perm'\)"):
        g.add_node("transpose", [x], {}, name="mine")


def _chain(g: Graph, x, ops: list[str], n: int):
    v = x
    for k in range(n):
        v = g.add(ops[k % len(ops)], v)
    g.outputs = [v]
    return v


def test_long_chains_fuse_into_bounded_groups():
    """A 5,000-op elementwise chain was one kernel and a RecursionError in lowering."""
    g = Graph()
    _chain(g, g.add_input("x", (4,), "float32"), ["relu", "neg", "abs"], 5000)
    groups = fuse_ops(g)
    assert max(len(grp.nodes) for grp in groups) <= MAX_FUSED_NODES
    assert sum(len(grp.nodes) for grp in groups) == 5000


def test_ops_reading_their_input_twice_stop_fusing_before_the_expression_explodes():
    """softplus reads x twice: 14 fused softplus took two minutes to lower (2**14 reads)."""
    g = Graph()
    x = g.add_input("x", (4,), "float32")
    v = g.add("softplus", x)
    (reads,) = input_reads(v.producer)  # 2 when it was log(1 + exp(x)); more in log1p form
    assert reads >= 2
    _chain(g, v, ["softplus"], 30)
    groups = fuse_ops(g)
    assert all(reads ** (len(grp.nodes) - 1) <= MAX_INLINE_SIZE for grp in groups)
    assert len(groups) > 1
    g2 = Graph()
    _chain(g2, g2.add_input("x", (4,), "float32"), ["relu"], 30)
    assert len(fuse_ops(g2)) == 1  # single reads: one kernel


def test_wide_concat_is_split():
    g = Graph()
    xs = [g.add_input(f"x{k}", (1, 2), "float32") for k in range(300)]
    y = g.add("concat", *xs, axis=0)
    g.outputs = [y]
    split_wide_nodes(g)
    assert all(len(n.inputs) <= MAX_NODE_INPUTS for n in g.nodes)
    assert g.nodes[-1].outputs[0] is y and y.shape == (300, 2)
    from tensorforge.graph import run_reference

    feeds = {f"x{k}": np.full((1, 2), k, "float32") for k in range(300)}
    np.testing.assert_array_equal(run_reference(g, feeds)[0],
                                  np.repeat(np.arange(300, dtype="float32")[:, None], 2, 1))
