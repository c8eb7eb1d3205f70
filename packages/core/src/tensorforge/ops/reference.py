"""numpy reference implementations of the operator library (tests and constant folding)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _pads4(p: int | Sequence[int]) -> tuple[int, int, int, int]:
    if isinstance(p, int):
        return p, p, p, p
    p = tuple(p)
    return (p[0], p[1], p[0], p[1]) if len(p) == 2 else (p[0], p[1], p[2], p[3])


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (v[0], v[-1])


def conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: int | Sequence[int] = 1,
                padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                groups: int = 1) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pads4(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    opg = o // groups
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg].astype(np.float64)
        ws = w[g * opg : (g + 1) * opg].astype(np.float64)
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh,
                           kx * dw : kx * dw + sw * (ow - 1) + 1 : sw]
                out[:, g * opg : (g + 1) * opg] += np.einsum("nchw,oc->nohw", patch,
                                                             ws[:, :, ky, kx])
    return out.astype(x.dtype)


def conv2d_nhwc(x: np.ndarray, w: np.ndarray, stride: int | Sequence[int] = 1,
                padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1
                ) -> np.ndarray:
    out = conv2d_nchw(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), stride, padding,
                      dilation)
    return out.transpose(0, 2, 3, 1)


def depthwise_conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: int | Sequence[int] = 1,
                          padding: int | Sequence[int] = 0,
                          dilation: int | Sequence[int] = 1) -> np.ndarray:
    c = x.shape[1]
    m = w.shape[0] // c
    xr = np.repeat(x, m, axis=1)
    return conv2d_nchw(xr, w, stride, padding, dilation, groups=w.shape[0])


def _pool(x: np.ndarray, kernel: Sequence[int], stride: int | Sequence[int],
          padding: int | Sequence[int], ceil_mode: bool, fill: float) -> tuple[np.ndarray, ...]:
    n, c, h, w = x.shape
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride)
    pt, pl, pb, pr = _pads4(padding)

    def size(d: int, k: int, s: int, p0: int, p1: int) -> int:
        num = d + p0 + p1 - k
        out = (-(-num // s) if ceil_mode else num // s) + 1
        # no window may start in the trailing padding (onnxruntime and PyTorch agree)
        return out - 1 if ceil_mode and (out - 1) * s >= d + p0 else out

    oh, ow = size(h, kh, sh, pt, pb), size(w, kw, sw, pl, pr)
    eb = max(0, (oh - 1) * sh + kh - h - pt)
    er = max(0, (ow - 1) * sw + kw - w - pl)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, eb), (pl, er)),
                constant_values=fill)
    wins = np.empty((kh * kw, n, c, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            wins[ky * kw + kx] = xp[:, :, ky : ky + sh * (oh - 1) + 1 : sh,
                                    kx : kx + sw * (ow - 1) + 1 : sw]
    return wins, (oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, h, w)


def max_pool2d(x: np.ndarray, kernel: Sequence[int], stride: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False) -> np.ndarray:
    wins, _ = _pool(x, kernel, stride, padding, ceil_mode, -np.inf)
    return wins.max(axis=0).astype(x.dtype)


def avg_pool2d(x: np.ndarray, kernel: Sequence[int], stride: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, count_include_pad: bool = False,
               ceil_mode: bool = False) -> np.ndarray:
    wins, (oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, h, w) = _pool(
        x, kernel, stride, padding, ceil_mode, 0.0)
    total = wins.sum(axis=0)
    yy = np.arange(oh)[:, None] * sh - pt
    xx = np.arange(ow)[None, :] * sw - pl
    if count_include_pad:
        cnt = (np.minimum(yy + kh, h + pb) - yy) * (np.minimum(xx + kw, w + pr) - xx)
    else:
        cnt = (np.minimum(yy + kh, h) - np.maximum(yy, 0)) * (
            np.minimum(xx + kw, w) - np.maximum(xx, 0))
    return (total / cnt).astype(x.dtype)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
