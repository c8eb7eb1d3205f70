"""Integer convolutions of quantized models: int8/uint8 activations x int8 weights -> int32.

- `qconv2d(x, w[, bias])` (NCHW, what `graph/passes/qdq.py` makes of a QDQ convolution):
  `sum((x_pad - zx) * w) + bias` in int32, `x` int8 or uint8 with the zero point attr
  `x_zero_point` (padding holds the zero point, so it adds nothing), `w` int8 OIHW
  (symmetric: zero point 0), `bias` int32 (O,). groups 1.
- `qconv2d_nchwc(x, w4, bias)` (what the CPU layout pass makes of it): `x` NCHW[x]c int8 or
  uint8, `w4` int32 (O/y, ceil(C/4), KH, KW, y) holding 4 int8 weights of consecutive input
  channels per int32 (byte j = channel 4g+j, zero past C), `bias` int32 (O,) with the zero
  point folded in. The kernel reads activations as uint8 (int8 + 128, padding = attr
  `pad_value` in that domain), packed 4 channels to an int32 by a padding stage, and
  accumulates `dot4_u8s8(a, b)`: the sum of the 4 products of a's unsigned bytes with b's
  signed bytes (x86 VNNI `vpdpbusd` does 16 of them per instruction; the llvm code
  generator falls back to widened int32 arithmetic where the CPU lacks it). Output int32
  NCHW[y]c: `sum(u_pad * w) + bias`, which equals `qconv2d`'s when
  `bias = bias0 - pad_value * sum(w)` (the layout pass folds it so)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ...expr import construct as _c
from ...ops import reference as ref
from ...ops.nn import _int, conv_geometry
from ...ops.nn import conv2d_nchw as _conv2d_nchw
from ..registry import OpPattern, TypeList, register_op, require, require_rank
from .nn import _conv2d_infer

DOT4 = "dot4_u8s8"


def dot4_u8s8(a: Any, b: Any) -> PrimExpr:
    """int32 sum of the products of a's 4 unsigned bytes with b's 4 signed bytes (little
    endian: byte j holds element j)."""
    return _c.call("int32", DOT4, a, b)


def dot4_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy dot4_u8s8 of int32/uint32 arrays (broadcasting)."""
    ab = np.ascontiguousarray(np.broadcast_to(a, np.broadcast(a, b).shape)).astype("<u4")
    bb = np.ascontiguousarray(np.broadcast_to(b, ab.shape)).astype("<u4")
    ua = ab.view("u1").reshape(*ab.shape, 4).astype("int64")
    sb = bb.view("i1").reshape(*bb.shape, 4).astype("int64")
    return (ua * sb).sum(-1).astype("int32")


# qconv2d (NCHW) ------------------------------------------------------------------------------
def _qconv_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    require(types[0][1] in ("int8", "uint8") and types[1][1] == "int8",
            f"qconv2d: int8/uint8 data and int8 weights expected, got {types[0][1]} and "
            f"{types[1][1]}")
    require(at.get("groups", 1) == 1, "qconv2d: groups must be 1")
    if len(types) > 2:
        require(types[2][1] == "int32", f"qconv2d: the bias must be int32, not {types[2][1]}")
    return [(_conv2d_infer(types, at)[0][0], "int32")]


def _qconv_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0].astype("int64") - int(at.get("x_zero_point", 0))
    y = ref.conv2d_nchw(x, ins[1].astype("int64"), at.get("strides", (1, 1)),
                        at.get("pads", 0), at.get("dilations", (1, 1)))
    if len(ins) > 2:
        y = y + ins[2].astype("int64").reshape(1, -1, 1, 1)
    return [y.astype("int32")]


def _qconv_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, w = ins[0], ins[1]
    zx = int(at.get("x_zero_point", 0))
    xc = te.compute(x.shape, lambda *i: x[i].astype("int32") - const(zx, "int32"),
                    name="centered", tag="elemwise")
    y = _conv2d_nchw(xc, w, at.get("strides", 1), at.get("pads", 0), at.get("dilations", 1),
                     out_dtype="int32", name="qconv2d")
    if len(ins) > 2:
        b = ins[2]
        y = te.compute(y.shape, lambda n, f, i, j: y[n, f, i, j] + b[f], name="bias_add",
                       tag="broadcast")
    return [y]


register_op("qconv2d", OpPattern.OUT_ELEMWISE_FUSABLE, _qconv_infer, _qconv_ref,
            _qconv_compute, doc="int32 sum((x - x_zero_point) * w) [+ bias]: x int8/uint8 "
            "NCHW, w int8 OIHW, bias int32; attrs strides, pads, dilations, x_zero_point")


# qconv2d_nchwc -------------------------------------------------------------------------------
def pack_weight_dot4(w: np.ndarray, ob: int) -> np.ndarray:
    """int8 OIHW -> int32 (O/ob, ceil(C/4), KH, KW, ob), 4 input channels per int32."""
    o, c, kh, kw = w.shape
    g4 = -(-c // 4)
    wp = np.zeros((o, g4 * 4, kh, kw), "int8")
    wp[:, :c] = w
    wp = wp.reshape(o // ob, ob, g4, 4, kh, kw).transpose(0, 2, 4, 5, 1, 3)
    return np.ascontiguousarray(wp).view("<i4").reshape(o // ob, g4, kh, kw, ob)


def unpack_weight_dot4(w4: np.ndarray, channels: int) -> np.ndarray:
    """The inverse of `pack_weight_dot4`: int8 (O, channels, KH, KW)."""
    oo, g4, kh, kw, ob = w4.shape
    b = np.ascontiguousarray(w4).astype("<i4").view("i1").reshape(oo, g4, kh, kw, ob, 4)
    return b.transpose(0, 4, 1, 5, 2, 3).reshape(oo * ob, g4 * 4, kh, kw)[:, :channels]


def _uint8_domain(x: np.ndarray) -> np.ndarray:
    return x.astype("int64") + (128 if x.dtype == np.int8 else 0)


def _nchwc_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    require_rank(types, 0, 5, "qconv2d_nchwc", "NCHW[x]c data")
    require_rank(types, 1, 5, "qconv2d_nchwc", "packed (O/y, C/4, KH, KW, y) weight")
    require(types[0][1] in ("int8", "uint8") and types[1][1] == "int32",
            "qconv2d_nchwc: int8/uint8 data and int32-packed weights expected")
    n, _, h, w, _ = types[0][0]
    oo, _, kh, kw, ob = types[1][0]
    (_, _), (_, _), _, (oh, ow) = conv_geometry(h, w, kh, kw, at.get("strides", 1),
                                                at.get("pads", 0), at.get("dilations", 1))
    return [((n, oo, oh, ow, ob), "int32")]


def _nchwc_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    xb = ins[0]
    n, cb, h, w, ib = xb.shape
    c = int(at["channels"])
    x = _uint8_domain(xb.transpose(0, 1, 4, 2, 3).reshape(n, cb * ib, h, w)[:, :c])
    pv = int(at.get("pad_value", 0))
    pt, pl, pb, pr = at.get("pads", (0, 0, 0, 0))
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=pv)
    wt = unpack_weight_dot4(ins[1], c).astype("int64")
    y = ref.conv2d_nchw(xp, wt, at.get("strides", (1, 1)), 0, at.get("dilations", (1, 1)))
    if len(ins) > 2:
        y = y + ins[2].astype("int64").reshape(1, -1, 1, 1)
    oo, ob = ins[1].shape[0], ins[1].shape[4]
    y = y.reshape(n, oo, ob, *y.shape[2:]).transpose(0, 1, 3, 4, 2)
    return [np.ascontiguousarray(y).astype("int32")]


def _packed_input(x: Any, g4: int, channels: int, pads: tuple[int, int, int, int],
                  pad_value: int) -> Any:
    """(N, G4, H + pads, W + pads) uint32: 4 consecutive channels of a padded pixel in the
    uint8 domain, one per byte (int8 + 128: the word xor 0x80808080). One bounds test per
    word; channels past `channels` read the last channel (their weights are 0). Where the
    block is a multiple of 4 the 4 bytes are adjacent in memory (one 32-bit load for LLVM)."""
    n, _, h, w, ib = (_int(s) for s in x.shape)
    pt, pl, pb, pr = pads
    pad_word = pad_value * 0x01010101

    def f(nn: Any, g: Any, yy: Any, xx: Any) -> PrimExpr:
        word: PrimExpr | None = None
        for j in range(4):
            if ib % 4 == 0:
                cb, ci = g // (ib // 4), (g % (ib // 4)) * 4 + j
            else:
                ch = te.min_expr(g * 4 + j, const(channels - 1, "int32")) \
                    if g4 * 4 > channels else g * 4 + j
                cb, ci = ch // ib, ch % ib
            v = x[nn, cb, yy - pt, xx - pl, ci].astype("uint8").astype("uint32")
            if j:
                v = te.shift_left(v, const(8 * j, "uint32"))
            word = v if word is None else te.bitwise_or(word, v)
        assert word is not None
        if x.dtype == "int8":
            word = te.bitwise_xor(word, const(0x80808080, "uint32"))
        if any(pads):
            inside = te.all(yy >= pt, yy < pt + h, xx >= pl, xx < pl + w)
            word = te.if_then_else(inside, word, const(pad_word, "uint32"))
        return word

    return te.compute((n, g4, h + pt + pb, w + pl + pr), f, name="qconv_pack",
                      tag="injective,pad")


def qconv2d_nchwc_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, w4 = ins[0], ins[1]
    _, _, h, w, _ = (_int(s) for s in x.shape)
    oo, g4, kh, kw, ob = (_int(s) for s in w4.shape)
    (sh, sw), (dh, dw), pads, (oh, ow) = conv_geometry(
        h, w, kh, kw, at.get("strides", 1), at.get("pads", 0), at.get("dilations", 1))
    packed = _packed_input(x, g4, int(at["channels"]), pads, int(at.get("pad_value", 0)))
    rg = te.reduce_axis((0, g4), name="g")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    y = te.compute(
        (_int(x.shape[0]), oo, oh, ow, ob),
        lambda nn, oc, yy, xx, o: te.sum(
            dot4_u8s8(packed[nn, rg, yy * sh + ry * dh, xx * sw + rx * dw],
                      w4[oc, rg, ry, rx, o]), axis=[rg, ry, rx]),
        name="qconv2d_nchwc", tag="qconv2d_nchwc")
    if len(ins) > 2:
        b = ins[2]
        y = te.compute(y.shape, lambda nn, oc, yy, xx, o: y[nn, oc, yy, xx, o]
                       + b[oc * ob + o], name="bias_add", tag="broadcast")
    return [y]


register_op("qconv2d_nchwc", OpPattern.OUT_ELEMWISE_FUSABLE, _nchwc_infer, _nchwc_ref,
            qconv2d_nchwc_compute,
            doc="int32 sum(uint8(x_pad) * w) + bias: x NCHW[x]c int8 (+128) or uint8, "
            "w int32 (O/y, C/4, KH, KW, y) of 4 int8 each, bias int32 (O,); attrs strides, "
            "pads, dilations, channels, pad_value -> NCHW[y]c int32")
