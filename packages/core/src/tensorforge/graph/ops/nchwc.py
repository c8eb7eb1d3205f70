"""Blocked-layout graph ops, introduced by the NCHW[x]c layout pass (`passes/layout_nchwc.py`):
`layout_transform`, `conv2d_nchwc` (grouped too), `depthwise_conv2d_nchwc`, `dense_packed`,
the NCHW[x]c pools, `channel_shuffle` and `pixel_shuffle` (the interleave of a transposed
convolution rewritten as a convolution). Every op has a numpy reference (unpack, the NCHW
reference, pack), so `run_reference` and constant folding work on rewritten graphs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...ops import nn_blocked as nb
from ...ops import reference as ref
from ...ops.nn_nchwc import conv2d_nchwc
from ...runtime.transforms import np_layout_transform
from ..registry import OpPattern, TypeList, register_op
from .nn import _pool_infer


def _lt_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    out = np_layout_transform(np.empty(shape, np.uint8), at["src_layout"], at["dst_layout"])
    return [(tuple(out.shape), dt)]


register_op(
    "layout_transform", OpPattern.INJECTIVE, _lt_infer,
    lambda ins, at: [np_layout_transform(ins[0], at["src_layout"], at["dst_layout"])],
    lambda ins, at, out: [nb.layout_transform(ins[0], at["src_layout"], at["dst_layout"])],
    doc="re-lay a tensor: NCHW <-> NCHW<x>c, OIHW -> OIHW<x>i<y>o, NK -> NK<y>n; attrs "
        "src_layout, dst_layout")


def _unpack(x: np.ndarray) -> np.ndarray:
    n, cc, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cc * b, h, w)


def _pack(x: np.ndarray, b: int) -> np.ndarray:
    return np_layout_transform(x, "NCHW", f"NCHW{b}c")


def _unpack_w(w: np.ndarray) -> np.ndarray:
    oo, co, kh, kw, ib, ob = w.shape
    return w.transpose(0, 5, 1, 4, 2, 3).reshape(oo * ob, co * ib, kh, kw)


def _conv_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    n, _, h, w, _ = types[0][0]
    oo, _, kh, kw, _, ob = types[1][0]
    sh, sw = at.get("strides", (1, 1))
    dh, dw = at.get("dilations", (1, 1))
    pt, pl, pb, pr = at.get("pads", (0, 0, 0, 0))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    return [((n, oo, oh, ow, ob), at.get("out_dtype") or types[0][1])]


def _conv_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    depthwise = at.get("depthwise", False)
    x = _unpack(ins[0])
    if at.get("out_dtype"):  # int8 products summed exactly (float64 holds them)
        x, ins = x.astype("float64"), [ins[0], ins[1].astype("float64"), *ins[2:]]
    if depthwise:  # (C/x, 1, KH, KW, 1, x) -> (C, 1, KH, KW)
        cc, _, kh, kw, _, b = ins[1].shape
        w = ins[1].transpose(0, 5, 1, 4, 2, 3).reshape(cc * b, 1, kh, kw)
        groups = x.shape[1]
    else:
        w, groups = _unpack_w(ins[1]), at.get("groups", 1)
    out = ref.conv2d_nchw(x, w, at.get("strides", (1, 1)), at.get("pads", 0),
                          at.get("dilations", (1, 1)), groups)
    if len(ins) > 2:
        out = out + ins[2].reshape(1, -1, 1, 1)
    return [_pack(out.astype(at.get("out_dtype") or ins[0].dtype), ins[1].shape[-1])]


def _bias(y: Any, b: Any, bn: int) -> Any:
    return te.compute(y.shape, lambda n, c, i, j, k: y[n, c, i, j, k] + b[c * bn + k],
                      name="bias_add", tag="broadcast")


def _conv_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    s, p, d = at.get("strides", 1), at.get("pads", 0), at.get("dilations", 1)
    if at.get("depthwise", False):
        y = nb.depthwise_conv2d_nchwc(ins[0], ins[1], s, p, d)
    else:
        y = conv2d_nchwc(ins[0], ins[1], s, p, d, out_dtype=at.get("out_dtype"),
                         groups=at.get("groups", 1), flat_pixels=at.get("flat_pixels", False))
    if len(ins) > 2:
        y = _bias(y, ins[2], out[0][0][-1])
    return [y]


register_op("conv2d_nchwc", OpPattern.OUT_ELEMWISE_FUSABLE, _conv_infer, _conv_ref,
            _conv_compute, doc="conv2d on NCHW<x>c data, OIHW<x>i<y>o weights [, bias (O,)]; "
            "attrs strides, pads, dilations, groups (x divides C/groups, y O/groups), "
            "out_dtype (int8 x int8 -> int32)")


def _dw_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    return _conv_infer(types, at)


register_op("depthwise_conv2d_nchwc", OpPattern.OUT_ELEMWISE_FUSABLE, _dw_infer,
            lambda ins, at: _conv_ref(ins, {**at, "depthwise": True}),
            lambda ins, at, out: _conv_compute(ins, {**at, "depthwise": True}, out),
            doc="depthwise conv2d on NCHW<x>c data, (C/x, 1, KH, KW, 1, x) weights [, bias]")


def _dense_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    no, k, b = ins[1].shape
    w = ins[1].transpose(0, 2, 1).reshape(no * b, k)[:at.get("units") or no * b]
    od = at.get("out_dtype")
    wide = "int64" if od else "float64"  # integer products summed exactly
    y = ins[0].astype(wide) @ w.T.astype(wide)
    if len(ins) > 2:
        y = y + ins[2]
    return [y.astype(od or ins[0].dtype)]


def _dense_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    y = nb.dense_packed(ins[0], ins[1], units=at.get("units"), out_dtype=at.get("out_dtype"))
    if len(ins) > 2:
        b = ins[2]
        y = te.compute(y.shape, lambda i, j: y[i, j] + b[j], name="bias_add", tag="broadcast")
    return [y]


register_op("dense_packed", OpPattern.OUT_ELEMWISE_FUSABLE,
            lambda types, at: [((types[0][0][0],
                                 at.get("units") or types[1][0][0] * types[1][0][2]),
                                at.get("out_dtype") or types[0][1])],
            _dense_ref, _dense_compute,
            doc="x (M, K) @ W^T with W packed NK<y>n: (N/y, K, y) [+ bias (N,)]; attr units "
                "(optional): N when the last panel is zero-padded; out_dtype (int8 x int8 -> "
                "int32)")


def _pool5_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (n, cc, h, w, b), dt = types[0]
    ((_, _, oh, ow), _), = _pool_infer([((n, cc * b, h, w), dt)], at)
    return [((n, cc, oh, ow, b), dt)]


def _pool_ref(fn: Any) -> Any:
    def run(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
        return [_pack(fn(_unpack(ins[0]), at), ins[0].shape[-1])]

    return run


register_op(
    "max_pool2d_nchwc", OpPattern.OUT_ELEMWISE_FUSABLE, _pool5_infer,
    _pool_ref(lambda x, at: ref.max_pool2d(x, at["kernel"], at.get("strides", 1),
                                           at.get("pads", 0), at.get("ceil_mode", False))),
    lambda ins, at, out: [nb.max_pool2d_nchwc(ins[0], at["kernel"], at.get("strides", 1),
                                              at.get("pads", 0), at.get("ceil_mode", False))],
    doc="max pooling on NCHW<x>c; attrs as max_pool2d")
register_op(
    "avg_pool2d_nchwc", OpPattern.OUT_ELEMWISE_FUSABLE, _pool5_infer,
    _pool_ref(lambda x, at: ref.avg_pool2d(x, at["kernel"], at.get("strides", 1),
                                           at.get("pads", 0), at.get("count_include_pad", False),
                                           at.get("ceil_mode", False))),
    lambda ins, at, out: [nb.avg_pool2d_nchwc(
        ins[0], at["kernel"], at.get("strides", 1), at.get("pads", 0),
        at.get("count_include_pad", False), at.get("ceil_mode", False))],
    doc="average pooling on NCHW<x>c; attrs as avg_pool2d")
register_op(
    "global_avg_pool2d_nchwc", OpPattern.OUT_ELEMWISE_FUSABLE,
    lambda types, at: [((*types[0][0][:2], 1, 1, types[0][0][4]), types[0][1])],
    lambda ins, at: [ins[0].mean(axis=(2, 3), keepdims=True).astype(ins[0].dtype)],
    lambda ins, at, out: [nb.global_avg_pool2d_nchwc(ins[0])],
    doc="global average pooling on NCHW<x>c to (N, C/x, 1, 1, x)")


def _ps_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    s = at["stride"]
    oh, ow = at["out_hw"]
    out = (shape[0], shape[1] // (s * s), oh, ow, *shape[4:])
    return [(out, dt)]


def _ps_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    blocked = x.ndim == 5
    if blocked:
        b = x.shape[-1]
        x = _unpack(x)
    s = at["stride"]
    py, px = at["offset"]
    oh, ow = at["out_hw"]
    oc = x.shape[1] // (s * s)
    ty = np.arange(oh) + py
    tx = np.arange(ow) + px
    phase = (ty[:, None] % s) * s + tx[None, :] % s
    out = np.empty((x.shape[0], oc, oh, ow), x.dtype)
    for c in range(oc):
        out[:, c] = x[:, phase * oc + c, (ty // s - py // s)[:, None],
                      (tx // s - px // s)[None, :]]
    return [_pack(out, b) if blocked else out]


register_op("pixel_shuffle", OpPattern.INJECTIVE, _ps_infer, _ps_ref,
            lambda ins, at, out: [nb.pixel_shuffle(ins[0], at["stride"], tuple(at["offset"]),
                                                   tuple(at["out_hw"]))],
            doc="sub-pixel interleave of s*s phases (phase-major channels), NCHW or NCHW<x>c; "
                "attrs stride, offset (py, px), out_hw")


def _wino_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    n, _, h, w, _ = types[0][0]
    _, _, oo, _, ob = types[1][0]
    pt, pl, pb, pr = at.get("pads", (0, 0, 0, 0))
    return [((n, oo, h + pt + pb - 2, w + pl + pr - 2, ob), types[0][1])]


def _wino_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    from ...ops.winograd import winograd_conv_np

    y = winograd_conv_np(ins[0], ins[1], at["m"], at.get("pads", (0, 0, 0, 0)))
    if len(ins) > 2:
        y = y + _pack(ins[2].reshape(1, -1, 1, 1), ins[1].shape[-1])
    return [y.astype(ins[0].dtype)]


def _wino_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    from ...ops.winograd import conv2d_winograd_nchwc

    y = conv2d_winograd_nchwc(ins[0], ins[1], at["m"], at.get("pads", 0))
    if len(ins) > 2:
        y = _bias(y, ins[2], out[0][0][-1])
    return [y]


register_op("conv2d_winograd_nchwc", OpPattern.OUT_ELEMWISE_FUSABLE, _wino_infer, _wino_ref,
            _wino_compute, doc="3x3 stride-1 conv by Winograd F(m x m, 3x3) on NCHW<x>c data "
            "and weights transformed at compile time, U (a, a, O/y, C, y), a = m + 2 [, bias "
            "(O,)]; attrs m (2 or 4), pads")


def _shuffle_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    blocked = x.ndim == 5
    if blocked:
        b = x.shape[-1]
        x = _unpack(x)
    g, padded = at["groups"], at.get("padded")
    if padded:  # runs of S channels in P slots each: drop the padding, shuffle, pad again
        real, slots = padded
        x = x.reshape(x.shape[0], g, slots, *x.shape[2:])[:, :, :real].reshape(
            x.shape[0], g * real, *x.shape[2:])
    n, c, h, w = x.shape
    y = np.ascontiguousarray(x.reshape(n, g, c // g, h, w).transpose(0, 2, 1, 3, 4)
                             ).reshape(n, c, h, w)
    if padded:
        full = np.zeros((n, g, slots, h, w), y.dtype)
        full[:, :, :real] = y.reshape(n, g, real, h, w)
        y = full.reshape(n, g * slots, h, w)
    return [_pack(y, b) if blocked else y]


def _shuffle_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    padded = at.get("padded")
    return [nb.channel_shuffle(ins[0], at["groups"], tuple(padded) if padded else None)]


register_op("channel_shuffle", OpPattern.INJECTIVE, lambda types, at: [types[0]], _shuffle_ref,
            _shuffle_compute,
            doc="ShuffleNet's channel shuffle (reshape to (N, g, C/g, H, W), swap axes 1 and 2, "
                "reshape back) on NCHW or NCHW<x>c; attrs groups, padded (S, P): each run of "
                "S = C/groups channels held in P slots, the padding zero (NCHW<x>c)")
