"""Scaled dot-product attention as one operator: softmax(Q K^T * scale + bias [+ causal]) V.

Q, K, V, the bias and the output are read and written through *strided views*: an affine map
from the logical index (batch b, head h, position s, feature d) to an element of the tensor
as the graph holds it (`View`: offset + strides, in elements of the row-major tensor). So the
kernel reads Q, K and V straight out of the projections' outputs (heads interleaved in the
last axis, or Q/K/V side by side in one fused projection) and writes the heads back in the
layout the output projection reads: the reshapes and transposes around attention in an
exported model cost nothing.

The computation tiles over the key sequence in blocks of `key_block` keys with the
blockwise (split) form of the online softmax: per query and block, the block's maximum
``M_t``, its sum ``L_t = sum exp(x - M_t)`` and its partial output ``O_t = sum exp(x - M_t)
v``; then ``m = max_t M_t`` and ``out = sum_t O_t e^(M_t - m) / sum_t L_t e^(M_t - m)``.
No sequence x sequence matrix exists: a schedule keeps a query tile's block scores and
partials in cache (`tensorforge_llvm.attention`). When the blocks do not divide the keys,
the last block ends at the last key and overlaps the one before; its keys the earlier block
already counted score -inf there, as do keys the causal mask hides (so every read is in
bounds and contiguous). A block with every key hidden adds nothing; a query with every key
hidden gives NaN (as the softmax of -inf does)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import te
from ..expr import PrimExpr, const
from ..te import Tensor

__all__ = ["AttentionSpec", "View", "attention", "attention_reference", "choose_key_block",
           "view_axes"]


@dataclass(frozen=True)
class View:
    """Logical index (i_0, ..., i_n-1) -> flat element `offset + sum strides[k] * i_k` of a
    row-major tensor."""

    offset: int
    strides: tuple[int, ...]

    @classmethod
    def of(cls, attr: Sequence[int]) -> View:
        return cls(int(attr[0]), tuple(int(s) for s in attr[1:]))

    def attr(self) -> tuple[int, ...]:
        return (self.offset, *self.strides)

    def flat_indices(self, extents: Sequence[int]) -> np.ndarray:
        """The flat element of every logical index, as an array of shape `extents`."""
        idx = np.full(tuple(extents), self.offset, dtype=np.int64)
        for k, (st, e) in enumerate(zip(self.strides, extents)):
            shape = [1] * len(extents)
            shape[k] = e
            idx = idx + st * np.arange(e, dtype=np.int64).reshape(shape)
        return idx


def _row_major(shape: Sequence[int]) -> list[int]:
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= d
    return st[::-1]


def view_axes(shape: Sequence[int], view: View, extents: Sequence[int]
              ) -> list[tuple[int, list[tuple[int, int]]]] | None:
    """The view as per-axis terms of the tensor's own index: for each axis, (offset,
    [(logical k, coefficient)]), with no term carrying into the next axis; None when the
    view does not decompose so (then it cannot be read without division)."""
    if view.offset < 0 or any(s < 0 for s in view.strides):
        return None
    st = _row_major(shape)
    size = int(np.prod(shape, dtype=np.int64))
    if view.offset >= max(size, 1):
        return None
    axes: list[tuple[int, list[tuple[int, int]]]] = [
        ((view.offset // s) % d, []) for s, d in zip(st, shape)]
    for k, (sk, e) in enumerate(zip(view.strides, extents)):
        if sk == 0 or e == 1:
            continue
        a = next((a for a, s in enumerate(st) if sk % s == 0), None)
        if a is None:
            return None
        axes[a][1].append((k, sk // st[a]))
    for (off, terms), d in zip(axes, shape):
        if off + sum(c * (extents[k] - 1) for k, c in terms) >= d:
            return None
    return axes


def _as_dim(x: Any) -> Any:
    return int(x.value) if getattr(x, "value", None) is not None else x


def symbolic_view_axes(shape: Sequence[Any], view: View, extents: Sequence[Any]
                       ) -> list[tuple[int, list[tuple[int, int]]]] | None:
    """`view_axes` where the shape, strides or extents hold symbolic sizes
    (`compiler.symbolic`): a symbolic stride must equal an axis's row-major stride, a static
    one divide a static axis stride; the offset must be static and lie in the last axis (or be
    0); the bounds were checked by `fuse_attention` at the sizes it was planned at."""
    from ..expr.structural import structural_equal

    if not isinstance(view.offset, int) or view.offset < 0:
        return None
    st: list[Any] = []
    acc: Any = 1
    for d in reversed(list(shape)):
        st.append(acc)
        acc = acc * d
    st = st[::-1]
    static_tail = [k for k, s in enumerate(st) if isinstance(s, int)]
    axes: list[tuple[int, list[tuple[int, int]]]] = [(0, []) for _ in shape]
    off = view.offset
    for a in static_tail:  # the offset within the static inner axes
        axes[a] = ((off // st[a]) % shape[a] if isinstance(shape[a], int) else off // st[a], [])
        off %= st[a]
    if off:
        return None
    for k, (sk, e) in enumerate(zip(view.strides, extents)):
        if (isinstance(sk, int) and sk == 0) or (isinstance(e, int) and e == 1):
            continue
        if isinstance(sk, int):
            a = next((a for a in static_tail if sk % st[a] == 0), None)
            coef = sk // st[a] if a is not None else 0
        else:
            a = next((a for a, s in enumerate(st) if not isinstance(s, int)
                      and structural_equal(s, sk)), None)
            coef = 1
        if a is None:
            return None
        axes[a][1].append((k, coef))
    return axes


def any_view_axes(shape: Sequence[Any], view: View, extents: Sequence[Any]
                  ) -> list[tuple[int, list[tuple[int, int]]]] | None:
    """`view_axes`, or `symbolic_view_axes` when a size is symbolic."""
    static = all(isinstance(x, int) for x in [*shape, view.offset, *view.strides, *extents])
    return (view_axes if static else symbolic_view_axes)(shape, view, extents)


def read_view(t: Tensor, view: View, extents: Sequence[int]) -> Callable[..., PrimExpr]:
    """`f(*logical index) -> t[...]` reading `t` through `view` (see `view_axes`)."""
    shape = [_as_dim(s) for s in t.shape]
    axes = any_view_axes(shape, view, extents)
    if axes is None:
        raise ValueError(f"view {view} of a tensor of shape {shape} needs division")

    def read(*i: Any) -> PrimExpr:
        idx = []
        for off, terms in axes:
            e: Any = const(off)
            for k, c in terms:
                e = e + (i[k] * c if c != 1 else i[k])
            idx.append(e)
        return t[tuple(idx)]

    return read


def unview(shape: Sequence[int], view: View, extents: Sequence[int]
           ) -> Callable[..., tuple[PrimExpr, ...]]:
    """The inverse of a bijective view onto a tensor of `shape`: the tensor's index ->
    the logical index (division and modulo by the constant coefficients)."""
    axes = any_view_axes(shape, view, extents)
    if axes is None or view.offset:
        raise ValueError(f"output view {view} onto {list(shape)} is not a plain permutation")
    where: dict[int, tuple[int, int, bool]] = {}
    for a, (_, terms) in enumerate(axes):
        top = max((c for _, c in terms), default=1)
        for k, c in terms:
            where[k] = (a, c, c == top)

    def inverse(*idx: Any) -> tuple[PrimExpr, ...]:
        out = []
        for k, e in enumerate(extents):
            if k not in where:
                out.append(const(0))
                continue
            a, c, top = where[k]
            x = idx[a] if c == 1 else te.floordiv(idx[a], c)
            out.append(x if top or not isinstance(e, int) else te.floormod(x, e))
        return tuple(out)

    return inverse


@dataclass(frozen=True)
class AttentionSpec:
    """Sizes and options of one attention: batch, heads, query and key lengths, head size;
    `causal`: None, or the offset c of a causal mask (key j visible to query i iff
    j <= i + c; c = kv_len - q_len for self-attention with a cache)."""

    batch: int
    heads: int
    q_len: int
    kv_len: int
    head_dim: int
    scale: float
    causal: int | None = None
    key_block: int = 64

    @property
    def blocks(self) -> Any:
        return (self.kv_len + self.key_block - 1) // self.key_block

    @property
    def logical(self) -> tuple[int, int, int, int]:
        return (self.batch, self.heads, self.q_len, self.head_dim)


def choose_key_block(kv_len: int, lanes: int = 16, largest: int = 64) -> int:
    """Keys per block: all of them up to `largest` (one block), else the multiple of `lanes`
    up to `largest` with the least work, counting the keys the last block repeats (it
    overlaps the one before, see `attention`) and a block's fixed cost as `lanes` keys
    (ties: the larger block). 128 or 512 keys take blocks of 64, ViT's 197 blocks of 64."""
    if kv_len <= largest:
        return kv_len

    def cost(b: int) -> int:
        n = -(-kv_len // b)
        return n * b + n * lanes

    best = lanes
    for b in range(lanes, largest + 1, lanes):
        if cost(b) <= cost(best):
            best = b
    return best


def attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, spec: AttentionSpec,
              views: dict[str, View], out_shape: Sequence[int],
              name: str = "attention") -> Tensor:
    """The blockwise attention (module docstring). `views` maps "q", "k", "v" (logical
    (b, h, s, d)), "bias" (logical (b, h, i, j)) and "out" (logical (b, h, i, d) onto
    `out_shape`) to their `View`s."""
    B, H, Sq, Skv, Dh = spec.batch, spec.heads, spec.q_len, spec.kv_len, spec.head_dim
    Bk, nb = spec.key_block, spec.blocks
    dtype = q.dtype
    qr = read_view(q, views["q"], (B, H, Sq, Dh))
    kr = read_view(k, views["k"], (B, H, Skv, Dh))
    vr = read_view(v, views["v"], (B, H, Skv, Dh))
    br = read_view(bias, views["bias"], (B, H, Sq, Skv)) if bias is not None else None
    ninf = const(float("-inf"), dtype)
    # a symbolic key count (compiler.symbolic): blocks start at t * Bk, the keys past the
    # last are read at the last key (in bounds) and score -inf
    ragged = not isinstance(Skv, int)
    overlap = not ragged and nb * Bk > Skv

    def start(t: Any) -> Any:  # the first key of block t (the last block ends at Skv)
        return te.min_expr(t * Bk, const(Skv - Bk)) if overlap else t * Bk

    def key(j: Any) -> Any:  # the key read for position j of the blocks
        return te.min_expr(j, Skv - 1) if ragged else j

    if ragged and br is not None:  # the bias padded to whole key blocks, once per call
        br = _padded_bias(br, views["bias"], (B, H, Sq, nb * Bk), key, name)
    # keys transposed per head (d, j): the score loop is vectorized over keys
    # (with a symbolic key count: padded to whole blocks, so the score loop reads it
    # contiguously; the padding keys are the last key's, scored -inf below)
    kt = te.compute((B, H, Dh, nb * Bk if ragged else Skv),
                    lambda b, h, d, j: kr(b, h, key(j), d),
                    name=f"{name}_keys", tag="attention_keys")
    rd = te.reduce_axis((0, Dh), name="rd")
    scores = te.compute(
        (B, H, Sq, nb, Bk),
        lambda b, h, i, t, jj: te.sum(qr(b, h, i, rd) * kt[b, h, rd, start(t) + jj], axis=rd),
        name=f"{name}_scores", tag="attention_scores")

    def logit(b: Any, h: Any, i: Any, t: Any, jj: Any) -> PrimExpr:
        j = start(t) + jj
        x = scores[b, h, i, t, jj] * const(spec.scale, dtype)
        if br is not None:
            x = x + br(b, h, i, j)
        ok = []
        if overlap:
            ok.append(j >= t * Bk)
        if ragged:
            ok.append(j < Skv)
        if spec.causal is not None:
            ok.append(j <= i + spec.causal)
        return te.select(te.all(*ok), x, ninf) if ok else x

    rj = te.reduce_axis((0, Bk), name="rj")
    bmax = te.compute((B, H, Sq, nb), lambda b, h, i, t: te.max(logit(b, h, i, t, rj), axis=rj),
                      name=f"{name}_block_max", tag="attention_block_max")

    def safe(x: PrimExpr) -> PrimExpr:  # a block with every key hidden: exp(-inf - 0) = 0
        return te.select(x == ninf, const(0.0, dtype), x)

    probs = te.compute(
        (B, H, Sq, nb, Bk),
        lambda b, h, i, t, jj: te.exp(logit(b, h, i, t, jj) - safe(bmax[b, h, i, t])),
        name=f"{name}_probs", tag="attention_probs")
    rs = te.reduce_axis((0, Bk), name="rs")
    bsum = te.compute((B, H, Sq, nb), lambda b, h, i, t: te.sum(probs[b, h, i, t, rs], axis=rs),
                      name=f"{name}_block_sum", tag="attention_block_sum")
    rv = te.reduce_axis((0, Bk), name="rv")
    part = te.compute(
        (B, H, Sq, nb, Dh),
        lambda b, h, i, t, d: te.sum(probs[b, h, i, t, rv] * vr(b, h, key(start(t) + rv), d),
                                     axis=rv),
        name=f"{name}_partial", tag="attention_partial")
    # the block's results side by side (partial output, max, sum): the per-block stages
    # above are computed inside this one's block loop, and only these survive the block
    stats = te.compute(
        (B, H, Sq, nb, Dh + 2),
        lambda b, h, i, t, c: te.select(
            c < Dh, part[b, h, i, t, te.min_expr(c, const(Dh - 1))],
            te.select(c == Dh, bmax[b, h, i, t], bsum[b, h, i, t])),
        name=f"{name}_blocks", tag="attention_blocks")
    rt = te.reduce_axis((0, nb), name="rt")
    gmax = te.compute((B, H, Sq), lambda b, h, i: te.max(stats[b, h, i, rt, Dh], axis=rt),
                      name=f"{name}_max", tag="attention_max")

    def weight(b: Any, h: Any, i: Any, t: Any) -> PrimExpr:
        return te.exp(stats[b, h, i, t, Dh] - gmax[b, h, i])

    rt2 = te.reduce_axis((0, nb), name="rt2")
    total = te.compute((B, H, Sq), lambda b, h, i: te.sum(
        stats[b, h, i, rt2, Dh + 1] * weight(b, h, i, rt2), axis=rt2), name=f"{name}_sum",
        tag="attention_sum")
    rt3 = te.reduce_axis((0, nb), name="rt3")
    acc = te.compute((B, H, Sq, Dh), lambda b, h, i, d: te.sum(
        stats[b, h, i, rt3, d] * weight(b, h, i, rt3), axis=rt3), name=f"{name}_acc",
        tag="attention_acc")
    inverse = unview(out_shape, views["out"], (B, H, Sq, Dh))

    def out(*idx: Any) -> PrimExpr:
        b, h, i, d = inverse(*idx)
        return acc[b, h, i, d] / total[b, h, i]

    # for the schedule: which logical dims (b, h, i, d) each output axis holds, with what
    # coefficient (it splits the axes into those loops)
    terms = any_view_axes(out_shape, views["out"], (B, H, Sq, Dh)) or []
    return te.compute(tuple(out_shape), out, name=name, tag="attention",
                      attrs={"logical_axes": tuple(tuple(t) for _, t in terms)})


def _padded_bias(br: Callable[..., PrimExpr], view: View, extents: Sequence[Any],
                 key: Callable[[Any], Any], name: str) -> Callable[..., PrimExpr]:
    """With a symbolic key count: the bias as a stage over the logical dims it varies in
    (a padding mask: keys only) and the keys padded to whole blocks (the padding reads the
    last key's), so the logits read it contiguously; the schedule computes it at root."""
    keep = [not (isinstance(st, int) and st == 0) for st in view.strides[:3]]
    shape = tuple(e if k else 1 for e, k in zip(extents[:3], keep)) + (extents[3],)

    def pick(b: Any, h: Any, i: Any) -> tuple[Any, ...]:
        return tuple(x if k else const(0) for x, k in zip((b, h, i), keep))

    padded = te.compute(shape, lambda b, h, i, j: br(*pick(b, h, i), key(j)),
                        name=f"{name}_bias", tag="attention_bias")
    return lambda b, h, i, j: padded[(*pick(b, h, i), j)]


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None,
                        spec: AttentionSpec, views: dict[str, View],
                        out_shape: Sequence[int]) -> np.ndarray:
    """numpy: gather the logical Q, K, V (and bias) through the views, softmax(QK^T s + b) V
    in float64, scatter through the output view."""
    B, H, Sq, Skv, Dh = spec.batch, spec.heads, spec.q_len, spec.kv_len, spec.head_dim

    def gather(a: np.ndarray, name: str, ext: tuple[int, ...]) -> np.ndarray:
        return a.reshape(-1)[views[name].flat_indices(ext)].astype(np.float64)

    qq = gather(q, "q", (B, H, Sq, Dh))
    kk = gather(k, "k", (B, H, Skv, Dh))
    vv = gather(v, "v", (B, H, Skv, Dh))
    x = np.einsum("bhid,bhjd->bhij", qq, kk) * spec.scale
    if bias is not None:
        x = x + gather(bias, "bias", (B, H, Sq, Skv))
    if spec.causal is not None:
        i = np.arange(Sq).reshape(Sq, 1)
        j = np.arange(Skv).reshape(1, Skv)
        x = np.where(j <= i + spec.causal, x, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        o = np.einsum("bhij,bhjd->bhid", e / e.sum(axis=-1, keepdims=True), vv)
    out = np.empty(int(math.prod(out_shape)), dtype=q.dtype)
    out[views["out"].flat_indices((B, H, Sq, Dh))] = o.astype(q.dtype)
    return out.reshape(tuple(out_shape))
