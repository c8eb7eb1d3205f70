"""Winograd convolution F(m x m, 3 x 3) in the NCHW[x]c layout (Lavin & Gray, 2016).

A 3x3 stride-1 convolution is computed tile by tile: every ``m x m`` output tile needs an
``a x a`` input tile (``a = m + 2``). With ``B``, ``G``, ``A`` the transform matrices:

- weights (at compile time, numpy): ``U[e, u, o, c] = (G g[o, c] G^T)[e, u]``, stored
  ``(a, a, O/y, C, y)`` so that ``y`` output channels of one input channel are a vector;
- input: ``V[e, u, c, p] = (B^T d[c, p] B)[e, u]`` for every tile ``p`` (stored
  ``(a, a, C/x, P, x)``: the transform is vectorized over the ``x`` channels of the block);
- a batched GEMM over the ``a * a`` positions: ``M[e, u, o, p] = sum_c V[e, u, c, p] U[e, u,
  o, c]`` (stored ``(a, a, O/y, P, y)``);
- output: ``Y[o, tile p] = A^T M[:, :, o, p] A``, whose stage carries the fused epilogue.

The transforms are written out as sums of their non-zero terms (coefficients +-1 as adds), one
expression per position selected by constant conditions, so that an unrolled schedule leaves
only the arithmetic the matrices need. F(2,3) multiplies 2.25x less than a direct
convolution, F(4,3) 4x less; F(4,3)'s larger coefficients cost some float32 precision
(relative errors around 1e-5 of the output's range instead of 1e-6).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import te
from ..expr import PrimExpr, const

# the matrices and the weight transform are numpy only: they live in the runtime, which
# redoes the transform when it loads a package that stores the 3x3 weights
from ..runtime.transforms import winograd_matrices, winograd_weight_transform
from ..te import Tensor
from .nn import _int, _pads4, pad

__all__ = ["conv2d_winograd_nchwc", "winograd_conv_np", "winograd_matrices",
           "winograd_tiles", "winograd_weight_transform"]

def winograd_tiles(oh: int, ow: int, m: int) -> tuple[int, int]:
    """Tiles along the output height and width."""
    return -(-oh // m), -(-ow // m)


def winograd_conv_np(x: np.ndarray, u: np.ndarray, m: int, pads: Sequence[int]) -> np.ndarray:
    """numpy reference of the op: x (N, C/x, H, W, x), U (a, a, O/y, C, y) -> NCHW[y]c,
    by the same algorithm in float64."""
    bt, _, at = winograd_matrices(m)
    a = m + 2
    n, cc, h, w, ib = x.shape
    _, _, oo, c, ob = u.shape
    pt, pl, pb, pr = _pads4(pads)
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    th, tw = winograd_tiles(oh, ow, m)
    xp = np.zeros((n, c, th * m + 2, tw * m + 2))
    xn = x.transpose(0, 1, 4, 2, 3).reshape(n, c, h, w).astype("float64")
    xp[:, :, pt:pt + h, pl:pl + w] = xn[:, :, :th * m + 2 - pt, :tw * m + 2 - pl]
    idx_y = (np.arange(th) * m)[:, None] + np.arange(a)[None, :]
    idx_x = (np.arange(tw) * m)[:, None] + np.arange(a)[None, :]
    d = xp[:, :, idx_y[:, :, None, None], idx_x[None, None, :, :]]  # n c th a tw a
    v = np.einsum("ei,ncyixj,uj->nyxeuc", bt, d, bt)
    uu = u.transpose(0, 1, 3, 2, 4).reshape(a, a, c, oo * ob).astype("float64")
    mm = np.einsum("nyxeuc,euco->nyxeuo", v, uu)
    y = np.einsum("ie,nyxeuo,ju->noyixj", at, mm, at).reshape(n, oo * ob, th * m, tw * m)
    y = y[:, :, :oh, :ow]
    return np.ascontiguousarray(
        y.reshape(n, oo, ob, oh, ow).transpose(0, 1, 3, 4, 2).astype(x.dtype))


def _lin(coefs: Sequence[float], terms: Sequence[PrimExpr], dtype: str) -> PrimExpr:
    """sum(c * t) over the non-zero coefficients; +-1 become adds and subtractions."""
    out: PrimExpr | None = None
    pairs = [(c, t) for c, t in zip(coefs, terms) if c != 0]
    pairs.sort(key=lambda ct: ct[0] < 0)  # a positive term first: no negation of the first
    for c, t in pairs:
        neg = c < 0
        mag = abs(float(c))
        term = t if mag == 1.0 else t * const(mag, dtype)
        if out is None:
            out = -term if neg else term
        else:
            out = out - term if neg else out + term
    return out if out is not None else const(0.0, dtype)


def _select(i: PrimExpr, n: int, fn: Callable[[int], PrimExpr]) -> PrimExpr:
    """fn(i) for a loop value i in [0, n), as a chain of selects on constant positions (an
    unrolled loop keeps one branch per copy)."""
    e = fn(n - 1)
    for k in range(n - 2, -1, -1):
        e = te.select(i == k, fn(k), e)
    return e


def conv2d_winograd_nchwc(data: Tensor, u: Tensor, m: int, padding: int | Sequence[int] = 0,
                          name: str = "conv2d_winograd_nchwc") -> Tensor:
    """data (N, C/x, H, W, x), U (a, a, O/y, C, y) -> (N, O/y, OH, OW, y) for a 3x3 kernel,
    stride 1, dilation 1 (see the module docstring; stages ``*_input``, ``*_gemm``)."""
    bt, _, at = winograd_matrices(m)
    a = m + 2
    n, cc, h, w, ib = (_int(s) for s in data.shape)
    a1, a2, oo, c, ob = (_int(s) for s in u.shape)
    if (a1, a2) != (a, a) or c != cc * ib:
        raise ValueError(f"conv2d_winograd_nchwc: data {tuple(data.shape)} and U "
                         f"{tuple(u.shape)} disagree (m={m})")
    pt, pl, pb, pr = _pads4(padding)
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    th, tw = winograd_tiles(oh, ow, m)
    dt = data.dtype
    # pad to whole tiles: reads past the output's last row/column see zeros
    padded = pad(data, (0, 0, pt, pl, 0), (0, 0, th * m + 2 - h - pt, tw * m + 2 - w - pl, 0),
                 name=f"{name}_pad")
    ntiles = n * th * tw

    def tile_of(p: PrimExpr) -> tuple[PrimExpr, PrimExpr, PrimExpr]:
        return p // (th * tw), p // tw % th, p % tw

    # input transform, one dimension at a time: rows (B^T d), then columns ((B^T d) B)
    rows = te.compute(
        (cc, ntiles, a, a, ib),
        lambda cb, p, e, j, ci: _select(e, a, lambda ei: _lin(bt[ei], [
            padded[p // (th * tw), cb, p // tw % th * m + r, p % tw * m + j, ci]
            for r in range(a)], dt)),
        name=f"{name}_input_rows", tag="wino_in_rows")
    v = te.compute(
        (a, a, cc, ntiles, ib),
        lambda e, uu, cb, p, ci: _select(uu, a, lambda ui: _lin(bt[ui], [
            rows[cb, p, e, j, ci] for j in range(a)], dt)),
        name=f"{name}_input", tag="winograd_input")
    rcb = te.reduce_axis((0, cc), name="rcb")
    rci = te.reduce_axis((0, ib), name="rci")
    mm = te.compute(
        (a, a, oo, ntiles, ob),
        lambda e, uu, o, p, k: te.sum(v[e, uu, rcb, p, rci] * u[e, uu, o, rcb * ib + rci, k],
                                      axis=[rcb, rci]),
        name=f"{name}_gemm", tag="winograd_gemm")
    # output transform: rows (A^T M) per tile, then columns in the output (epilogue) stage
    orows = te.compute(
        (n, oo, th, tw, m, a, ob),
        lambda b, o, ty, tx, yi, j, k: _select(yi, m, lambda i: _lin(at[i], [
            mm[r, j, o, (b * th + ty) * tw + tx, k] for r in range(a)], dt)),
        name=f"{name}_output_rows", tag="wino_out_rows")

    def y_body(b: Any, o: Any, y: Any, x: Any, k: Any) -> PrimExpr:
        return _select(x % m, m, lambda i: _lin(at[i], [
            orows[b, o, y // m, x // m, y % m, j, k] for j in range(a)], dt))

    return te.compute((n, oo, oh, ow, ob), y_body, name=name, tag="conv2d_winograd_nchwc")
