"""The memory plan with zero-copy concats, checked by simulation on random graphs: every
kernel writes a tag into its output's bytes (at its storage and offset); whenever a kernel
runs, each value it reads must hold exactly what it should (its own tag, or for a concat view
its parts' contents side by side). Catches a part placed where a live value still is, a root
freed while an alias is read, or two parts overlapping."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge.graph.ir import Graph
from tensorforge.graph.passes import fuse_ops, plan_memory
from tensorforge.graph.passes.concat_views import concat_views


@st.composite
def graphs(draw):
    g = Graph()
    vals = [g.add_input("x", (1, 4, 2, 2), "float32")]
    for _ in range(draw(st.integers(3, 14))):
        kind = draw(st.sampled_from(["relu", "relu", "concat", "concat", "neg_relu"]))
        if kind == "concat" and len(vals) >= 2:
            k = draw(st.integers(2, min(4, len(vals))))
            parts = draw(st.lists(st.sampled_from(vals), min_size=k, max_size=k))
            vals.append(g.add("concat", *parts, axis=1))
        elif kind == "neg_relu":
            vals.append(g.add("relu", g.add("neg", draw(st.sampled_from(vals)))))
        else:
            vals.append(g.add("relu", draw(st.sampled_from(vals))))
    outs = draw(st.lists(st.sampled_from(vals[1:]), min_size=1, max_size=2, unique_by=id))
    g.outputs = outs
    return g


def _simulate(g: Graph) -> None:
    groups = fuse_ops(g)
    plan = plan_memory(g, groups)
    mem = [np.full(n // 4, -1, np.int64) for n in plan.storage_bytes]
    tags: dict[int, int] = {}
    parts = {id(n.outputs[0]): n.inputs for grp in groups if grp.view for n in grp.nodes}

    def expected(v) -> np.ndarray:
        if id(v) in parts:
            return np.concatenate([expected(p) for p in parts[id(v)]])
        return np.full(v.nbytes // 4, tags[id(v)], np.int64)

    def where(v):
        sid = plan.storage_of[v]
        off = plan.offset_of.get(v, 0) // 4
        return sid, slice(off, off + v.nbytes // 4)

    for grp in groups:
        for v in grp.inputs:
            if v in plan.storage_of:
                sid, sl = where(v)
                assert np.array_equal(mem[sid][sl], expected(v)), (grp.name, v.name)
        if grp.view:
            continue
        for v in grp.outputs:
            tags[id(v)] = len(tags) + 1
            if v in plan.storage_of:
                sid, sl = where(v)
                mem[sid][sl] = tags[id(v)]


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_plan_with_concat_views_never_clobbers(g: Graph) -> None:
    _simulate(g)


def test_dense_block_is_one_buffer() -> None:
    g = Graph()
    feats = [g.add("relu", g.add_input("x", (1, 4, 2, 2), "float32"))]
    cats = []
    for _ in range(4):
        cat = g.add("concat", *feats, axis=1)
        cats.append(cat)
        feats.append(g.add("relu", g.add("neg", cat)))
    g.outputs = [g.add("neg", g.add("concat", *feats, axis=1))]
    cv = concat_views(g)
    assert len(cv.nodes) == 5 and cv.copy_bytes == 0
    roots = {cv.placement[id(f)][0] for f in feats}
    assert len(roots) == 1
    _simulate(g)
