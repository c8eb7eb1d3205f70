"""`fuse_attention`: scaled dot-product attention patterns -> one `attention` node.

The pattern, as exporters write it (HuggingFace BERT/GPT-2, torch's `nn.MultiheadAttention`
with both exporters, torchvision's ViT, ONNX `Attention` as the frontend expands it):

    scores = matmul(Q', Kt')          Q' (.., Sq, Dh), Kt' (.., Dh, Skv); batch dims (B, H)
                                      or (B*H,); each operand possibly times a scalar
    x = scores [* or / scalar] [where(tril, x, fill)] [+ bias]    (in any order)
    out = matmul(softmax(x, axis=-1), V')

where Q', Kt' and V' are reshapes/transposes/slices/gathers of the projections' outputs and
`out` goes through more of them to the output projection. Each movement chain is traced back
to its source (forward for the output) and summarized as a strided `View` of it, found by
running the chain on the flat element numbers of the source (`np.arange`) and fitting an
affine map; a chain that is not affine (or an output chain that is not a permutation) is
left as it is. A `where` whose condition is a lower-triangular constant is the causal mask.
Intermediate values read by anything else (a probabilities output) stop the rewrite.

The `attention` node reads the sources directly, so the movement nodes die (dead-code
elimination) and no scores matrix is materialized."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.attention import View, choose_key_block, view_axes
from ..ir import Graph, Node, Value
from ..registry import get_op
from .simplify import eliminate_dead_code, make_node

#: ops that only move elements (their numpy references run on element numbers)
MOVEMENT = ("reshape", "transpose", "strided_slice", "split", "take", "broadcast_to",
            "identity")
#: a fill value at or below this counts as "hidden" for a where-mask (finfo.min, -1e9, -inf)
HIDDEN = -1e8


def _scalar(v: Value) -> float | None:
    if v.is_const and v.const.size == 1 and v.const.dtype.kind == "f":
        return float(v.const.reshape(()))
    return None


class _Match:
    """What one softmax's pattern holds."""

    def __init__(self) -> None:
        self.scale = 1.0
        self.bias: Value | None = None
        self.causal: int | None = None
        self.nodes: list[Node] = []


def _peel_scale(v: Value, m: _Match, readers: dict[int, list[Node]]) -> Value:
    """v = x * c or x / c (c a scalar constant, v read once): fold c into the scale."""
    while v.producer is not None and v.producer.op in ("mul", "div") and len(
            readers.get(id(v), [])) == 1:
        n = v.producer
        a, b = n.inputs
        c = _scalar(b)
        if c is None and n.op == "mul":
            a, c = b, _scalar(a)
        if c is None or c == 0 or a.shape != v.shape:
            break
        m.scale *= c if n.op == "mul" else 1.0 / c
        m.nodes.append(n)
        v = a
    return v


def _causal_offset(cond: np.ndarray, sq: int, skv: int) -> int | None:
    """c such that cond[.., i, j] == (j <= i + c) everywhere (broadcast), else None."""
    c2 = np.broadcast_to(cond, cond.shape[:-2] + (sq, skv)) if cond.ndim >= 2 else None
    if c2 is None:
        return None
    off = skv - sq
    i = np.arange(sq).reshape(sq, 1)
    j = np.arange(skv).reshape(1, skv)
    return off if np.all(c2 == (j <= i + off)) else None


def _match_scores(x: Value, m: _Match, readers: dict[int, list[Node]]) -> Node | None:
    """Walk back from the softmax input to the Q K^T matmul, collecting scale, bias, mask."""
    while True:
        n = x.producer
        if n is None or len(readers.get(id(x), [])) != 1:
            return None
        if n.op == "matmul":
            return n
        if n.op in ("mul", "div"):
            before = len(m.nodes)
            y = _peel_scale(x, m, readers)
            if len(m.nodes) == before:
                return None
            x = y
            continue
        if n.op == "add" and m.bias is None:
            a, b = n.inputs
            # the scores side has the full shape; the bias broadcasts to it
            if a.shape == n.outputs[0].shape and a.producer is not None and (
                    b.shape != a.shape or b.producer is None or b.producer.op != "matmul"):
                x, bias = a, b
            elif b.shape == n.outputs[0].shape:
                x, bias = b, a
            else:
                return None
            m.bias = bias
            m.nodes.append(n)
            continue
        if n.op == "where" and m.causal is None:
            cond, a, fill = n.inputs
            f = _scalar(fill)
            if not cond.is_const or f is None or f > HIDDEN or a.shape != n.outputs[0].shape:
                return None
            sq, skv = a.shape[-2], a.shape[-1]
            off = _causal_offset(cond.const.astype(bool), sq, skv)
            if off is None:
                return None
            m.causal = off
            m.nodes.append(n)
            x = a
            continue
        return None


def _trace_back(v: Value, readers: dict[int, list[Node]]) -> tuple[Value, list[Node]]:
    """The source of `v` through movement nodes (each with one non-constant input), and the
    chain in execution order."""
    chain: list[Node] = []
    while v.producer is not None and v.producer.op in MOVEMENT:
        n = v.producer
        data = [x for x in n.inputs if not x.is_const]
        if len(data) != 1 or data[0] is not n.inputs[0]:
            break
        chain.append(n)
        v = data[0]
    return v, chain[::-1]


def _run_chain(chain: list[Node], start: np.ndarray, want: Value) -> np.ndarray:
    """Run the movement chain on an array of element numbers; the value `want`'s array."""
    env: dict[int, np.ndarray] = {}
    first = chain[0].inputs[0] if chain else want
    env[id(first)] = start
    for n in chain:
        ins = [x.const if x.is_const else env[id(x)] for x in n.inputs]
        outs = get_op(n.op).reference(ins, n.attrs)
        for o, a in zip(n.outputs, outs):
            env[id(o)] = np.asarray(a)
    return env[id(want)]


def fit_view(idx: np.ndarray) -> View | None:
    """The affine `View` whose flat indices are `idx` (any shape), or None."""
    if idx.size == 0:
        return None
    off = int(idx.reshape(-1)[0])
    strides = []
    for k, e in enumerate(idx.shape):
        if e == 1:
            strides.append(0)
            continue
        sel = [0] * idx.ndim
        sel[k] = 1
        strides.append(int(idx[tuple(sel)]) - off)
    view = View(off, tuple(strides))
    return view if np.array_equal(view.flat_indices(idx.shape), idx) else None


def _input_view(v: Value, logical: tuple[int, ...], transpose_last: bool,
                readers: dict[int, list[Node]]) -> tuple[Value, View] | None:
    """(source, view) reading the logical (b, h, s, d) elements of `v` (whose shape is the
    logical one with (b, h) possibly merged, and the last two axes swapped for keys)."""
    src, chain = _trace_back(v, readers)
    numbers = np.arange(src.size, dtype=np.int64).reshape(src.shape)
    idx = _run_chain(chain, numbers, v) if chain else numbers
    if transpose_last:
        idx = np.swapaxes(idx, -1, -2)
    idx = idx.reshape(logical)
    view = fit_view(idx)
    if view is None or view_axes(src.shape, view, logical) is None:
        return None
    return src, view


def _bias_view(bias: Value, scores_shape: tuple[int, ...], logical: tuple[int, ...],
               readers: dict[int, list[Node]]) -> tuple[Value, View] | None:
    src, chain = _trace_back(bias, readers)
    numbers = np.arange(src.size, dtype=np.int64).reshape(src.shape)
    idx = _run_chain(chain, numbers, bias) if chain else numbers
    idx = np.broadcast_to(idx, scores_shape).reshape(logical)
    view = fit_view(idx)
    if view is None or view_axes(src.shape, view, logical) is None:
        return None
    return src, view


def _output_view(out: Value, logical: tuple[int, ...], readers: dict[int, list[Node]],
                 graph_outputs: set[int]) -> tuple[Value, View] | None:
    """Follow `out` forward through single-reader movement nodes that keep every element
    once (reshape, transpose); the last value and the view of the logical output in it."""
    chain: list[Node] = []
    v = out
    while id(v) not in graph_outputs:
        rs = readers.get(id(v), [])
        if len(rs) != 1 or rs[0].op not in ("reshape", "transpose", "identity") or len(
                rs[0].outputs) != 1:
            break
        chain.append(rs[0])
        v = rs[0].outputs[0]
    numbers = np.arange(out.size, dtype=np.int64).reshape(out.shape)
    placed = _run_chain(chain, numbers, v) if chain else numbers
    where = np.empty(out.size, dtype=np.int64)
    where[placed.reshape(-1)] = np.arange(out.size, dtype=np.int64)
    view = fit_view(where.reshape(logical))
    if view is None or view_axes(v.shape, view, logical) is None:
        return None
    return v, view


def fuse_attention(g: Graph, key_block: int | None = None) -> Graph:
    """The pass (module docstring). `key_block` fixes the keys per block (tests); by default
    `choose_key_block` picks it from the key length."""
    readers: dict[int, list[Node]] = {}
    for n in g.nodes:
        for x in n.inputs:
            readers.setdefault(id(x), []).append(n)
    graph_outputs = {id(v) for v in g.outputs}
    done = False
    for sm in list(g.nodes):
        if sm.op != "softmax":
            continue
        new = _rewrite(g, sm, readers, graph_outputs, key_block)
        done = done or new
    return eliminate_dead_code(g) if done else g


def _rewrite(g: Graph, sm: Node, readers: dict[int, list[Node]], graph_outputs: set[int],
             key_block: int | None) -> bool:
    x, p = sm.inputs[0], sm.outputs[0]
    nd = len(x.shape)
    if nd not in (3, 4) or sm.attrs.get("axis", -1) % nd != nd - 1 or x.dtype != "float32":
        return False
    rs = readers.get(id(p), [])
    if len(rs) != 1 or rs[0].op != "matmul" or rs[0].inputs[0] is not p or id(p) in \
            graph_outputs:
        return False
    pv = rs[0]
    m = _Match()
    qk = _match_scores(x, m, readers)
    if qk is None or id(x) in graph_outputs:
        return False
    q = _peel_scale(qk.inputs[0], m, readers)
    kt = _peel_scale(qk.inputs[1], m, readers)
    v, out = pv.inputs[1], pv.outputs[0]
    scores = qk.outputs[0].shape
    batch = scores[:-2]
    sq, skv = scores[-2:]
    dh = q.shape[-1]
    if (q.shape != (*batch, sq, dh) or kt.shape != (*batch, dh, skv)
            or v.shape != (*batch, skv, dh) or out.shape != (*batch, sq, dh)):
        return False
    b, h = (batch[0], batch[1]) if len(batch) == 2 else (1, batch[0])
    views: dict[str, Any] = {}
    ins: list[Value] = []
    for name, val, length, tr in (("q", q, sq, False), ("k", kt, skv, True),
                                  ("v", v, skv, False)):
        found = _input_view(val, (b, h, length, dh), tr, readers)
        if found is None:
            return False
        ins.append(found[0])
        views[name] = found[1].attr()
    if m.bias is not None:
        if m.bias.dtype != "float32":
            return False
        found = _bias_view(m.bias, scores, (b, h, sq, skv), readers)
        if found is None:
            return False
        ins.append(found[0])
        views["bias"] = found[1].attr()
    found = _output_view(out, (b, h, sq, dh), readers, graph_outputs)
    if found is None:
        return False
    dst, oview = found
    attrs = {"batch": b, "heads": h, "q_len": sq, "kv_len": skv, "head_dim": dh,
             "scale": float(np.float32(m.scale)), "causal": m.causal,
             "key_block": key_block or choose_key_block(skv),
             "views": {**views, "out": oview.attr()}, "out_shape": tuple(dst.shape)}
    node = make_node(g, "attention", ins, attrs, sm.name.replace("softmax", "attention") or
                     "attention")
    # the attention node takes over `dst` (its readers keep reading it) in the place of its
    # old producer (every input is defined before: they fed the old chain); the rest of the
    # pattern is dead
    old = dst.producer
    node.outputs = [dst]
    dst.producer = node
    g.nodes[g.nodes.index(old)] = node
    for x in ins:
        readers.setdefault(id(x), []).append(node)
    return True
