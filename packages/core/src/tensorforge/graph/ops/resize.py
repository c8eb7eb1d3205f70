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


# resize along one axis with precomputed taps: cubic, antialiased and cropped resizes ------
def _coeffs(ratio: float, scale: float, at: dict[str, Any]) -> tuple[int, np.ndarray]:
    """(offset of the first tap from the left neighbour, weights) as onnx's reference."""
    mode = at["mode"]
    if mode == "nearest":
        m = at.get("nearest_mode", "round_prefer_floor")
        if float(ratio).is_integer():
            w = [0.0, 1.0]
        else:
            w = {"round_prefer_floor": [ratio <= 0.5, ratio > 0.5],
                 "round_prefer_ceil": [ratio < 0.5, ratio >= 0.5],
                 "floor": [1, 0], "ceil": [0, 1]}[m]
        return 0, np.array(w, "float64")
    a = at.get("cubic_a", -0.75)
    if at.get("antialias"):
        s = min(scale, 1.0)
        if mode == "linear":
            start = int(np.floor(-1 / s) + 1)
            args = (np.arange(start, 2 - start) - ratio) * s
            w = np.clip(1 - np.abs(args), 0, 1)
        else:
            start = int(np.floor(-2 / s) + 1)
            xs = np.abs(s * (np.arange(start, 2 - start) - ratio))
            w = np.where(xs <= 1, (a + 2) * xs ** 3 - (a + 3) * xs ** 2 + 1,
                         np.where(xs < 2, a * xs ** 3 - 5 * a * xs ** 2 + 8 * a * xs - 4 * a,
                                  0.0))
        return start, w / w.sum()
    if mode == "linear":
        return 0, np.array([1 - ratio, ratio])
    r = ratio
    return -1, np.array([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                         ((a + 2) * r - (a + 3)) * r * r + 1,
                         ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                         ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a])


def resize_taps(n_in: int, n_out: int, scale: float, at: dict[str, Any],
                roi: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """Per output index: the input indices (clamped, as edge padding) and weights of its
    taps, and whether it takes the extrapolation value (tf_crop_and_resize outside the
    image: weights NaN-free, flagged in a last weight column of 1)."""
    coord = at.get("coord", "half_pixel")
    rows: list[tuple[list[int], list[float], bool]] = []
    width = n_in * scale
    for x in range(n_out):
        if coord == "tf_crop_and_resize":
            xo = ((roi[1] - roi[0]) * (n_in - 1) / 2 if width == 1 else
                  x * (roi[1] - roi[0]) * (n_in - 1) / (width - 1)) + roi[0] * (n_in - 1)
            if xo < 0 or xo > n_in - 1:
                rows.append(([0], [0.0], True))
                continue
        elif coord == "align_corners":
            xo = 0.0 if width == 1 else x * (n_in - 1) / (width - 1)
        elif coord == "asymmetric":
            xo = x / scale
        elif coord == "pytorch_half_pixel" and width == 1:
            xo = -0.5
        elif coord == "half_pixel_symmetric":
            xo = n_in / 2 * (1 - n_out / width) + (x + 0.5) / scale - 0.5
        else:  # half_pixel, pytorch_half_pixel
            xo = (x + 0.5) / scale - 0.5
        left = int(np.ceil(xo)) - 1 if float(xo).is_integer() else int(np.floor(xo))
        first, w = _coeffs(xo - left, scale, at)
        idx = [left + first + t for t in range(len(w))]
        if at.get("exclude_outside"):
            w = np.where([(0 <= i < n_in) for i in idx], w, 0.0)
            w = w / w.sum()
        rows.append(([min(max(i, 0), n_in - 1) for i in idx], list(w), False))
    t = max(len(r[0]) for r in rows)
    index = np.zeros((n_out, t), "int32")
    weight = np.zeros((n_out, t + 1), "float32")
    for o, (ii, ww, ext) in enumerate(rows):
        index[o, :len(ii)] = ii
        weight[o, :len(ww)] = ww
        weight[o, t] = 1.0 if ext else 0.0
    return index, weight


def _taps_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, index, weight = ins
    axis = at["axis"]
    t = index.shape[1]
    xm = np.moveaxis(x.astype("float64"), axis, -1)
    y = (xm[..., index] * weight[:, :t]).sum(-1)
    y = np.where(weight[:, t] > 0, at.get("extrapolation", 0.0), y)
    return [np.moveaxis(y, -1, axis).astype(x.dtype)]


def _taps_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, index, weight = ins
    axis = at["axis"]
    t = int(index.shape[1].value)

    def f(*i: Any) -> Any:
        o = i[axis]
        acc = None
        for k in range(t):
            src = tuple(index[o, const(k)] if d == axis else v for d, v in enumerate(i))
            term = weight[o, const(k)] * te.cast(x[src], "float32")
            acc = term if acc is None else acc + term
        ext = weight[o, const(t)] > const(0.0, "float32")
        acc = te.select(ext, const(at.get("extrapolation", 0.0), "float32"), acc)
        return te.cast(acc, x.dtype)

    return [te.compute(out[0][0], f, name="resize_taps", tag="injective")]


def _taps_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape = list(types[0][0])
    shape[at["axis"]] = types[1][0][0]
    return [(tuple(shape), types[0][1])]


register_op("resize_taps", OpPattern.INJECTIVE, _taps_infer, _taps_ref, _taps_compute,
            doc="resize along attrs axis with tap tables (index (out, T) int32, weight "
            "(out, T+1) float32: the last column flags extrapolation); attr extrapolation")
