"""Convolution workloads in VDLA's layout, their random int8 data and the numpy reference.

`resnet18_convs()` reads every distinct conv2d of ResNet-18 from the ONNX model zoo (the 3-
channel stem padded with zero channels to one input block)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorforge.ops.nn_nchwc import pack_nchwc, pack_oihw_xi_yo, unpack_nchwc
from tensorforge.ops.reference import conv2d_nchw

from .config import VDLAConfig
from .strategies import ConvShape


def resnet18_convs(config: VDLAConfig) -> list[tuple[str, ConvShape]]:
    """(key, shape) of every distinct conv2d of ResNet-18, channels in blocks of the core."""
    from tensorforge.bench.workloads import extract

    out = []
    for w in extract(("resnet18",)):
        if w.kind != "conv2d":
            continue
        _, c, h, wd = w.x
        oc, _, kh, kw = w.w
        if h != wd or kh != kw or w.strides[0] != w.strides[1] or len(set(w.pads)) != 1:
            continue
        icb = -(-c // config.block_in)
        out.append((w.key, ConvShape(h, wd, icb, oc // config.block_out, kh, kw,
                                     w.strides[0], w.pads[0])))
    return out


def conv_arrays(shape: ConvShape, config: VDLAConfig, seed: int = 0
                ) -> dict[str, np.ndarray]:
    """Random int8 data and weights in NCHW / OIHW and in VDLA's blocked layouts."""
    rng = np.random.default_rng(seed)
    c, o = shape.icb * config.block_in, shape.ocb * config.block_out
    x = rng.integers(-128, 128, (1, c, shape.h, shape.w)).astype(np.int8)
    w = rng.integers(-128, 128, (o, c, shape.kh, shape.kw)).astype(np.int8)
    return {"x": x, "w": w, "data": pack_nchwc(x, config.block_in),
            "kernel": pack_oihw_xi_yo(w, config.block_in, config.block_out)}


def conv_reference(shape: ConvShape, x: np.ndarray, w: np.ndarray, block_out: int
                   ) -> np.ndarray:
    """The exact int32 convolution, in NCHW{block_out}c."""
    out = conv2d_nchw(x.astype(np.int64), w.astype(np.int64), shape.stride, shape.pad)
    return pack_nchwc(out, block_out).astype(np.int32)


def unpack(out: np.ndarray) -> Any:
    return unpack_nchwc(out)
