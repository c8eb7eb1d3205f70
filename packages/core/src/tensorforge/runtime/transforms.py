"""Weight transforms in numpy, shared by the compiler (constant folding) and `tensorforge.load`.

A package stores a packed or Winograd-transformed weight as the smaller array it was computed
from plus the name of the transform (`params_store.Derived`); `load` recomputes it with the
same function the compiler used, so the result is bit-identical (checked at export). Each
transform is deterministic: elementwise numpy arithmetic in a fixed order, no BLAS (whose
results may depend on the machine or thread count).

`TRANSFORMS` maps a transform's name to `fn(array, **attrs) -> array`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction as Fr
from typing import Any

import numpy as np

__all__ = ["TRANSFORMS", "np_layout_transform", "parse_layout", "winograd_matrices",
           "winograd_weight_transform"]

_LAYOUT = re.compile(r"^(NCHW|OIHW|NK)((?:\d+[a-z])*)$")


def parse_layout(layout: str) -> tuple[str, dict[str, int]]:
    """("NCHW16c") -> ("NCHW", {"c": 16}); ("OIHW16i32o") -> ("OIHW", {"i": 16, "o": 32})."""
    m = _LAYOUT.match(layout) if isinstance(layout, str) else None
    if m is None:
        raise ValueError(f"unknown layout {layout!r} (NCHW, NCHW<x>c, OIHW, OIHW<x>i<y>o, NK, "
                         "NK<y>n)")
    return m.group(1), {k: int(v) for v, k in re.findall(r"(\d+)([a-z])", m.group(2))}


def np_layout_transform(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """numpy version of the `layout_transform` op: NCHW <-> NCHW<x>c, OIHW -> OIHW<x>i<y>o,
    NK -> NK<y>n (a pure permutation of the elements)."""
    base, sb = parse_layout(src)
    base2, db = parse_layout(dst)
    if base != base2:
        raise ValueError(f"layout_transform {src} -> {dst}: different base layouts")
    if base == "NCHW":
        if "c" in sb:  # unpack to NCHW
            n, cc, h, w, b = x.shape
            x = x.transpose(0, 1, 4, 2, 3).reshape(n, cc * b, h, w)
        if "c" in db:
            n, c, h, w = x.shape
            b = db["c"]
            x = x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2)
        return np.ascontiguousarray(x)
    if base == "OIHW":
        o, c, kh, kw = x.shape
        ib, ob = db["i"], db["o"]
        return np.ascontiguousarray(
            x.reshape(o // ob, ob, c // ib, ib, kh, kw).transpose(0, 2, 4, 5, 3, 1))
    n, k = x.shape
    b = db["n"]
    return np.ascontiguousarray(x.reshape(n // b, b, k).transpose(0, 2, 1))


# (B^T, G, A^T) of F(m x m, 3 x 3), exact
_F = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
         [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[Fr(1, 4), 0, 0], [Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)], [Fr(-1, 6), Fr(1, 6), Fr(-1, 6)],
         [Fr(1, 24), Fr(1, 12), Fr(1, 6)], [Fr(1, 24), Fr(-1, 12), Fr(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}


def winograd_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B^T, G, A^T) of F(m x m, 3 x 3) as float64 arrays; m is 2 or 4."""
    if m not in _F:
        raise ValueError(f"winograd: tile size m={m} (2 or 4 supported)")
    return tuple(np.array([[float(v) for v in row] for row in mat]) for mat in _F[m])


def _combine(coefs: np.ndarray, planes: list[np.ndarray]) -> np.ndarray:
    """sum_i coefs[i] * planes[i] over the non-zero coefficients, in index order (float64,
    elementwise: the same bits on every machine; +-1 terms as adds and subtracts, which IEEE
    arithmetic makes identical to multiplying by +-1 first)."""
    acc = tmp = None
    for c, p in zip(coefs, planes):
        if c == 0:
            continue
        if acc is None:
            acc = p.copy() if c == 1 else np.multiply(p, c)
        elif c == 1:
            acc += p
        elif c == -1:
            acc -= p
        else:
            tmp = np.multiply(p, c, out=tmp)
            acc += tmp
    return acc if acc is not None else np.zeros_like(planes[0])


#: float64 elements per chunk of output channels the Winograd transform works on at once
#: (its ~30 live planes then stay in the cache)
_CHUNK = 1 << 14


def winograd_weight_transform(w: np.ndarray, m: int, ob: int) -> np.ndarray:
    """numpy OIHW (O, C, 3, 3) -> U (a, a, O/ob, C, ob) with U[e, u] = (G g G^T)[e, u],
    computed in float64 (each element by the same sums in the same order, whatever the
    chunking) and rounded once to w's dtype."""
    _, g, _ = winograd_matrices(m)
    o, c, kh, kw = w.shape
    if (kh, kw) != (3, 3) or o % ob:
        raise ValueError(f"winograd_weight_transform: weights {w.shape}, block {ob}")
    a, nb = m + 2, o // ob
    # taps[i, j]: tap (i, j) of every filter as an (O/ob, C, ob) plane, U's own layout
    taps = np.ascontiguousarray(np.asarray(w).reshape(nb, ob, c, 3, 3).transpose(3, 4, 0, 2, 1),
                                dtype="float64")
    u = np.empty((a, a, nb, c, ob), dtype=w.dtype)
    step = max(1, _CHUNK // max(1, c * ob))
    for b0 in range(0, nb, step):
        t = taps[:, :, b0:b0 + step]
        rows = [[_combine(g[e], [t[i, j] for i in range(3)]) for j in range(3)]
                for e in range(a)]  # (G g)[e, j]
        for e in range(a):
            for v in range(a):
                u[e, v, b0:b0 + step] = _combine(g[v], rows[e])  # (G g G^T)[e, v]
    return u


def _layout(x: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:
    return np_layout_transform(x, src_layout, dst_layout)


TRANSFORMS: dict[str, Callable[..., np.ndarray]] = {
    "layout_transform": _layout,
    "winograd_weight_transform": winograd_weight_transform,
}


def apply_transform(name: str, x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """`TRANSFORMS[name](x, **attrs)`; a `ValueError` for an unknown name or bad attributes."""
    fn = TRANSFORMS.get(name)
    if fn is None:
        raise ValueError(f"unknown parameter transform {name!r} (known: "
                         f"{', '.join(TRANSFORMS)})")
    try:
        return fn(x, **attrs)
    except (TypeError, KeyError, IndexError) as e:
        raise ValueError(f"transform {name!r} with {attrs}: {e}") from None
