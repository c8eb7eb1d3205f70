"""Sampling at run-time coordinates: `grid_sample` (ONNX GridSample, any number of spatial
dims; nearest, linear and cubic interpolation; zeros, border and reflection padding) and
`roi_align`.

Written as TE computes over the output: each output element computes its source coordinate
from the grid (or the region of interest), then sums the interpolation taps (2 per dim for
linear, 4 for cubic, unrolled), each tap's read clamped inside the input. The numpy
references follow onnx's reference implementation."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op

_CUBIC_A = -0.75


def _cubic_coeffs(f: Any) -> list[Any]:
    """Keys' cubic convolution weights of the 4 taps around a fractional offset f."""
    a = _CUBIC_A
    x0, x1, x2, x3 = f + 1, f, 1 - f, 2 - f
    return [((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a,
            ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1,
            ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
            ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a]


def _borders(d: int, align: bool) -> tuple[float, float]:
    return (0.0, d - 1.0) if align else (-0.5, d - 0.5)


# numpy reference ----------------------------------------------------------------------------
def _reflect_np(x: float, lo: float, hi: float) -> float:
    rng = hi - lo
    if x < lo:
        dx = lo - x
        n = int(dx / rng)
        r = dx - n * rng
        return lo + r if n % 2 == 0 else hi - r
    if x > hi:
        dx = x - hi
        n = int(dx / rng)
        r = dx - n * rng
        return hi - r if n % 2 == 0 else lo + r
    return x


def _grid_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    """Samples x at the coordinates of `grid_coords` (input 1)."""
    x, coords_in = ins[0].astype("float64"), ins[1].astype("float64")
    mode, pad, align = at["mode"], at["padding"], at["align_corners"]
    dims = x.shape[2:]
    out = np.zeros((*x.shape[:2], *coords_in.shape[1:-1]))
    for n in range(x.shape[0]):
        for o in itertools.product(*[range(s) for s in coords_in.shape[1:-1]]):
            coords = list(coords_in[(n, *o)])
            taps = []
            for v in coords:
                if mode == "nearest":
                    taps.append([(int(v), 1.0)])
                    continue
                base = int(np.floor(v))
                f = v - base
                if mode == "linear":
                    taps.append([(base, 1 - f), (base + 1, f)])
                else:
                    taps.append(list(zip(range(base - 1, base + 3), _cubic_coeffs(f))))
            acc = np.zeros(x.shape[1])
            for combo in itertools.product(*taps):
                w, idx, inside = 1.0, [], True
                for i, (p, wi) in enumerate(combo):
                    w *= wi
                    if pad == "zeros":
                        inside &= 0 <= p < dims[i]
                    elif pad == "border":
                        p = min(max(p, 0), dims[i] - 1)
                    else:
                        p = int(_reflect_np(float(p), *_borders(dims[i], align)))
                    idx.append(p)
                if inside:
                    acc += w * x[(n, slice(None), *idx)]
            out[(n, slice(None), *o)] = acc
    return [out.astype(ins[0].dtype)]


# TE ---------------------------------------------------------------------------------------
def _reflect_te(x: PrimExpr, lo: float, hi: float) -> PrimExpr:
    f = x.dtype
    rng = const(hi - lo, f)
    lo_c, hi_c = const(lo, f), const(hi, f)

    def fold(dx: PrimExpr, near: PrimExpr, far: PrimExpr, sign: float) -> PrimExpr:
        n = te.floor(dx / rng)
        r = dx - n * rng
        even = te.floor(n * const(0.5, f)) * const(2.0, f) == n
        return te.select(even, near + const(sign, f) * r, far - const(sign, f) * r)

    below = fold(lo_c - x, lo_c, hi_c, 1.0)
    above = fold(x - hi_c, hi_c, lo_c, -1.0)
    return te.select(x < lo_c, below, te.select(x > hi_c, above, x))


def _coords_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    grid = ins[0]
    dims = list(at["dims"])
    nd = len(dims)
    mode, pad, align = at["mode"], at["padding"], at["align_corners"]
    f = out[0][1]

    def coord(*idx: Any) -> PrimExpr:
        *head, i = idx
        v = const(0.0, f)
        for k in range(nd):  # dim k of x reads grid component nd - 1 - k
            g = grid[(*head, const(nd - 1 - k, "int32"))].astype(f)
            d = dims[k]
            if align:
                c = (g + const(1.0, f)) * const((d - 1) / 2.0, f)
            else:
                c = ((g + const(1.0, f)) * const(float(d), f) - const(1.0, f)) * const(0.5, f)
            if mode == "nearest":
                c = te.round(c)
            lo, hi = _borders(d, align)
            if pad == "border":
                c = te.select(te.any(c < const(lo, f), c > const(hi, f)),
                              te.min_expr(te.max_expr(c, const(0.0, f)), const(d - 1.0, f)), c)
            elif pad == "reflection":
                c = _reflect_te(c, lo, hi)
            v = te.select(i == const(k, "int32"), c, v) if k else c
        return v

    return [te.compute(out[0][0], coord, name="grid_coords", tag="grid_coords")]


def _coords_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    grid = ins[0].astype("float64")
    dims = list(at["dims"])
    out = np.zeros(grid.shape)
    for k, d in enumerate(dims):
        g = grid[..., len(dims) - 1 - k]
        lo, hi = _borders(d, at["align_corners"])
        c = (g + 1) / 2 * (d - 1) if at["align_corners"] else ((g + 1) * d - 1) / 2
        if at["mode"] == "nearest":
            c = np.rint(c)
        if at["padding"] == "border":
            c = np.where((c < lo) | (c > hi), np.clip(c, 0, d - 1), c)
        elif at["padding"] == "reflection":
            c = np.vectorize(_reflect_np)(c, lo, hi) if c.size else c
        out[..., k] = c
    return [out.astype(at["dtype"])]


register_op("grid_coords", OpPattern.OPAQUE,
            lambda types, at: [(types[0][0], at["dtype"])], _coords_ref, _coords_compute,
            doc="grid_sample's source coordinates (x's dim order) from a normalized grid; "
            "attrs dims, mode, padding, align_corners, dtype. A kernel of its own, so the "
            "sampling kernel reads each coordinate instead of recomputing it per tap")


def _grid_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, coords = ins
    dims = [int(s.value) for s in x.shape[2:]]
    nd = len(dims)
    mode, pad, align = at["mode"], at["padding"], at["align_corners"]
    f = coords.dtype

    def tap(p: PrimExpr, i: int) -> tuple[PrimExpr, PrimExpr]:
        """(clamped index, inside) of integer tap position p on dim i."""
        d = dims[i]
        zero, last = const(0, "int32"), const(d - 1, "int32")
        inside = te.all(p >= zero, p <= last)
        if pad == "reflection":
            lo, hi = _borders(d, align)
            p = _reflect_te(p.astype(f), lo, hi).astype("int32")
        return te.min_expr(te.max_expr(p, zero), last), inside

    def body(n: Any, c: Any, *o: Any) -> PrimExpr:
        per_dim = []
        for i in range(nd):
            v = coords[(n, *o, const(i, "int32"))]
            if mode == "nearest":
                per_dim.append([(v.astype("int32"), const(1.0, f))])
                continue
            base = te.floor(v)
            fr = v - base
            b = base.astype("int32")
            if mode == "linear":
                per_dim.append([(b, const(1.0, f) - fr), (b + const(1, "int32"), fr)])
            else:
                per_dim.append([(b + const(k - 1, "int32"), w)
                                for k, w in enumerate(_cubic_coeffs(fr))])
        total = None
        for combo in itertools.product(*per_dim):
            w = None
            idx, ok = [], []
            for i, (p, wi) in enumerate(combo):
                w = wi if w is None else w * wi
                q, inside = tap(p, i)
                idx.append(q)
                ok.append(inside)
            v = x[(n, c, *idx)].astype(f)
            if pad == "zeros":
                v = te.select(te.all(*ok), v, const(0.0, f))
            term = v * w
            total = term if total is None else total + term
        assert total is not None
        return total.astype(x.dtype)

    return [te.compute(out[0][0], body, name="grid_sample", tag="injective")]


def _grid_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (xs, dt), (gs, _) = types
    return [((*xs[:2], *gs[1:-1]), dt)]


register_op("grid_sample", OpPattern.INJECTIVE, _grid_infer, _grid_ref, _grid_compute,
            doc="sample x (N, C, D1..Dk) at coordinates (N, O1..Ok, k) from grid_coords; "
            "attrs mode (nearest, linear, cubic), padding (zeros, border, reflection), "
            "align_corners")
