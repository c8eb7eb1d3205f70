"""Neural-network operators as tensor expressions: padding, convolutions, pooling, dense,
softmax. Padding is a separate injective stage so schedules can inline it or compute it at a
tile of the convolution."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import te
from ..expr import IntImm, PrimExpr, const
from ..te import Tensor


def _int(e: PrimExpr | int) -> int:
    if isinstance(e, int):
        return e
    if not isinstance(e, IntImm):
        raise ValueError(f"expected a static dimension, got {e}")
    return e.value


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def conv_geometry(
    h: int, w: int, kh: int, kw: int, stride: int | Sequence[int],
    padding: int | Sequence[int], dilation: int | Sequence[int],
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int], tuple[int, int]]:
    """(strides, dilations, pads (top, left, bottom, right), output (height, width)) of a
    2-D convolution window over an h x w input."""
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pads4(padding)
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    return (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow)


def _pads4(p: int | Sequence[int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, (h, w) or (t, l, b, r)."""
    if isinstance(p, int):
        return p, p, p, p
    p = tuple(p)
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    return p[0], p[1], p[2], p[3]


def pad(
    a: Tensor, before: Sequence[int], after: Sequence[int], value: float = 0.0,
    name: str = "pad",
) -> Tensor:
    """Constant padding; reads outside the input are guarded (if_then_else), never made."""
    if all(b == 0 for b in before) and all(x == 0 for x in after):
        return a
    shape = [_int(s) + b + x for s, b, x in zip(a.shape, before, after)]
    if not a.dtype.startswith("float") and value in (float("inf"), float("-inf")):
        import numpy as np  # an integer max pool's -inf fill: the type's least value

        info = np.iinfo(a.dtype)
        value = info.max if value > 0 else info.min

    def f(*i):  # type: ignore[no-untyped-def]
        conds = []
        src = []
        for d, idx in enumerate(i):
            if before[d] or after[d]:
                conds.append(idx >= before[d])
                conds.append(idx < before[d] + _int(a.shape[d]))
            src.append(idx - before[d])
        return te.if_then_else(te.all(*conds), a[tuple(src)], const(value, a.dtype))

    return te.compute(shape, f, name=name, tag="injective,pad")


def conv2d_nchw(
    data: Tensor, kernel: Tensor, stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1,
    out_dtype: str | None = None, name: str = "conv2d",
) -> Tensor:
    """data (N, C, H, W), kernel (O, C/groups, KH, KW) -> (N, O, OH, OW)."""
    n, c, h, w = (_int(s) for s in data.shape)
    o, cg, kh, kw = (_int(s) for s in kernel.shape)
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pads4(padding)
    if c != cg * groups or o % groups:
        raise ValueError(
            f"conv2d: input channels {c} and kernel {tuple(kernel.shape)} do not match "
            f"groups={groups}"
        )
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out_dtype = out_dtype or data.dtype
    padded = pad(data, (0, 0, pt, pl), (0, 0, pb, pr), name=f"{name}_pad")
    rc = te.reduce_axis((0, cg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    opg = o // groups

    def f(nn, ff, yy, xx):  # type: ignore[no-untyped-def]
        cin = rc if groups == 1 else (ff // opg) * cg + rc
        return te.sum(
            padded[nn, cin, yy * sh + ry * dh, xx * sw + rx * dw].astype(out_dtype)
            * kernel[ff, rc, ry, rx].astype(out_dtype),
            axis=[rc, ry, rx],
        )

    return te.compute((n, o, oh, ow), f, name=name, tag="conv2d_nchw")


def conv2d_nhwc(
    data: Tensor, kernel: Tensor, stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
    out_dtype: str | None = None, name: str = "conv2d_nhwc",
) -> Tensor:
    """data (N, H, W, C), kernel (KH, KW, C, O) -> (N, OH, OW, O)."""
    n, h, w, c = (_int(s) for s in data.shape)
    kh, kw, c2, o = (_int(s) for s in kernel.shape)
    if c != c2:
        raise ValueError(f"conv2d_nhwc: input channels {c} != kernel channels {c2}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow) = conv_geometry(
        h, w, kh, kw, stride, padding, dilation)
    out_dtype = out_dtype or data.dtype
    padded = pad(data, (0, pt, pl, 0), (0, pb, pr, 0), name=f"{name}_pad")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, oh, ow, o),
        lambda nn, yy, xx, ff: te.sum(
            padded[nn, yy * sh + ry * dh, xx * sw + rx * dw, rc].astype(out_dtype)
            * kernel[ry, rx, rc, ff].astype(out_dtype),
            axis=[ry, rx, rc],
        ),
        name=name,
        tag="conv2d_nhwc",
    )


def depthwise_conv2d_nchw(
    data: Tensor, kernel: Tensor, stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
    name: str = "depthwise_conv2d", out_dtype: str | None = None,
) -> Tensor:
    """data (N, C, H, W), kernel (C*M, 1, KH, KW) -> (N, C*M, OH, OW)."""
    n, c, h, w = (_int(s) for s in data.shape)
    o, one, kh, kw = (_int(s) for s in kernel.shape)
    if one != 1 or o % c:
        raise ValueError(f"depthwise conv: kernel {tuple(kernel.shape)} for {c} channels")
    m = o // c
    out_dtype = out_dtype or data.dtype
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow) = conv_geometry(
        h, w, kh, kw, stride, padding, dilation)
    padded = pad(data, (0, 0, pt, pl), (0, 0, pb, pr), name=f"{name}_pad")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, o, oh, ow),
        lambda nn, ff, yy, xx: te.sum(
            padded[nn, ff // m, yy * sh + ry * dh, xx * sw + rx * dw].astype(out_dtype)
            * kernel[ff, 0, ry, rx].astype(out_dtype),
            axis=[ry, rx],
        ),
        name=name,
        tag="depthwise_conv2d_nchw",
    )


def _pool_out(h: int, k: int, s: int, p0: int, p1: int, ceil_mode: bool) -> int:
    num = h + p0 + p1 - k
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= h + p0:
        # ceil_mode never adds a window that starts in the trailing padding (onnxruntime,
        # PyTorch): it would hold padding only (-inf for max, a zero count for avg)
        out -= 1
    return out


def pool_geometry(
    h: int, w: int, kernel: Sequence[int], stride: Sequence[int] | int,
    padding: int | Sequence[int], ceil_mode: bool,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int], tuple[int, int],
           tuple[int, int]]:
    """(kernel, strides, pads (top, left, bottom, right), output (height, width), extra
    bottom/right padding that ceil_mode's last window reaches) of a pooling window."""
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride)
    pt, pl, pb, pr = _pads4(padding)
    oh = _pool_out(h, kh, sh, pt, pb, ceil_mode)
    ow = _pool_out(w, kw, sw, pl, pr, ceil_mode)
    eb = max(0, (oh - 1) * sh + kh - h - pt)
    er = max(0, (ow - 1) * sw + kw - w - pl)
    return (kh, kw), (sh, sw), (pt, pl, pb, pr), (oh, ow), (eb, er)


def _pool_window(data: Tensor, kernel: Sequence[int], stride: Sequence[int] | int,
                 padding: int | Sequence[int], ceil_mode: bool, fill: float, name: str,
                 ) -> tuple[tuple[int, int, int, int], tuple[int, int],
                            tuple[int, int, int, int], Tensor, Any, Any]:
    """Output shape, strides, pads, the input padded with `fill` (also past the bottom/right
    edge where ceil_mode needs it) and the two window axes of an NCHW pooling."""
    n, c, h, w = (_int(s) for s in data.shape)
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (oh, ow), (eb, er) = pool_geometry(
        h, w, kernel, stride, padding, ceil_mode)
    padded = pad(data, (0, 0, pt, pl), (0, 0, eb, er), value=fill, name=f"{name}_pad")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return (n, c, oh, ow), (sh, sw), (pt, pl, pb, pr), padded, ry, rx


def max_pool2d(
    data: Tensor, kernel: Sequence[int], stride: Sequence[int] | int = 1,
    padding: int | Sequence[int] = 0, ceil_mode: bool = False, name: str = "max_pool2d",
) -> Tensor:
    """NCHW max pooling; padded positions never win (they are -inf)."""
    lowest = float("-inf") if data.dtype.startswith("float") else te.min_value(data.dtype).value
    (n, c, oh, ow), (sh, sw), _, padded, ry, rx = _pool_window(
        data, kernel, stride, padding, ceil_mode, lowest, name)
    return te.compute(
        (n, c, oh, ow),
        lambda nn, cc, yy, xx: te.max(padded[nn, cc, yy * sh + ry, xx * sw + rx], axis=[ry, rx]),
        name=name,
        tag="pool_max",
    )


def avg_pool2d(
    data: Tensor, kernel: Sequence[int], stride: Sequence[int] | int = 1,
    padding: int | Sequence[int] = 0, count_include_pad: bool = False, ceil_mode: bool = False,
    name: str = "avg_pool2d",
) -> Tensor:
    """NCHW average pooling (ONNX semantics for count_include_pad)."""
    (n, c, oh, ow), (sh, sw), (pt, pl, pb, pr), padded, ry, rx = _pool_window(
        data, kernel, stride, padding, ceil_mode, 0.0, name)
    h, w = (_int(s) for s in data.shape[2:])
    kh, kw = _pair(kernel)
    s = te.compute(
        (n, c, oh, ow),
        lambda nn, cc, yy, xx: te.sum(padded[nn, cc, yy * sh + ry, xx * sw + rx], axis=[ry, rx]),
        name=f"{name}_sum",
        tag="pool_sum",
    )

    def count(yy, xx):  # type: ignore[no-untyped-def]
        if count_include_pad:
            y0, x0 = yy * sh - pt, xx * sw - pl
            y1 = te.min_expr(y0 + kh, h + pb)
            x1 = te.min_expr(x0 + kw, w + pr)
            return ((y1 - y0) * (x1 - x0)).astype(data.dtype)
        y0 = te.max_expr(yy * sh - pt, 0)
        x0 = te.max_expr(xx * sw - pl, 0)
        y1 = te.min_expr(yy * sh - pt + kh, h)
        x1 = te.min_expr(xx * sw - pl + kw, w)
        return ((y1 - y0) * (x1 - x0)).astype(data.dtype)

    return te.compute(
        (n, c, oh, ow),
        lambda nn, cc, yy, xx: s[nn, cc, yy, xx] / count(yy, xx),
        name=name,
        tag="elemwise",
    )


def global_avg_pool2d(data: Tensor, name: str = "global_avg_pool2d") -> Tensor:
    n, c, h, w = (_int(s) for s in data.shape)
    ry = te.reduce_axis((0, h), name="ry")
    rx = te.reduce_axis((0, w), name="rx")
    s = te.compute((n, c, 1, 1), lambda nn, cc, y, x: te.sum(data[nn, cc, ry, rx], axis=[ry, rx]),
                   name=f"{name}_sum", tag="reduce")
    return te.compute((n, c, 1, 1), lambda *i: s[i] / const(float(h * w), data.dtype),
                      name=name, tag="elemwise")


def matmul(a: Tensor, b: Tensor, name: str = "matmul", out_dtype: str | None = None) -> Tensor:
    """(M, K) x (K, N) -> (M, N)."""
    m, k = a.shape
    k2, n = b.shape
    if _int(k) != _int(k2):
        raise ValueError(f"matmul: inner dimensions {k} and {k2} differ")
    out_dtype = out_dtype or a.dtype
    r = te.reduce_axis((0, k), name="k")
    return te.compute(
        (m, n),
        lambda i, j: te.sum(a[i, r].astype(out_dtype) * b[r, j].astype(out_dtype), axis=r),
        name=name,
        tag="matmul",
    )


def dense(data: Tensor, weight: Tensor, name: str = "dense", out_dtype: str | None = None
          ) -> Tensor:
    """(M, K) x (N, K)^T -> (M, N), the layout of ONNX Gemm with transB and of nn.Linear."""
    m, k = data.shape
    n, k2 = weight.shape
    if _int(k) != _int(k2):
        raise ValueError(f"dense: inner dimensions {k} and {k2} differ")
    out_dtype = out_dtype or data.dtype
    r = te.reduce_axis((0, k), name="k")
    return te.compute(
        (m, n),
        lambda i, j: te.sum(data[i, r].astype(out_dtype) * weight[j, r].astype(out_dtype),
                            axis=r),
        name=name,
        tag="dense",
    )


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """Numerically stable softmax along `axis` (max-subtracted)."""
    nd = len(x.shape)
    axis = axis % nd
    red_shape = [s for d, s in enumerate(x.shape) if d != axis]
    k1 = te.reduce_axis((0, x.shape[axis]), name="k1")
    k2 = te.reduce_axis((0, x.shape[axis]), name="k2")

    def at(i: tuple, r: object) -> tuple:
        return tuple(list(i[:axis]) + [r] + list(i[axis:]))

    mx = te.compute(red_shape, lambda *i: te.max(x[at(i, k1)], axis=k1), name=f"{name}_max")
    ex = te.compute(
        x.shape,
        lambda *i: te.exp(x[i] - mx[tuple(i[:axis]) + tuple(i[axis + 1 :])]),
        name=f"{name}_exp",
    )
    sm = te.compute(red_shape, lambda *i: te.sum(ex[at(i, k2)], axis=k2), name=f"{name}_sum")
    return te.compute(
        x.shape,
        lambda *i: ex[i] / sm[tuple(i[:axis]) + tuple(i[axis + 1 :])],
        name=name,
        tag="softmax",
    )
