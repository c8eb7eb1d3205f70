"""N-D pooling with dilations (`pool_nd`: max, avg, lp; max optionally with the position of
each maximum), for the pools the 2-D NCHW ops (`max_pool2d`, `avg_pool2d`) do not cover:
1-D to 3-D spatial inputs, dilated windows, indices.

Attributes (normalized by the frontend): `kind`, `kernel`, `strides`, `dilations`, `out`
(spatial output sizes), `begin` (padding before the first window, per dim), `limit` (window
positions at or past `limit` are not part of the window, in padded coordinates; ceil mode's
extra positions), `count_include_pad` (avg: divide by the window size inside `limit`, not by
the number of input elements), `p` (lp), `indices` (max: a second int64 output, the
flattened input position; `storage_order` 1: column-major spatial order)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op


def _infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    out = (*shape[:2], *at["out"])
    return [(out, dt), (out, "int64")] if at.get("indices") else [(out, dt)]


def _positions(at: dict[str, Any], d: int, o: int, size: int) -> list[tuple[int, bool, bool]]:
    """(input position, inside the input, inside the window limit) of window `o` on dim d."""
    out = []
    for k in range(at["kernel"][d]):
        p = o * at["strides"][d] + k * at["dilations"][d]
        xi = p - at["begin"][d]
        out.append((xi, 0 <= xi < size, p < at["limit"][d]))
    return out


def _ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0].astype("float64") if ins[0].dtype.kind == "f" else ins[0]
    sp = x.shape[2:]
    kind = at["kind"]
    y = np.zeros((*x.shape[:2], *at["out"]), dtype="float64")
    idx = np.zeros(y.shape, dtype="int64")
    strides = [int(np.prod(sp[d + 1:], dtype=np.int64)) for d in range(len(sp))]
    if at.get("storage_order", 0):
        strides = [int(np.prod(sp[:d], dtype=np.int64)) for d in range(len(sp))]
    for o in itertools.product(*[range(n) for n in at["out"]]):
        wins = [_positions(at, d, o[d], sp[d]) for d in range(len(sp))]
        vals, count, where = [], 0, []
        for combo in itertools.product(*wins):
            if all(inc for _, _, inc in combo):
                count += 1
                if all(ok for _, ok, _ in combo):
                    pos = tuple(c[0] for c in combo)
                    vals.append(x[(slice(None), slice(None), *pos)])
                    where.append(sum(p * s for p, s in zip(pos, strides)))
        v = np.stack(vals, -1)
        sl = (slice(None), slice(None), *o)
        if kind == "max":
            y[sl] = v.max(-1)
            idx[sl] = np.asarray(where)[v.argmax(-1)]
        elif kind == "avg":
            y[sl] = v.sum(-1) / (count if at.get("count_include_pad") else v.shape[-1])
        else:
            y[sl] = (np.abs(v) ** at["p"]).sum(-1) ** (1.0 / at["p"])
    if at.get("indices"):
        plane = int(np.prod(sp, dtype=np.int64))
        nc = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2] + (1,) * len(sp))
        return [y.astype(ins[0].dtype), idx + nc * plane]
    return [y.astype(ins[0].dtype)]


def _compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    nsp = len(x.shape) - 2
    sizes = [int(s.value) for s in x.shape[2:]]
    kind = at["kind"]
    acc = "float32" if x.dtype == "float16" else x.dtype

    def window(i: tuple, ks: list[Any]) -> tuple[list[PrimExpr], PrimExpr, PrimExpr]:
        """(input indices, inside the input, inside the limit) for output index i."""
        src, ok, inc = [], [], []
        for d in range(nsp):
            p = i[2 + d] * at["strides"][d] + ks[d] * at["dilations"][d]
            xi = p - const(at["begin"][d], "int32")
            ok += [xi >= const(0, "int32"), xi < const(sizes[d], "int32")]
            inc.append(p < const(at["limit"][d], "int32"))
            src.append(xi)
        return src, te.all(*ok), te.all(*inc)

    def axes(tag: str) -> list[Any]:
        return [te.reduce_axis((0, at["kernel"][d]), name=f"{tag}{d}") for d in range(nsp)]

    def read(i: tuple, src: list[PrimExpr], ok: PrimExpr) -> PrimExpr:
        zero = [const(0, "int32")] * nsp
        safe = [te.select(ok, s, z) for s, z in zip(src, zero)]
        return x[(i[0], i[1], *safe)]

    shape = out[0][0]
    if kind == "max":
        ka = axes("k")

        def fmax(*i: Any) -> PrimExpr:
            src, ok, inc = window(i, ka)
            return te.max(read(i, src, ok), axis=ka, where=te.all(ok, inc))

        y = te.compute(shape, fmax, name="pool_max", tag="pool")
        if not at.get("indices"):
            return [y]
        kb = axes("q")
        order = range(nsp) if not at.get("storage_order", 0) else reversed(range(nsp))

        def fidx(*i: Any) -> PrimExpr:
            src, ok, inc = window(i, kb)
            flat = (i[0] * int(x.shape[1].value) + i[1]).astype("int64")
            for d in order:
                flat = flat * const(sizes[d], "int64") + src[d].astype("int64")
            hit = te.all(ok, inc, read(i, src, ok) == y[i])
            return te.min(te.select(hit, flat, const(2 ** 62, "int64")), axis=kb)

        return [y, te.compute(out[1][0], fidx, name="pool_argmax", tag="pool")]
    ks = axes("k")

    def fsum(*i: Any) -> PrimExpr:
        src, ok, inc = window(i, ks)
        v = read(i, src, ok).astype(acc)
        if kind == "lp":
            v = te.abs(v) if at["p"] == 1 else te.pow(te.abs(v), const(float(at["p"]), acc))
        return te.sum(v, axis=ks, where=te.all(ok, inc))

    s = te.compute(shape, fsum, name=f"pool_{kind}_sum", tag="pool")
    if kind == "lp":
        p = float(at["p"])
        return [te.compute(shape, lambda *i: (s[i] if p == 1 else te.pow(
            s[i], const(1.0 / p, acc))).astype(x.dtype), name="pool_lp", tag="elemwise")]
    kc = axes("c")
    cip = at.get("count_include_pad", False)

    def fcount(*i: Any) -> PrimExpr:
        _, ok, inc = window(i, kc)
        return te.sum(te.select(inc if cip else te.all(ok, inc), const(1.0, acc),
                                const(0.0, acc)), axis=kc)

    n = te.compute(shape, fcount, name="pool_count", tag="pool")
    return [te.compute(shape, lambda *i: (s[i] / n[i]).astype(x.dtype), name="pool_avg",
                       tag="elemwise")]


register_op("pool_nd", OpPattern.OPAQUE, _infer, _ref, _compute,
            doc="N-D max/avg/lp pooling with dilations (see the module docstring for attrs)")
