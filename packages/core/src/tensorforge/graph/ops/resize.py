"""resize: nearest and (multi-)linear interpolation over any dims, ONNX Resize semantics.

Attrs: `size` (the output shape), `scales` (one float per dim; 1.0 where unchanged), `mode`
("nearest" | "linear"), `coord` (ONNX coordinate_transformation_mode) and `nearest_mode`.
Coordinates are computed in float32, as onnxruntime does."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ... import te
from ...expr import const
from ..registry import OpPattern, TypeList, register_op

F32 = np.float32


def _coord_np(i: np.ndarray, scale: float, n_in: int, n_out: int, mode: str) -> np.ndarray:
    i = i.astype(F32)
    s = F32(scale)
    if mode == "half_pixel":
        return (i + F32(0.5)) / s - F32(0.5)
    if mode == "pytorch_half_pixel":
        return (i + F32(0.5)) / s - F32(0.5) if n_out > 1 else np.zeros_like(i)
    if mode == "align_corners":
        n_f = n_in * scale  # ONNX: the unrounded resized length
        return i * F32((n_in - 1) / (n_f - 1)) if n_f > 1 else np.zeros_like(i)
    if mode == "asymmetric":
        return i / s
    if mode == "tf_half_pixel_for_nearest":
        return (i + F32(0.5)) / s
    if mode == "half_pixel_symmetric":
        adj = F32(n_out / (scale * n_in))
        off = F32(n_in / 2) * (F32(1) - adj)
        return off + (i + F32(0.5)) / s - F32(0.5)
    raise ValueError(f"resize: unknown coordinate mode {mode!r}")


def _coord_te(i: Any, scale: float, n_in: int, n_out: int, mode: str) -> Any:
    x = te.cast(i, "float32")

    def c(v: float) -> Any:
        return const(float(F32(v)), "float32")

    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and n_out <= 1:
            return c(0.0)
        return (x + c(0.5)) / c(scale) - c(0.5)
    if mode == "align_corners":
        n_f = n_in * scale
        return x * c((n_in - 1) / (n_f - 1)) if n_f > 1 else c(0.0)
    if mode == "asymmetric":
        return x / c(scale)
    if mode == "tf_half_pixel_for_nearest":
        return (x + c(0.5)) / c(scale)
    if mode == "half_pixel_symmetric":
        adj = float(F32(n_out / (scale * n_in)))
        off = float(F32(n_in / 2) * (F32(1) - F32(adj)))
        return c(off) + (x + c(0.5)) / c(scale) - c(0.5)
    raise ValueError(f"resize: unknown coordinate mode {mode!r}")


_ROUND_NP = {
    "round_prefer_floor": lambda x: np.ceil(x - F32(0.5)),
    "round_prefer_ceil": lambda x: np.floor(x + F32(0.5)),
    "floor": np.floor,
    "ceil": np.ceil,
}
_ROUND_TE = {
    "round_prefer_floor": lambda x: te.ceil(x - const(0.5, "float32")),
    "round_prefer_ceil": lambda x: te.floor(x + const(0.5, "float32")),
    "floor": te.floor,
    "ceil": te.ceil,
}


def _resized(at: dict[str, Any], in_shape: tuple[int, ...]) -> list[int]:
    return [d for d, (a, b, s) in enumerate(zip(in_shape, at["size"], at["scales"]))
            if a != b or s != 1.0]


def _ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    dims = _resized(at, x.shape)
    mode, coord = at.get("mode", "nearest"), at.get("coord", "half_pixel")
    idx: list[Any] = [np.arange(n) for n in x.shape]
    if mode == "nearest":
        rnd = _ROUND_NP[at.get("nearest_mode", "round_prefer_floor")]
        for d in dims:
            xs = _coord_np(np.arange(at["size"][d]), at["scales"][d], x.shape[d],
                           at["size"][d], coord)
            idx[d] = np.clip(rnd(xs).astype("int64"), 0, x.shape[d] - 1)
        return [x[np.ix_(*idx)]]
    lo, hi, wt = {}, {}, {}
    for d in dims:
        xs = _coord_np(np.arange(at["size"][d]), at["scales"][d], x.shape[d], at["size"][d],
                       coord)
        f = np.floor(xs)
        lo[d] = np.clip(f.astype("int64"), 0, x.shape[d] - 1)
        hi[d] = np.clip(f.astype("int64") + 1, 0, x.shape[d] - 1)
        wt[d] = (xs - f).astype(F32)
    out = np.zeros(at["size"], dtype=F32)
    for corner in itertools.product((0, 1), repeat=len(dims)):
        ii = list(idx)
        w: Any = F32(1)
        for d, c in zip(dims, corner):
            ii[d] = hi[d] if c else lo[d]
            shp = [1] * x.ndim
            shp[d] = -1
            w = w * (wt[d] if c else F32(1) - wt[d]).reshape(shp)
        out = out + w * x[np.ix_(*ii)].astype(F32)
    return [out.astype(x.dtype)]


def _compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    shape = tuple(int(s.value) for s in x.shape)
    dims = _resized(at, shape)
    mode, coord = at.get("mode", "nearest"), at.get("coord", "half_pixel")

    def src(d: int, i: Any) -> Any:
        return _coord_te(i, at["scales"][d], shape[d], at["size"][d], coord)

    def clamp(v: Any, d: int) -> Any:
        return te.min_expr(te.max_expr(v, const(0)), const(shape[d] - 1))

    if mode == "nearest":
        rnd = _ROUND_TE[at.get("nearest_mode", "round_prefer_floor")]

        def fn(*i: Any) -> Any:
            ii = list(i)
            for d in dims:
                ii[d] = clamp(te.cast(rnd(src(d, i[d])), "int32"), d)
            return x[tuple(ii)]

        return [te.compute(out[0][0], fn, name="resize_nearest", tag="injective")]

    if len(dims) >= 2:  # separable: the last resized axis first, at the input's other sizes
        last = dims[-1]
        mid_shape = tuple(at["size"][d] if d == last else shape[d] for d in range(len(shape)))
        mid = te.compute(mid_shape, _lerp(x, [last], src, clamp), name="resize_linear_rows",
                         tag="injective_root")
        return [te.compute(out[0][0], _lerp(mid, dims[:-1], src, clamp, x.dtype),
                           name="resize_linear", tag="injective")]
    return [te.compute(out[0][0], _lerp(x, dims, src, clamp, x.dtype), name="resize_linear",
                       tag="injective")]


def _lerp(x: Any, dims: list[int], src: Any, clamp: Any, out_dtype: str = "float32") -> Any:
    """Linear interpolation of `x` along `dims` (the sum over the 2^len(dims) corners)."""

    def fl(*i: Any) -> Any:
        lo, hi, w = {}, {}, {}
        for d in dims:
            xs = src(d, i[d])
            f = te.floor(xs)
            fi = te.cast(f, "int32")
            lo[d], hi[d], w[d] = clamp(fi, d), clamp(fi + 1, d), xs - f
        acc = None
        for corner in itertools.product((0, 1), repeat=len(dims)):
            ii = list(i)
            wc = None
            for d, c in zip(dims, corner):
                ii[d] = hi[d] if c else lo[d]
                term = w[d] if c else const(1.0, "float32") - w[d]
                wc = term if wc is None else wc * term
            v = te.cast(x[tuple(ii)], "float32")
            v = v if wc is None else wc * v
            acc = v if acc is None else acc + v
        return te.cast(acc, out_dtype)

    return fl


register_op("resize", OpPattern.INJECTIVE, lambda types, at: [(tuple(at["size"]), types[0][1])],
            _ref, _compute, doc="ONNX Resize (nearest | linear over any dims); attrs size, "
            "scales, mode, coord, nearest_mode")
