"""TE computes of the blocked-layout ops the graph's layout pass introduces: layout transforms
(NCHW <-> NCHW[x]c, OIHW -> OIHW[x]i[y]o, NK -> NK[y]n), depthwise convolution in NCHW[x]c,
dense with packed weights, pooling in NCHW[x]c and the sub-pixel shuffle of a transposed
convolution. Direct convolution in NCHW[x]c is ``nn_nchwc.conv2d_nchwc``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import te
from ..expr import IntImm, const
from ..runtime.transforms import parse_layout  # numpy only: shared with `load`
from ..te import Tensor
from .nn import _int, conv_geometry, pad, pool_geometry

__all__ = ["avg_pool2d_nchwc", "dense_packed", "depthwise_conv2d_nchwc",
           "global_avg_pool2d_nchwc", "layout_transform", "max_pool2d_nchwc", "parse_layout",
           "pixel_shuffle"]

def layout_transform(x: Tensor, src: str, dst: str, name: str = "layout_transform") -> Tensor:
    """Re-lay ``x`` from ``src`` to ``dst`` (same base layout, different blocking)."""
    base, sb = parse_layout(src)
    base2, db = parse_layout(dst)
    if base != base2:
        raise ValueError(f"layout_transform {src} -> {dst}: different base layouts")
    shape = [_int(d) for d in x.shape]
    if base == "NCHW":
        c = shape[1] * (sb.get("c", 1))
        n, h, w = shape[0], shape[2], shape[3]

        def read(nn: Any, cc: Any, yy: Any, xx: Any) -> Any:
            if "c" in sb:
                return x[nn, cc // sb["c"], yy, xx, cc % sb["c"]]
            return x[nn, cc, yy, xx]

        if "c" in db:
            b = db["c"]
            return te.compute((n, c // b, h, w, b),
                              lambda nn, co, yy, xx, ci: read(nn, co * b + ci, yy, xx),
                              name=name, tag="injective,layout_transform")
        return te.compute((n, c, h, w), read, name=name, tag="injective,layout_transform")
    if base == "OIHW":
        if sb:
            raise ValueError("layout_transform: only OIHW -> OIHW<x>i<y>o")
        ib, ob = db["i"], db["o"]
        o, c, kh, kw = shape
        return te.compute((o // ob, c // ib, kh, kw, ib, ob),
                          lambda oo, co, y, xx, ci, oi: x[oo * ob + oi, co * ib + ci, y, xx],
                          name=name, tag="injective,layout_transform")
    if sb:
        raise ValueError("layout_transform: only NK -> NK<y>n")
    nb = db["n"]
    nn_, k = shape
    return te.compute((nn_ // nb, k, nb), lambda no, kk, ni: x[no * nb + ni, kk],
                      name=name, tag="injective,layout_transform")


def depthwise_conv2d_nchwc(data: Tensor, kernel: Tensor, stride: int | Sequence[int] = 1,
                           padding: int | Sequence[int] = 0,
                           dilation: int | Sequence[int] = 1,
                           name: str = "depthwise_conv2d_nchwc") -> Tensor:
    """data (N, C/x, H, W, x), kernel (C/x, 1, KH, KW, 1, x) -> (N, C/x, OH, OW, x)."""
    n, cc, h, w, bn = (_int(s) for s in data.shape)
    _, _, kh, kw, _, bn2 = (_int(s) for s in kernel.shape)
    if bn != bn2:
        raise ValueError(f"depthwise_conv2d_nchwc: data block {bn} != kernel block {bn2}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow) = conv_geometry(
        h, w, kh, kw, stride, padding, dilation)
    padded = pad(data, (0, 0, pt, pl, 0), (0, 0, pb, pr, 0), name=f"{name}_pad")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, cc, oh, ow, bn),
        lambda nn, c, yy, xx, b: te.sum(
            padded[nn, c, yy * sh + ry * dh, xx * sw + rx * dw, b] * kernel[c, 0, ry, rx, 0, b],
            axis=[ry, rx]),
        name=name, tag="depthwise_conv2d_nchwc")


def _as(e: Any, dtype: str | None) -> Any:
    return e if dtype is None or e.dtype == dtype else e.astype(dtype)


def dense_packed(data: Tensor, weight: Tensor, name: str = "dense_packed",
                 units: int | None = None, out_dtype: str | None = None) -> Tensor:
    """data (M, K), weight packed (N/y, K, y) -> (M, N); `units` < N: the last panel is
    zero-padded and only the first `units` columns are computed (a classifier of 10);
    `out_dtype`: products and sum in that type (int8 x int8 -> int32)."""
    m, k = data.shape[0], _int(data.shape[1])  # m may be a symbolic size
    m = m.value if isinstance(m, IntImm) else m
    no, k2, nb = (_int(s) for s in weight.shape)
    if k != k2:
        raise ValueError(f"dense_packed: inner dimensions {k} and {k2} differ")
    r = te.reduce_axis((0, k), name="k")
    return te.compute((m, units or no * nb),
                      lambda i, j: te.sum(_as(data[i, r], out_dtype)
                                          * _as(weight[j // nb, r, j % nb], out_dtype), axis=r),
                      name=name, tag="dense_packed")


def _pool_nchwc(data: Tensor, kernel: Sequence[int], stride: Any, padding: Any,
                ceil_mode: bool, fill: float, name: str) -> tuple[Tensor, tuple[int, ...]]:
    n, cc, h, w, bn = (_int(s) for s in data.shape)
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (oh, ow), (eb, er) = pool_geometry(
        h, w, kernel, stride, padding, ceil_mode)
    padded = pad(data, (0, 0, pt, pl, 0), (0, 0, eb, er, 0), value=fill, name=f"{name}_pad")
    return padded, (n, cc, oh, ow, bn, kh, kw, sh, sw, pt, pl, pb, pr, h, w)


def max_pool2d_nchwc(data: Tensor, kernel: Sequence[int], stride: Any = 1, padding: Any = 0,
                     ceil_mode: bool = False, name: str = "max_pool2d_nchwc") -> Tensor:
    lowest = float("-inf") if data.dtype.startswith("float") else te.min_value(data.dtype).value
    padded, (n, cc, oh, ow, bn, kh, kw, sh, sw, *_) = _pool_nchwc(
        data, kernel, stride, padding, ceil_mode, lowest, name)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute((n, cc, oh, ow, bn), lambda nn, c, yy, xx, b: te.max(
        padded[nn, c, yy * sh + ry, xx * sw + rx, b], axis=[ry, rx]), name=name, tag="pool_max")


def avg_pool2d_nchwc(data: Tensor, kernel: Sequence[int], stride: Any = 1, padding: Any = 0,
                     count_include_pad: bool = False, ceil_mode: bool = False,
                     name: str = "avg_pool2d_nchwc") -> Tensor:
    padded, (n, cc, oh, ow, bn, kh, kw, sh, sw, pt, pl, pb, pr, h, w) = _pool_nchwc(
        data, kernel, stride, padding, ceil_mode, 0.0, name)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    s = te.compute((n, cc, oh, ow, bn), lambda nn, c, yy, xx, b: te.sum(
        padded[nn, c, yy * sh + ry, xx * sw + rx, b], axis=[ry, rx]), name=f"{name}_sum",
        tag="pool_sum")

    def count(yy: Any, xx: Any) -> Any:
        if count_include_pad:
            y0, x0 = yy * sh - pt, xx * sw - pl
            y1, x1 = te.min_expr(y0 + kh, h + pb), te.min_expr(x0 + kw, w + pr)
        else:
            y0, x0 = te.max_expr(yy * sh - pt, 0), te.max_expr(xx * sw - pl, 0)
            y1 = te.min_expr(yy * sh - pt + kh, h)
            x1 = te.min_expr(xx * sw - pl + kw, w)
        return ((y1 - y0) * (x1 - x0)).astype(data.dtype)

    return te.compute((n, cc, oh, ow, bn),
                      lambda nn, c, yy, xx, b: s[nn, c, yy, xx, b] / count(yy, xx),
                      name=name, tag="elemwise")


def global_avg_pool2d_nchwc(data: Tensor, name: str = "global_avg_pool2d_nchwc") -> Tensor:
    n, cc, h, w, bn = (_int(s) for s in data.shape)
    ry = te.reduce_axis((0, h), name="ry")
    rx = te.reduce_axis((0, w), name="rx")
    s = te.compute((n, cc, 1, 1, bn), lambda nn, c, y, x, b: te.sum(
        data[nn, c, ry, rx, b], axis=[ry, rx]), name=f"{name}_sum", tag="reduce")
    return te.compute((n, cc, 1, 1, bn), lambda *i: s[i] / const(float(h * w), data.dtype),
                      name=name, tag="elemwise")


def pixel_shuffle(x: Tensor, stride: int, offset: tuple[int, int], out_hw: tuple[int, int],
                  name: str = "pixel_shuffle") -> Tensor:
    """The interleave of a sub-pixel transposed convolution: ``x`` holds ``s*s`` phases of
    ``O`` channels (phase-major); out[n, o, y, x'] = x[n, phase * O + o, (y+py)//s, (x'+px)//s]
    with phase = ((y+py) % s) * s + (x'+px) % s. 4-D (NCHW) or 5-D (NCHW[x]c, O % x == 0)."""
    s = stride
    py, px = offset
    oh, ow = out_hw
    shape = [_int(d) for d in x.shape]
    blocked = len(shape) == 5
    oc = shape[1] // (s * s)

    def src(nn: Any, c: Any, yy: Any, xx: Any, *b: Any) -> Any:
        ty, tx = yy + py, xx + px
        phase = (ty % s) * s + tx % s
        return x[(nn, phase * oc + c, ty // s - py // s, tx // s - px // s, *b)]

    out_shape = (shape[0], oc, oh, ow, *shape[4:]) if blocked else (shape[0], oc, oh, ow)
    return te.compute(out_shape, src, name=name, tag="injective")


def channel_shuffle(x: Tensor, groups: int, padded: tuple[int, int] | None = None,
                    name: str = "channel_shuffle") -> Tensor:
    """out channel c' = j * groups + i reads input channel i * (C / groups) + j, on NCHW or
    NCHW[x]c (the source channel's block and lane computed per output lane). With `padded`
    = (S, P) (NCHW[x]c only; channels padded to whole blocks, `passes/layout_padding.py`),
    input and output hold each run of S = C / groups channels in P slots; the output's
    padding slots are zero."""
    shape = [_int(d) for d in x.shape]
    blocked = len(shape) == 5
    bn = shape[4] if blocked else 1
    per = shape[1] * bn // groups

    def src(nn: Any, c: Any, yy: Any, xx: Any, *b: Any) -> Any:
        ch = c * bn + b[0] if blocked else c
        if padded:  # slot -> logical channel -> its source channel -> the source's slot
            real, slots = padded
            k = (ch // slots) * real + ch % slots
            lg = (k % groups) * real + k // groups
            at = (lg // real) * slots + lg % real
            return te.if_then_else(ch % slots < real, x[(nn, at // bn, yy, xx, at % bn)],
                                   const(0.0, x.dtype))
        at = (ch % groups) * per + ch // groups
        return x[(nn, at // bn, yy, xx, at % bn)] if blocked else x[nn, at, yy, xx]

    return te.compute(tuple(shape), src, name=name, tag="injective")
