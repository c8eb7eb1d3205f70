"""fuse_attention on hand-built graphs in the exporters' styles, and the attention op's views
and numpy reference: the rewritten graph computes what the original did (reference
interpreter), patterns that are not attention are left alone."""

from __future__ import annotations

import numpy as np
import pytest

from tensorforge.graph import Graph, run_reference
from tensorforge.graph.passes import copy_graph
from tensorforge.graph.passes.attention import fit_view, fuse_attention
from tensorforge.ops.attention import (
    AttentionSpec,
    View,
    attention_reference,
    choose_key_block,
    view_axes,
)

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def _heads(g: Graph, x, s: int, h: int, dh: int, key: bool = False):
    """(S, H*Dh) -> (1, H, S, Dh) or (1, H, Dh, S): reshapes and a transpose (HF style)."""
    x = g.add("reshape", g.add("reshape", x, shape=(1, s, h * dh)), shape=(1, s, h, dh))
    return g.add("transpose", x, perm=(0, 2, 3, 1) if key else (0, 2, 1, 3))


def bert_like(s: int = 12, h: int = 3, dh: int = 8, mask: bool = True, causal: bool = False,
              fused_qkv: bool = False) -> tuple[Graph, dict[str, np.ndarray]]:
    g = Graph()
    d = h * dh
    x = g.add_input("x", (s, d), "float32")
    inputs = {"x": rand(s, d)}
    if fused_qkv:  # GPT-2: one projection, split
        qkv = g.add("dense", x, g.add_const("w", rand(3 * d, d) * 0.3))
        q, k, v = g.add_node("split", [g.add("reshape", qkv, shape=(1, s, 3 * d))],
                             {"axis": 2, "sizes": (d, d, d)})
        q, k, v = (g.add("reshape", t, shape=(s, d)) for t in (q, k, v))
    else:
        q, k, v = (g.add("dense", x, g.add_const(f"w{i}", rand(d, d) * 0.3)) for i in range(3))
    scores = g.add("matmul", _heads(g, q, s, h, dh), _heads(g, k, s, h, dh, key=True))
    scores = g.add("div", scores, g.add_const("sqrt_dh", np.float32(np.sqrt(dh))))
    if causal:
        tril = np.tril(np.ones((s, s), bool))[None, None]
        scores = g.add("where", g.add_const("causal", tril), scores,
                       g.add_const("fill", np.float32(np.finfo(np.float32).min)))
    if mask:
        m = g.add_input("mask", (1, s), "float32")
        inputs["mask"] = (np.arange(s) < s - 3).astype("float32").reshape(1, s)
        bias = g.add("mul", g.add("sub", g.add_const("one", np.float32(1)),
                                  g.add("reshape", m, shape=(1, 1, 1, s))),
                     g.add_const("big", np.float32(-1e4)))
        scores = g.add("add", scores, bias)
    ctx = g.add("matmul", g.add("softmax", scores, axis=3), _heads(g, v, s, h, dh))
    ctx = g.add("reshape", g.add("transpose", ctx, perm=(0, 2, 1, 3)), shape=(1, s, d))
    g.outputs = [g.add("dense", g.add("reshape", ctx, shape=(s, d)),
                       g.add_const("wo", rand(d, d) * 0.3))]
    return g, inputs


def _check(g: Graph, inputs: dict[str, np.ndarray], fused: int = 1) -> Graph:
    want = run_reference(g, inputs)
    g2 = fuse_attention(copy_graph(g))
    assert g2.op_counts().get("attention", 0) == fused, g2.op_counts()
    if fused:
        assert "softmax" not in g2.op_counts() and "matmul" not in g2.op_counts()
    for a, b in zip(run_reference(g2, inputs), want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    return g2


@pytest.mark.parametrize("mask,causal,fused_qkv", [(True, False, False), (False, True, True),
                                                   (True, True, True), (False, False, False)])
def test_hf_patterns(mask: bool, causal: bool, fused_qkv: bool) -> None:
    g, inputs = bert_like(mask=mask, causal=causal, fused_qkv=fused_qkv)
    g2 = _check(g, inputs)
    (att,) = [n for n in g2.nodes if n.op == "attention"]
    assert att.attrs["causal"] == (0 if causal else None)
    assert att.attrs["scale"] == pytest.approx(1 / np.sqrt(8))
    # it reads the projections' outputs directly: no reshape/transpose is left around it
    assert "transpose" not in g2.op_counts()
    if fused_qkv:  # one source, three column offsets
        assert att.inputs[0] is att.inputs[1] is att.inputs[2]
        assert [att.attrs["views"][k][0] for k in "qkv"] == [0, 24, 48]


def test_torch_style_batched_heads_scaled_operands() -> None:
    """nn.MultiheadAttention's export: (S, B, 3D) packed, (B*H, S, Dh) heads, q and k each
    times sqrt(scale), the output back to (S*B, D)."""
    s, h, dh = 10, 2, 4
    d = h * dh
    g = Graph()
    x = g.add_input("x", (s, d), "float32")
    qkv = g.add("reshape", g.add("dense", x, g.add_const("w", rand(3 * d, d))),
                shape=(s, 1, 3, d))
    qkv = g.add("transpose", g.add("reshape", qkv, shape=(s, 1, 3, 1, d)), perm=(2, 1, 3, 0, 4))
    qkv = g.add("reshape", qkv, shape=(3, 1, s, d))
    parts = [g.add("take", qkv, g.add_const(f"i{i}", np.array(i, np.int64)), axis=0)
             for i in range(3)]
    q, k, v = (g.add("transpose", g.add("reshape", p, shape=(s, h, dh)), perm=(1, 0, 2))
               for p in parts)
    c = g.add_const("c", np.float32(dh ** -0.25))
    kt = g.add("mul", g.add("transpose", k, perm=(0, 2, 1)), c)
    scores = g.add("matmul", g.add("mul", q, c), kt)
    out = g.add("matmul", g.add("softmax", scores, axis=-1), v)
    out = g.add("reshape", g.add("transpose", out, perm=(1, 0, 2)), shape=(s, d))
    g.outputs = [g.add("relu", out)]
    g2 = _check(g, {"x": rand(s, d)})
    (att,) = [n for n in g2.nodes if n.op == "attention"]
    assert att.attrs["scale"] == pytest.approx(dh ** -0.5, rel=1e-6)
    assert (att.attrs["batch"], att.attrs["heads"]) == (1, h)


def test_not_attention_is_left_alone() -> None:
    g, inputs = bert_like(mask=False)
    sm = next(n for n in g.nodes if n.op == "softmax")
    g.outputs.append(sm.outputs[0])  # the probabilities are an output: keep them
    _check(g, inputs, fused=0)
    g, inputs = bert_like(mask=False)
    sm = next(n for n in g.nodes if n.op == "softmax")
    sm.attrs["axis"] = 2  # over the queries: not attention
    _check(g, inputs, fused=0)


def test_where_mask_must_be_causal() -> None:
    g, inputs = bert_like(mask=False, causal=True)
    w = next(n for n in g.nodes if n.op == "where")
    cond = np.ones((1, 1, 12, 12), bool)
    cond[..., 3, 5] = False  # not a tril pattern
    w.inputs[0] = g.add_const("odd", cond)
    _check(g, inputs, fused=0)


def test_views() -> None:
    idx = View(7, (0, 8, 48, 1)).flat_indices((1, 3, 4, 8))
    assert fit_view(idx) == View(7, (0, 8, 48, 1))
    assert fit_view(np.array([[0, 1], [2, 5]])) is None  # not affine
    # q from a (S, 3D) projection: rows by position, heads and features in the columns
    assert view_axes((4, 72), View(24, (0, 8, 72, 1)), (1, 3, 4, 8)) == [
        (0, [(2, 1)]), (24, [(1, 8), (3, 1)])]
    assert view_axes((4, 24), View(20, (0, 8, 24, 1)), (1, 3, 4, 8)) is None  # carries over
    assert view_axes((4, 24), View(0, (0, 8, 24, -1)), (1, 3, 4, 8)) is None


def test_key_blocks() -> None:
    assert choose_key_block(7) == 7 and choose_key_block(64) == 64
    assert choose_key_block(128) == 64 and choose_key_block(512) == 64
    assert choose_key_block(197) % 16 == 0 and choose_key_block(100) in (48, 64)


def test_reference_masks_and_fully_hidden_rows() -> None:
    """The op's reference: causal offsets as ONNX Attention defines them, and a query whose
    every key is hidden gives NaN like softmax of -inf."""
    sq, skv, dh = 3, 5, 4
    q, k, v = rand(sq, dh), rand(skv, dh), rand(skv, dh)
    views = {"q": View(0, (0, 0, dh, 1)), "k": View(0, (0, 0, dh, 1)),
             "v": View(0, (0, 0, dh, 1)), "out": View(0, (0, 0, dh, 1)),
             "bias": View(0, (0, 0, skv, 1))}
    spec = AttentionSpec(1, 1, sq, skv, dh, 0.5, causal=skv - sq)
    out = attention_reference(q, k, v, None, spec, views, (sq, dh))
    x = q @ k.T * 0.5
    x = np.where(np.arange(skv)[None] <= np.arange(sq)[:, None] + 2, x, -np.inf)
    p = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, (p / p.sum(1, keepdims=True)) @ v, rtol=1e-5, atol=1e-6)
    bias = np.zeros((sq, skv), np.float32)
    bias[1] = -np.inf
    out = attention_reference(q, k, v, bias, AttentionSpec(1, 1, sq, skv, dh, 0.5), views,
                              (sq, dh))
    assert np.isnan(out[1]).all() and np.isfinite(out[[0, 2]]).all()
