"""Convolution in the blocked layouts of SIMD CPUs (TVM's NCHW[x]c).

Activations are ``NCHW[x]c``: ``(N, C // x, H, W, x)``, ``x`` channels innermost so that one
vector holds ``x`` channels of a pixel. Weights are ``OIHW[x]i[y]o``:
``(O // y, C // x, KH, KW, x, y)``, so the ``y`` output channels of one input channel are one
contiguous vector. Both are produced once, outside the kernel (a graph-level layout change;
:func:`pack_nchwc` and :func:`pack_oihw_xi_yo` do it for numpy arrays).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import te
from ..te import Tensor
from .nn import _int, conv_geometry, pad

__all__ = ["conv2d_nchwc", "pack_nchwc", "pack_oihw_xi_yo", "unpack_nchwc"]

# the TE computes of the other blocked ops (depthwise, dense_packed, pools, layout_transform)
# live in ops/nn_blocked.py


def conv2d_nchwc(
    data: Tensor, kernel: Tensor, stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
    out_dtype: str | None = None, name: str = "conv2d_nchwc", groups: int = 1,
    flat_pixels: bool = False,
) -> Tensor:
    """data (N, C/x, H, W, x), kernel (O/y, C/groups/x, KH, KW, x, y) -> (N, O/y, OH, OW, y).

    Grouped (ResNeXt, RegNet): x divides the channels per group C/groups and y the outputs
    per group O/groups, so an output block belongs to one group and reads that group's
    C/groups/x input blocks; the reduction and the register tile are those of groups=1.

    `flat_pixels` (a 1x1 stride-1 unpadded conv, groups 1; else ignored): the conv stage
    computes over one row of H*W pixels, (N, O/y, 1, H*W, y), the same memory as the blocked
    input and output, and a `conv2d_nchwc_rows` stage views it back as (N, O/y, H, W, y), so
    a register tile of pixels may span image rows (`conv1x1.py`)."""
    n, ic_chunk, h, w, ic_bn = (_int(s) for s in data.shape)
    oc_chunk, ic_chunk2, kh, kw, ic_bn2, oc_bn = (_int(s) for s in kernel.shape)
    if (ic_chunk, ic_bn) != (ic_chunk2 * groups, ic_bn2) or (oc_chunk * oc_bn) % groups or (
            oc_chunk * oc_bn // groups) % oc_bn:
        raise ValueError(f"conv2d_nchwc: data {tuple(data.shape)} and kernel "
                         f"{tuple(kernel.shape)} disagree on the input-channel blocking "
                         f"(groups={groups})")
    blocks_per_group = oc_chunk // groups  # output blocks of one group
    (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow) = conv_geometry(
        h, w, kh, kw, stride, padding, dilation)
    out_dtype = out_dtype or data.dtype
    if flat_pixels and (kh, kw, sh, sw, groups) == (1, 1, 1, 1, 1) and (oh, ow) == (h, w) \
            and not any((pt, pl, pb, pr)):
        return _conv1x1_flat(data, kernel, out_dtype, name)
    padded = pad(data, (0, 0, pt, pl, 0), (0, 0, pb, pr, 0), name=f"{name}_pad")
    ico = te.reduce_axis((0, ic_chunk2), name="ico")
    ici = te.reduce_axis((0, ic_bn), name="ici")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, oc_chunk, oh, ow, oc_bn),
        lambda nn, oc, yy, xx, ob: te.sum(
            padded[nn, ico if groups == 1 else oc // blocks_per_group * ic_chunk2 + ico,
                   yy * sh + ry * dh, xx * sw + rx * dw, ici].astype(out_dtype)
            * kernel[oc, ico, ry, rx, ici, ob].astype(out_dtype),
            axis=[ico, ry, rx, ici],
        ),
        name=name,
        tag="conv2d_nchwc",
    )


def _conv1x1_flat(data: Tensor, kernel: Tensor, out_dtype: str, name: str) -> Tensor:
    """The pointwise conv over a flattened pixel axis, viewed back as rows (`conv2d_nchwc`)."""
    n, ic_chunk, h, w, ic_bn = (_int(s) for s in data.shape)
    oc_chunk, oc_bn = _int(kernel.shape[0]), _int(kernel.shape[5])
    ico = te.reduce_axis((0, ic_chunk), name="ico")
    ici = te.reduce_axis((0, ic_bn), name="ici")
    ry = te.reduce_axis((0, 1), name="ry")
    rx = te.reduce_axis((0, 1), name="rx")
    flat = te.compute(
        (n, oc_chunk, 1, h * w, oc_bn),
        lambda nn, oc, yy, p, ob: te.sum(
            data[nn, ico, p // w + ry, p % w + rx, ici].astype(out_dtype)
            * kernel[oc, ico, ry, rx, ici, ob].astype(out_dtype),
            axis=[ico, ry, rx, ici],
        ),
        name=name,
        tag="conv2d_nchwc",
    )
    return te.compute((n, oc_chunk, h, w, oc_bn),
                      lambda nn, oc, yy, xx, ob: flat[nn, oc, 0, yy * w + xx, ob],
                      name=f"{name}_rows", tag="conv2d_nchwc_rows")


def pack_nchwc(x: Any, bn: int) -> Any:
    """numpy (N, C, H, W) -> (N, C/bn, H, W, bn)."""
    n, c, h, w = x.shape
    return x.reshape(n, c // bn, bn, h, w).transpose(0, 1, 3, 4, 2).copy()


def unpack_nchwc(x: Any) -> Any:
    """numpy (N, C/bn, H, W, bn) -> (N, C, H, W)."""
    n, cc, h, w, bn = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cc * bn, h, w).copy()


def pack_oihw_xi_yo(k: Any, ic_bn: int, oc_bn: int) -> Any:
    """numpy (O, C, KH, KW) -> (O/oc_bn, C/ic_bn, KH, KW, ic_bn, oc_bn)."""
    o, c, kh, kw = k.shape
    k = k.reshape(o // oc_bn, oc_bn, c // ic_bn, ic_bn, kh, kw)
    return k.transpose(0, 2, 4, 5, 3, 1).copy()
