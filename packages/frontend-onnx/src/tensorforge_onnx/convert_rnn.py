"""LSTM, GRU and RNN, unrolled over the static sequence length into graph ops (as TVM's relay
ONNX frontend does): one dense for the input projection of all steps, then per step a dense
with the recurrent weights, a split into gates, elementwise activations and updates; outputs
are concatenated. Directions forward, reverse and bidirectional; layout 0 and 1."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context, f32
from .dispatch import converter

Node = onnx.NodeProto
Act = Callable[[Value], Value]

# name -> (graph op or None, default alpha, default beta)
_ACTS: dict[str, tuple[str, float | None, float | None]] = {
    "sigmoid": ("sigmoid", None, None), "tanh": ("tanh", None, None),
    "relu": ("relu", None, None), "leakyrelu": ("leaky_relu", 0.01, None),
    "hardsigmoid": ("hard_sigmoid", 0.2, 0.5), "elu": ("elu", 1.0, None),
    "softplus": ("softplus", None, None), "affine": ("affine", 1.0, 0.0),
    "scaledtanh": ("scaled_tanh", 1.0, 1.0),
}


def _activations(ctx: Context, node: Node, defaults: list[str], num_dirs: int
                 ) -> list[list[Act]]:
    at = ctx.attrs(node)
    names = list(at.get("activations", [])) or defaults * num_dirs
    alphas = list(at.get("activation_alpha", []))
    betas = list(at.get("activation_beta", []))
    if len(names) == len(defaults) and num_dirs == 2:
        names = names * 2
    acts: list[Act] = []
    for i, name in enumerate(names):
        key = name.lower()
        if key not in _ACTS:
            raise ctx.fail(node, f"the activation {name!r}",
                           f"supported: {', '.join(sorted(_ACTS))}")
        op, da, db = _ACTS[key]
        alpha = alphas[i] if i < len(alphas) else da
        beta = betas[i] if i < len(betas) else db
        alpha = None if alpha is None else f32(alpha)
        beta = None if beta is None else f32(beta)
        acts.append(_make_act(ctx, op, alpha, beta))
    n = len(defaults)
    return [acts[d * n:(d + 1) * n] for d in range(num_dirs)]


def _make_act(ctx: Context, op: str, alpha: float | None, beta: float | None) -> Act:
    def act(v: Value) -> Value:
        if op == "affine":
            return ctx.emit("add", ctx.emit("mul", v, ctx.scalar(alpha, v)), ctx.scalar(beta, v))
        if op == "scaled_tanh":
            t = ctx.emit("tanh", ctx.emit("mul", v, ctx.scalar(beta, v)))
            return ctx.emit("mul", t, ctx.scalar(alpha, v))
        kw = {}
        if alpha is not None:
            kw["alpha"] = float(alpha)
        if beta is not None:
            kw["beta"] = float(beta)
        return ctx.emit(op, v, **kw)

    return act


def _dir(ctx: Context, v: Value | None, d: int) -> Value | None:
    """v[d] (dropping the direction axis)."""
    if v is None:
        return None
    if v.is_const:
        return ctx.constant(v.const[d], "dir")
    sz = (1, *v.shape[1:])
    s = ctx.emit("strided_slice", v, begin=(d,) + (0,) * (len(v.shape) - 1),
                 step=(1,) * len(v.shape), size=sz)
    return ctx.reshape(s, v.shape[1:])


def _rows(ctx: Context, v: Value, start: int, n: int) -> Value:
    return ctx.emit("strided_slice", v, begin=(start, 0), step=(1, 1), size=(n, v.shape[1]))


class _Rnn:
    """Shared set-up of the three recurrent ops."""

    def __init__(self, ctx: Context, node: Node, gates: int, defaults: list[str]):
        self.ctx, self.node = ctx, node
        at = ctx.attrs(node)
        self.layout = int(at.get("layout", 0))
        x = ctx.get(node, 0)
        if self.layout:
            x = ctx.emit("transpose", x, perm=(1, 0, 2))
        self.x = x
        self.seq, self.batch, self.input = x.shape
        self.w, self.r, self.b = ctx.get(node, 1), ctx.get(node, 2), ctx.get(node, 3)
        self.hidden = int(at.get("hidden_size", self.r.shape[-1]))
        direction = at.get("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise ctx.fail(node, f"direction={direction!r}")
        self.dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        self.clip = at.get("clip")
        if ctx.has(node, 4):
            lens = ctx.const(node, 4, "sequence_lens")
            if np.any(np.asarray(lens) != self.seq):
                raise ctx.fail(node, "sequence_lens shorter than the sequence",
                               "pad or split the batch so every sequence has the full length")
        self.acts = _activations(ctx, node, defaults, len(self.dirs))
        self.gates = gates

    def initial(self, i: int, d: int) -> Value:
        v = self.ctx.get(self.node, i)
        if v is None:
            return self.ctx.constant(np.zeros((self.batch, self.hidden), dtype=self.x.dtype),
                                     "zeros")
        if self.layout:
            v = self.ctx.emit("transpose", v, perm=(1, 0, 2))
        return _dir(self.ctx, v, d)

    def input_proj(self, d: int, with_rbias: bool = True) -> tuple[Value, Value | None]:
        """X @ W[d]^T + biases for all steps as (seq*batch, gates*hidden); the recurrent bias
        separately when it must stay apart (GRU's linear_before_reset)."""
        ctx = self.ctx
        x2 = ctx.reshape(self.x, (self.seq * self.batch, self.input))
        b = _dir(ctx, self.b, d)
        gh = self.gates * self.hidden
        wb = rb = None
        if b is not None:
            if b.is_const:
                wb, rb = ctx.constant(b.const[:gh], "wb"), ctx.constant(b.const[gh:], "rb")
            else:
                wb = ctx.emit("strided_slice", b, begin=(0,), step=(1,), size=(gh,))
                rb = ctx.emit("strided_slice", b, begin=(gh,), step=(1,), size=(gh,))
        bias = wb
        if with_rbias and rb is not None:
            bias = ctx.emit("add", wb, rb)
            rb = None
        ins = [x2, _dir(ctx, self.w, d)] + ([bias] if bias is not None else [])
        return ctx.emit_multi("dense", ins)[0], rb

    def steps(self, d: int) -> list[int]:
        order = list(range(self.seq))
        return order[::-1] if self.dirs[d] == "reverse" else order

    def clipped(self, v: Value) -> Value:
        if self.clip is None:
            return v
        return self.ctx.emit("clip", v, min=-float(self.clip), max=float(self.clip))

    def finish(self, ys: list[list[Value]], finals: list[list[Value]]) -> list[Value | None]:
        """Y (seq, dirs, batch, hidden) and the final states, in the node's layout."""
        ctx = self.ctx
        b, h = self.batch, self.hidden
        per_dir = []
        for d, hs in enumerate(ys):
            order = sorted(zip(self.steps(d), hs))
            parts = [ctx.reshape(v, (1, 1, b, h)) for _, v in order]
            per_dir.append(parts[0] if len(parts) == 1 else ctx.emit_multi(
                "concat", parts, {"axis": 0})[0])
        y = per_dir[0] if len(per_dir) == 1 else ctx.emit_multi("concat", per_dir,
                                                                {"axis": 1})[0]
        outs: list[Value | None] = [y]
        for states in finals:
            parts = [ctx.reshape(v, (1, b, h)) for v in states]
            outs.append(parts[0] if len(parts) == 1 else ctx.emit_multi(
                "concat", parts, {"axis": 0})[0])
        if self.layout:
            outs = [ctx.emit("transpose", outs[0], perm=(2, 0, 1, 3))] + [
                ctx.emit("transpose", v, perm=(1, 0, 2)) for v in outs[1:]]
        n = len(self.node.output)
        return [outs[i] if i < n and self.node.output[i] else None for i in range(n)]


def _gates(ctx: Context, xw: Value, t: int, batch: int, h: Value, r: Value, n: int
           ) -> list[Value]:
    g = ctx.emit("add", _rows(ctx, xw, t * batch, batch), ctx.emit("dense", h, r))
    return ctx.emit_multi("split", [g], {"axis": 1, "sizes": (g.shape[1] // n,) * n})


@converter("LSTM", versions=(7, 22))
def lstm(ctx: Context, node: Node) -> list[Value | None]:
    s = _Rnn(ctx, node, 4, ["Sigmoid", "Tanh", "Tanh"])
    if ctx.attrs(node).get("input_forget", 0):
        raise ctx.fail(node, "input_forget=1")
    p = ctx.get(node, 7)
    ys, hs, cs = [], [], []
    for d in range(len(s.dirs)):
        f, g, hact = s.acts[d]
        xw, _ = s.input_proj(d)
        r = _dir(ctx, s.r, d)
        pd = _dir(ctx, p, d)
        peep = []
        if pd is not None:
            for k in range(3):  # i, o, f
                peep.append(ctx.emit("strided_slice", pd, begin=(k * s.hidden,), step=(1,),
                                     size=(s.hidden,)))
        h, c = s.initial(5, d), s.initial(6, d)
        out = []
        for t in s.steps(d):
            gi, go, gf, gc = _gates(ctx, xw, t, s.batch, h, r, 4)
            if peep:
                gi = ctx.emit("add", gi, ctx.emit("mul", peep[0], c))
                gf = ctx.emit("add", gf, ctx.emit("mul", peep[2], c))
            i_, f_ = f(s.clipped(gi)), f(s.clipped(gf))
            c = ctx.emit("add", ctx.emit("mul", f_, c), ctx.emit("mul", i_, g(s.clipped(gc))))
            if peep:
                go = ctx.emit("add", go, ctx.emit("mul", peep[1], c))
            h = ctx.emit("mul", f(s.clipped(go)), hact(c))
            out.append(h)
        ys.append(out)
        hs.append(h)
        cs.append(c)
    return s.finish(ys, [hs, cs])


@converter("GRU", versions=(7, 22))
def gru(ctx: Context, node: Node) -> list[Value | None]:
    s = _Rnn(ctx, node, 3, ["Sigmoid", "Tanh"])
    lbr = bool(ctx.attrs(node).get("linear_before_reset", 0))
    hd = s.hidden
    ys, hs = [], []
    for d in range(len(s.dirs)):
        f, g = s.acts[d]
        xw, rb = s.input_proj(d, with_rbias=False)
        r = _dir(ctx, s.r, d)
        rzr = ctx.emit("strided_slice", r, begin=(0, 0), step=(1, 1), size=(2 * hd, hd))
        rh = ctx.emit("strided_slice", r, begin=(2 * hd, 0), step=(1, 1), size=(hd, hd))
        rb_zr = rb_h = None
        if rb is not None:
            rb_zr = ctx.emit("strided_slice", rb, begin=(0,), step=(1,), size=(2 * hd,))
            rb_h = ctx.emit("strided_slice", rb, begin=(2 * hd,), step=(1,), size=(hd,))
        h = s.initial(5, d)
        out = []
        for t in s.steps(d):
            xt = _rows(ctx, xw, t * s.batch, s.batch)
            xz, xr, xh = ctx.emit_multi("split", [xt], {"axis": 1, "sizes": (hd,) * 3})
            hr = ctx.emit_multi("dense", [h, rzr] + ([rb_zr] if rb_zr is not None else []))[0]
            hz, hrr = ctx.emit_multi("split", [hr], {"axis": 1, "sizes": (hd, hd)})
            z = f(s.clipped(ctx.emit("add", xz, hz)))
            rr = f(s.clipped(ctx.emit("add", xr, hrr)))
            if lbr:
                hh = ctx.emit_multi("dense", [h, rh] + ([rb_h] if rb_h is not None else []))[0]
                cand = ctx.emit("add", xh, ctx.emit("mul", rr, hh))
            else:
                hh = ctx.emit_multi("dense", [ctx.emit("mul", rr, h), rh]
                                    + ([rb_h] if rb_h is not None else []))[0]
                cand = ctx.emit("add", xh, hh)
            n_ = g(s.clipped(cand))
            # h = (1 - z) * n + z * h = n + z * (h - n)
            h = ctx.emit("add", n_, ctx.emit("mul", z, ctx.emit("sub", h, n_)))
            out.append(h)
        ys.append(out)
        hs.append(h)
    return s.finish(ys, [hs])


@converter("RNN", versions=(7, 22))
def rnn(ctx: Context, node: Node) -> list[Value | None]:
    s = _Rnn(ctx, node, 1, ["Tanh"])
    ys, hs = [], []
    for d in range(len(s.dirs)):
        (f,) = s.acts[d]
        xw, _ = s.input_proj(d)
        r = _dir(ctx, s.r, d)
        h = s.initial(5, d)
        out = []
        for t in s.steps(d):
            g = ctx.emit("add", _rows(ctx, xw, t * s.batch, s.batch), ctx.emit("dense", h, r))
            h = f(s.clipped(g))
            out.append(h)
        ys.append(out)
        hs.append(h)
    return s.finish(ys, [hs])
