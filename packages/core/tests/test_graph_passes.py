"""Graph passes on small hand-built graphs: folding numerics vs the reference interpreter,
CSE, DCE, type checks, fusion groups of a ResNet block, the memory plan, the pipeline."""

from __future__ import annotations

import io
import sys
import types

import numpy as np
import pytest

from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph, run_reference
from tensorforge.graph.passes import (
    GraphPassContext,
    copy_graph,
    eliminate_common_subexpr,
    eliminate_dead_code,
    fold_batch_norm,
    fold_constants,
    fuse_ops,
    infer_types,
    optimize,
    plan_memory,
)
from tensorforge.graph.passes.simplify import sink_reshape_past_bias

RNG = np.random.default_rng(0)


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def bn(g: Graph, x, c: int):
    return g.add("batch_norm", x, g.add_const("gamma", 1 + rand(c, scale=0.1)),
                 g.add_const("beta", rand(c, scale=0.1)), g.add_const("mean", rand(c, scale=0.1)),
                 g.add_const("var", 1 + np.abs(rand(c, scale=0.1))), epsilon=1e-5)


def conv(g: Graph, x, cin: int, cout: int, k: int = 3, stride: int = 1, bias: bool = True):
    ins = [x, g.add_const("w", rand(cout, cin, k, k, scale=0.2))]
    if bias:
        ins.append(g.add_const("b", rand(cout, scale=0.1)))
    return g.add("conv2d", *ins, strides=(stride, stride), pads=(k // 2,) * 4)


def basic_block(c: int = 8, hw: int = 8, downsample: bool = False) -> Graph:
    """conv+bias+bn+relu -> conv+bn -> + shortcut -> relu (ResNet's basic block)."""
    g = Graph("block")
    x = g.add_input("x", (1, c, hw, hw), "float32")
    cout, stride = (2 * c, 2) if downsample else (c, 1)
    y = g.add("relu", bn(g, conv(g, x, c, cout, stride=stride), cout))
    y = bn(g, conv(g, y, cout, cout, bias=False), cout)
    sc = bn(g, conv(g, x, c, cout, k=1, stride=stride, bias=False), cout) if downsample else x
    g.outputs = [g.add("relu", g.add("add", y, sc))]
    return g


def close(g1: Graph, g2: Graph, **inputs: np.ndarray) -> None:
    for a, b in zip(run_reference(g1, inputs), run_reference(g2, inputs)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# -- folding --------------------------------------------------------------------------------------
def test_fold_batch_norm_into_conv_matches_reference() -> None:
    g = basic_block(downsample=True)
    folded = fold_batch_norm(copy_graph(g))
    assert "batch_norm" not in folded.op_counts()
    convs = [n for n in folded.nodes if n.op == "conv2d"]
    assert all(len(n.inputs) == 3 and n.inputs[2].is_const for n in convs)
    close(g, folded, x=rand(1, 8, 8, 8))


def test_batch_norm_without_conv_becomes_scale_and_shift() -> None:
    g = Graph()
    x = g.add_input("x", (2, 4, 3, 3), "float32")
    g.outputs = [bn(g, x, 4)]
    folded = fold_batch_norm(copy_graph(g))
    assert folded.op_counts() == {"mul": 1, "add": 1}
    assert all(v.is_const for n in folded.nodes for v in n.inputs[1:])
    close(g, folded, x=rand(2, 4, 3, 3))


def test_batch_norm_on_a_shared_conv_output_is_not_folded_into_the_conv() -> None:
    g = Graph()
    x = g.add_input("x", (1, 4, 5, 5), "float32")
    y = conv(g, x, 4, 4)
    g.outputs = [bn(g, y, 4), y]  # the conv output is also a graph output
    folded = fold_batch_norm(copy_graph(g))
    assert folded.op_counts() == {"conv2d": 1, "mul": 1, "add": 1}
    close(g, folded, x=rand(1, 4, 5, 5))


def test_fold_constants_evaluates_constant_subgraphs() -> None:
    g = Graph()
    x = g.add_input("x", (3, 4), "float32")
    w = g.add("transpose", g.add_const("w", rand(4, 3)), perm=(1, 0))
    w2 = g.add("relu", w)
    g.outputs = [g.add("add", x, w2)]
    folded = fold_constants(copy_graph(g))
    assert folded.op_counts() == {"add": 1}
    assert folded.nodes[0].inputs[1].is_const
    close(g, folded, x=rand(3, 4))


def test_fold_constants_size_cap_keeps_large_broadcasts() -> None:
    g = Graph()
    x = g.add_input("x", (256, 256), "float32")
    big = g.add("add", g.add_const("a", rand(256, 1)), g.add_const("b", rand(1, 256)))
    small = g.add("mul", g.add_const("c", rand(256, 1)), g.add_const("d", rand(256, 1)))
    g.outputs = [g.add("add", g.add("add", x, big), small)]
    folded = fold_constants(copy_graph(g), limit_bytes=4096)
    ops = [n.op for n in folded.nodes]
    assert ops == ["add", "add", "add"]  # the (256, 256) broadcast stays a node
    assert not any(n.inputs[0].is_const and n.inputs[1].is_const and n.outputs[0].size < 1000
                   for n in folded.nodes)
    close(g, folded, x=rand(256, 256))
    assert fold_constants(copy_graph(g)).op_counts() == {"add": 2}  # default cap: folded


# -- CSE, DCE, types ------------------------------------------------------------------------------
def test_cse_merges_identical_nodes_only() -> None:
    g = Graph()
    x = g.add_input("x", (4, 4), "float32")
    a, b = g.add("relu", x), g.add("relu", x)
    c1 = g.add("clip", x, min=0.0, max=1.0)
    c2 = g.add("clip", x, min=0.0, max=2.0)  # other attributes: kept
    s1 = g.add("mul", a, g.add_const("two", np.float32(2)))
    s2 = g.add("mul", b, g.add_const("two", np.float32(2)))  # equal small constant: merged
    g.outputs = [g.add("add", g.add("add", s1, s2), g.add("add", c1, c2))]
    out = eliminate_common_subexpr(copy_graph(g))
    assert out.op_counts() == {"relu": 1, "clip": 2, "mul": 1, "add": 3}
    close(g, out, x=rand(4, 4))


def test_bias_add_moves_before_a_reshape_that_keeps_the_last_axis() -> None:
    g = Graph()
    x = g.add_input("x", (6, 8), "float32")
    y = g.add("reshape", g.add("relu", x), shape=(6, 1, 8))
    g.outputs = [g.add("add", y, g.add_const("b", rand(8)), name="out")]
    other = g.add("reshape", x, shape=(3, 16))  # bias over an axis the reshape changes: kept
    g.outputs.append(g.add("add", other, g.add_const("c", rand(16))))
    out = sink_reshape_past_bias(copy_graph(g))
    assert [n.op for n in out.nodes] == ["relu", "add", "reshape", "reshape", "add"]
    assert out.outputs[0].name == g.outputs[0].name
    infer_types(out)  # types recorded on the new nodes hold
    close(g, out, x=rand(6, 8))


def test_dce_drops_unused_nodes() -> None:
    g = Graph()
    x = g.add_input("x", (4,), "float32")
    g.add("exp", g.add("relu", x))  # dead
    g.outputs = [g.add("neg", x)]
    assert eliminate_dead_code(copy_graph(g)).op_counts() == {"neg": 1}


def test_infer_types_reports_a_wrong_recorded_type() -> None:
    g = Graph("bad")
    x = g.add_input("x", (4, 4), "float32")
    y = g.add("relu", x)
    g.outputs = [y]
    infer_types(g)
    y.shape = (4, 5)
    with pytest.raises(TensorforgeError, match=r"relu.*float32\[4, 5\].*float32\[4, 4\]"):
        infer_types(g)


# -- fusion ---------------------------------------------------------------------------------------
def _ops(groups) -> list[list[str]]:
    return [[n.op for n in grp.nodes] for grp in groups]


def test_fusion_of_a_basic_block_before_and_after_bn_folding() -> None:
    g = basic_block()
    assert _ops(fuse_ops(g)) == [["conv2d", "batch_norm", "relu"],
                                 ["conv2d", "batch_norm", "add", "relu"]]
    groups = fuse_ops(optimize(g))
    assert _ops(groups) == [["conv2d", "relu"], ["conv2d", "add", "relu"]]
    first, second = groups
    assert first.master.op == second.master.op == "conv2d"
    assert first.pattern.name == "OUT_ELEMWISE_FUSABLE"
    assert first.outputs[0] in second.inputs and g.inputs[0].name in [v.name for v in
                                                                      second.inputs]


def test_fusion_of_a_downsampling_block() -> None:
    groups = fuse_ops(optimize(basic_block(downsample=True)))
    assert sorted(map(tuple, _ops(groups))) == [("conv2d",), ("conv2d", "add", "relu"),
                                                 ("conv2d", "relu")]
    assert _ops(groups)[-1] == ["conv2d", "add", "relu"]  # topological: shortcut first


def test_fusion_rules_injective_reduce_opaque_and_boundaries() -> None:
    g = Graph()
    x = g.add_input("x", (2, 3, 4), "float32")
    t = g.add("relu", g.add("transpose", x, perm=(0, 2, 1)))  # injective chain
    p = g.add("global_avg_pool2d", g.add("reshape", t, shape=(2, 4, 3, 1)))
    s = g.add("softmax", g.add("reshape", p, shape=(2, 4)))  # opaque
    shared = g.add("exp", s)  # two consumers: ends its group
    out1 = g.add("neg", shared)
    g.outputs = [g.add("add", shared, out1), out1]
    groups = fuse_ops(g)
    # the reshape of the pool's output is read by the softmax alone: the softmax kernel
    # reads through it (fuse_merge.merge_reshape_readers), no copy
    assert _ops(groups) == [["transpose", "relu", "reshape"], ["global_avg_pool2d"],
                            ["reshape", "softmax"], ["exp"], ["neg"], ["add"]]
    assert [len(grp.nodes) for grp in fuse_ops(g, enabled=False)] == [1] * len(g.nodes)


def test_reduction_takes_injective_producers_and_elementwise_consumers() -> None:
    from tensorforge.graph import all_ops

    if "reduce_sum" not in all_ops():
        pytest.skip("no reduce_sum op registered")
    g = Graph()
    x = g.add_input("x", (4, 8), "float32")
    r = g.add("reduce_sum", g.add("exp", x), axes=(1,), keepdims=True)
    g.outputs = [g.add("sqrt", r)]
    groups = fuse_ops(g)
    assert _ops(groups) == [["exp", "reduce_sum", "sqrt"]]
    assert groups[0].master.op == "reduce_sum"


# -- memory plan ----------------------------------------------------------------------------------
def test_memory_plan_reuses_dead_storages() -> None:
    g = Graph()
    x = g.add_input("x", (16, 16), "float32")  # 1024 bytes
    a = g.add("relu", x)
    b = g.add("exp", a)
    c = g.add("neg", b)
    d = g.add("abs", g.add("transpose", c, perm=(1, 0)))
    g.outputs = [d]
    groups = fuse_ops(g, enabled=False)
    plan = plan_memory(g, groups)
    sid = {v.name: s for v, s in plan.storage_of.items()}
    assert len(sid) == 4 and d not in plan.storage_of  # graph outputs keep their own memory
    assert sid[a.name] != sid[b.name] and sid[b.name] != sid[c.name]
    assert sid[c.name] == sid[a.name]  # a died when b was computed
    assert plan.storage_bytes == [1024, 1024]
    assert plan.planned_bytes == 2048 and plan.unplanned_bytes() == 4096
    no_reuse = plan_memory(g, groups, reuse=False)
    assert no_reuse.planned_bytes == 4096


def test_memory_plan_best_fit_and_growth() -> None:
    g = Graph()
    x = g.add_input("x", (64,), "float32")  # 256 bytes
    a = g.add("reshape", g.add("concat", x, x, axis=0), shape=(128,))  # 512 bytes (2 groups)
    b = g.add("relu", g.add("concat", a, a, axis=0))  # 1024 bytes
    g.outputs = [g.add("neg", b)]
    plan = plan_memory(g, fuse_ops(g, enabled=False))
    # concat1 -> s0 (512); reshape -> s1 (512); concat2 (1024) finds only s0 free: grown;
    # relu (1024) finds s1 free: grown. Two storages instead of four buffers.
    assert plan.storage_bytes == [1024, 1024]
    assert plan.planned_bytes == 2048 and plan.unplanned_bytes() == 3072
    assert plan.storage_of[a] == 1 and plan.storage_of[b] == 1


# -- pipeline -------------------------------------------------------------------------------------
def test_pipeline_prints_after_a_pass_and_can_disable_one() -> None:
    g = basic_block()
    buf = io.StringIO()
    with GraphPassContext(print_after={"fold_batch_norm"}, stream=buf):
        optimize(g)
    assert "# graph after fold_batch_norm" in buf.getvalue()
    assert "batch_norm(" not in buf.getvalue().split("# graph after fold_batch_norm")[1]
    with GraphPassContext(disabled={"fold_batch_norm"}):
        assert "batch_norm" in optimize(g).op_counts()
    assert "batch_norm" in g.op_counts()  # optimize works on a copy


def test_pipeline_env_switch(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("TENSORFORGE_PRINT_GRAPH_AFTER", "eliminate_dead_code")
    optimize(basic_block())
    assert "# graph after eliminate_dead_code" in capsys.readouterr().out


def test_layout_stage_runs_target_registered_passes(plugins, llvm_target, monkeypatch) -> None:
    from tensorforge.plugins import Pass, hookimpl

    seen = []
    mod = types.ModuleType("tf_test_layout_pass")

    def mark(graph, target):
        seen.append((graph.name, target.kind.name))
        return graph

    mod.mark = mark
    monkeypatch.setitem(sys.modules, "tf_test_layout_pass", mod)

    class LayoutPlugin:
        @hookimpl
        def register_passes(self, register, target, stage):
            if stage == "graph.layout":
                register(Pass("test-layout", stage, "tf_test_layout_pass:mark"))

    plugins.register(LayoutPlugin(), "test-layout")
    optimize(basic_block(), llvm_target)
    assert seen == [("block", "llvm")]
    optimize(basic_block(), llvm_target, opt_level=1)  # no layout stage below opt-level 2
    assert len(seen) == 1


def test_fusion_never_makes_a_cycle_through_a_multi_output_node() -> None:
    """split's branches may join one group; a node that reads both that group and a group
    depending on it (here the opaque softmax) must not join it."""
    g = Graph()
    x = g.add_input("x", (2, 8), "float32")
    s0, s1 = g.add_node("split", [x], {"axis": 1, "sizes": (4, 4)})
    b = g.add("softmax", g.add("relu", s0), axis=-1)
    g.outputs = [g.add("add", g.add("exp", s1), b)]
    groups = fuse_ops(g)
    assert _ops(groups) == [["split", "relu", "exp"], ["softmax"], ["add"]]
    produced = {id(v) for v in g.inputs}
    for grp in groups:  # every group reads only what earlier groups wrote
        assert all(v.is_const or id(v) in produced for v in grp.inputs)
        produced.update(id(v) for v in grp.outputs)
