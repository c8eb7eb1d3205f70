"""Index checks in generated code: where they are generated, where the range analysis drops
them, how a failed status becomes an error, and that fusion keeps checked indices a kernel
argument."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge.compiler.compile import plan
from tensorforge.compiler.kernels import lower_group
from tensorforge.errors import DataCheckError
from tensorforge.graph import Graph
from tensorforge.graph.passes.index_ranges import annotate_index_ranges, value_ranges
from tensorforge.runtime import Param
from tensorforge.runtime.cfunction import KernelError
from tensorforge.runtime.checks import KernelCheckError, check_error, decode_check
from tensorforge.te.intrin import CHECK_PREFIX


def _gather_graph(index_dtype: str = "int64", via: str = "") -> tuple[Graph, Any]:
    g = Graph("g")
    table = g.add_const("table", np.arange(40, dtype="float32").reshape(10, 4))
    idx = g.add_input("idx", (6,), index_dtype)
    i = idx
    if via == "clip":
        i = g.add("clip", idx, min=0, max=9)
    elif via == "cast_u8":
        i = g.add("cast", g.add("cast", idx, to="uint8"), to="int64")
    elif via == "clip_wide":
        i = g.add("clip", idx, min=-10, max=10)
    out = g.add("take", table, i, axis=0)
    g.outputs = [out]
    return g, out


def _checks_in(g: Graph, target: Any) -> list[str]:
    p = plan(g, target)
    texts = []
    for grp in p.groups:
        f, _ = lower_group(grp, target)
        texts.append(str(f))
    return [t for t in texts if "runtime_check" in t]


def test_data_indices_are_checked(llvm_target: Any) -> None:
    g, _ = _gather_graph()
    assert _checks_in(g, llvm_target)


@pytest.mark.parametrize("via,checked", [("clip", False), ("cast_u8", True), ("clip_wide", True)])
def test_range_analysis_drops_provable_checks(llvm_target: Any, via: str, checked: bool) -> None:
    g, _ = _gather_graph(via=via)
    assert bool(_checks_in(g, llvm_target)) == checked


def test_narrow_index_dtype_needs_no_check(llvm_target: Any) -> None:
    g = Graph("g")
    table = g.add_const("table", np.zeros((300, 2), "float32"))
    idx = g.add_input("idx", (3,), "uint8")  # 0..255 < 300: always valid, never negative
    g.outputs = [g.add("take", table, idx, axis=0)]
    assert not _checks_in(g, llvm_target)


def test_value_ranges() -> None:
    g, out = _gather_graph(via="clip")
    r = value_ranges(g)
    take = g.nodes[-1]
    assert r[id(take.inputs[1])] == (0, 9)
    annotate_index_ranges(g)
    assert take.attrs["index_range"] == (0, 9)
    g2, _ = _gather_graph()
    annotate_index_ranges(g2)
    assert "index_range" not in g2.nodes[-1].attrs


def test_index_producer_is_not_fused_into_the_gather(llvm_target: Any) -> None:
    g = Graph("g")
    table = g.add_const("table", np.zeros((10, 3), "float32"))
    idx = g.add_input("idx", (4,), "int32")
    wide = g.add("cast", idx, to="int64")
    g.outputs = [g.add("take", table, wide, axis=0)]
    groups = plan(g, llvm_target).groups
    assert [[n.op for n in grp.nodes] for grp in groups] == [["cast"], ["take"]]
    cm = tensorforge.compile(g, target="llvm -num-threads=1")
    with pytest.raises(KernelCheckError, match=r"index -11 out of range \[-10, 9\]"):
        cm.run({"idx": np.array([1, 2, -11, 3], "int32")})


def test_check_error_messages() -> None:
    import json
    from types import SimpleNamespace

    from tensorforge.runtime import CFunction

    info = {"kind": "index", "op": "Gather", "axis": 1, "bound": 5, "tensor": "ind",
            "node": 1, "component": None}
    asserts = ["x > 0", CHECK_PREFIX + json.dumps(info)]
    params = [Param("data", "buffer", "float32", (2, 5)), Param("ind", "buffer", "int64", (3,))]
    fn = SimpleNamespace(name="k", asserts=asserts, params=params)
    args = [np.zeros((2, 5), "float32"), np.array([0, 7, -9])]
    e = check_error(fn, 2, "graph kernel 'g'", args, nodes=["a:reshape", "emb:take"])
    assert isinstance(e, KernelCheckError) and e.value == 7 and e.status == 2
    assert isinstance(e, DataCheckError) and isinstance(e, KernelError)
    assert str(e) == "Gather node 'emb': index 7 out of range [-5, 4] on axis 1"
    e = check_error(fn, 2, "", args)  # a kernel called on its own
    assert str(e) == "Gather in kernel 'k': index 7 out of range [-5, 4] on axis 1"
    e = check_error(fn, 2, "graph kernel 'g'")  # the indices are not an argument
    assert str(e) == "Gather in graph kernel 'g': an index is out of range [-5, 4] on axis 1"
    assert check_error(fn, 1) is None and check_error(fn, -1) is None  # not data checks
    assert decode_check("x > 0") is None and decode_check(asserts[1]) == info
    nd = dict(info, op="GatherND", component=1, bound=3)
    fn_nd = SimpleNamespace(name="k", asserts=[CHECK_PREFIX + json.dumps(nd)],
                            params=[Param("ind", "buffer", "int64", (2, 2))])
    e = check_error(fn_nd, 1, "", [np.array([[9, 1], [0, 3]])])
    assert "index 3 out of range [-3, 2]" in str(e)  # the checked component, not 9
    assert CFunction.error.__doc__ and "KernelCheckError" in CFunction.error.__doc__


def test_check_prefix_is_shared() -> None:
    from tensorforge.runtime.checks import CHECK_PREFIX as runtime_prefix

    assert runtime_prefix == CHECK_PREFIX  # te writes it, the numpy-only runtime reads it
