"""conv2d_transpose (ONNX ConvTranspose, NCHW, weight (C, O/groups, kh, kw)).

The TE compute is gather-form (no scatter): out[n, o, y, x] sums over the input channels of
the group and the kernel taps whose source position (y + pad - ky*d) / s is integral and in
range."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import const
from ..registry import OpPattern, TypeList, register_op, require, require_rank


def _out(h: int, k: int, s: int, d: int, p0: int, p1: int, op: int) -> int:
    return (h - 1) * s + d * (k - 1) + 1 + op - p0 - p1


def _infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    require_rank(types, 0, 4, "conv2d_transpose", "NCHW data")
    require_rank(types, 1, 4, "conv2d_transpose", "(C, O/groups, kh, kw) weight")
    (n, c, h, w), dt = types[0]
    wc, og, kh, kw = types[1][0]
    sh, sw = at.get("strides", (1, 1))
    dh, dw = at.get("dilations", (1, 1))
    pt, pl, pb, pr = at.get("pads", (0, 0, 0, 0))
    oph, opw = at.get("output_padding", (0, 0))
    g = at.get("groups", 1)
    require(g >= 1 and c % g == 0 and wc == c, f"conv2d_transpose: input has {c} channels, "
            f"the weight {list(types[1][0])} is for {wc} (groups={g})")
    require(min(kh, kw, sh, sw, dh, dw) >= 1, "conv2d_transpose: kernel, strides and "
            "dilations must be positive")
    require(min(pt, pl, pb, pr, oph, opw) >= 0, "conv2d_transpose: pads and output_padding "
            "must not be negative")
    oh, ow = _out(h, kh, sh, dh, pt, pb, oph), _out(w, kw, sw, dw, pl, pr, opw)
    require(oh >= 1 and ow >= 1, f"conv2d_transpose: pads {[pt, pl, pb, pr]} leave an output "
            f"of {oh} x {ow}")
    if len(types) > 2:
        require(tuple(types[2][0]) == (og * g,), f"conv2d_transpose: bias shape "
                f"{list(types[2][0])} is not [{og * g}]")
    return [((n, og * g, oh, ow), dt)]


def _ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, wt = ins[0].astype("float64"), ins[1].astype("float64")
    n, c, h, w = x.shape
    _, og, kh, kw = wt.shape
    sh, sw = at.get("strides", (1, 1))
    dh, dw = at.get("dilations", (1, 1))
    pt, pl = at.get("pads", (0, 0, 0, 0))[:2]
    g = at.get("groups", 1)
    cg = c // g
    oh, ow = _infer([(x.shape, "f"), (wt.shape, "f")], at)[0][0][2:]
    fh = max((h - 1) * sh + dh * (kh - 1) + 1, pt + oh)
    fw = max((w - 1) * sw + dw * (kw - 1) + 1, pl + ow)
    full = np.zeros((n, og * g, fh, fw))
    for gi in range(g):
        xs = x[:, gi * cg:(gi + 1) * cg]
        for ky in range(kh):
            for kx in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, wt[gi * cg:(gi + 1) * cg, :, ky, kx])
                y0, x0 = ky * dh, kx * dw
                full[:, gi * og:(gi + 1) * og, y0:y0 + (h - 1) * sh + 1:sh,
                     x0:x0 + (w - 1) * sw + 1:sw] += contrib
    out = full[:, :, pt:pt + oh, pl:pl + ow]
    if len(ins) > 2:
        out = out + ins[2].reshape(1, -1, 1, 1)
    return [out.astype(ins[0].dtype)]


def _compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, wt = ins[0], ins[1]
    _n, c, h, w = (int(s.value) for s in x.shape)
    _, og, kh, kw = (int(s.value) for s in wt.shape)
    sh, sw = at.get("strides", (1, 1))
    dh, dw = at.get("dilations", (1, 1))
    pt, pl, _pb, _pr = at.get("pads", (0, 0, 0, 0))
    g = at.get("groups", 1)
    cg = c // g
    rc = te.reduce_axis((0, cg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    zero = const(0, x.dtype)

    def f(b: Any, o: Any, y: Any, xx: Any) -> Any:
        ci = (o // og) * cg + rc if g > 1 else rc
        ty = y + pt - ry * dh
        tx = xx + pl - rx * dw
        iy, ix = te.floordiv(ty, sh), te.floordiv(tx, sw)
        ok = te.all(ty >= 0, tx >= 0, te.floormod(ty, sh) == 0, te.floormod(tx, sw) == 0,
                    iy < h, ix < w)
        prod = x[b, ci, iy, ix] * wt[ci, o % og if g > 1 else o, ry, rx]
        return te.sum(te.if_then_else(ok, prod, zero), axis=[rc, ry, rx])

    y = te.compute(out[0][0], f, name="conv2d_transpose", tag="conv2d_transpose")
    if len(ins) > 2:
        bias = ins[2]
        y = te.compute(y.shape, lambda n, f_, i, j: y[n, f_, i, j] + bias[f_], name="bias_add",
                       tag="broadcast")
    return [y]


register_op("conv2d_transpose", OpPattern.OUT_ELEMWISE_FUSABLE, _infer, _ref, _compute,
            doc="NCHW transposed conv (x, w (C, O/g, kh, kw)[, bias]); attrs strides, pads, "
            "dilations, output_padding, groups")
