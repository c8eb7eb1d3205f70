"""Transposed convolutions as ordinary ones (for CPU targets): a `conv2d_transpose` of stride
s becomes a `conv2d` producing the s*s output phases as channels (kernel ceil(k/s), weights
re-arranged at compile time) followed by `pixel_shuffle`, which interleaves the phases. The
work is that of the transposed convolution plus a border (a few rows of phases outside the
output), instead of the s*s-fold waste of convolving a zero-dilated input. A transposed
convolution of a 1x1 input (a generator's first layer) becomes a dense layer and a reshape.

Rewritten: groups 1, dilation 1, equal strides, constant weights (and bias), and only when
every phase has the same number of taps (k divisible by s; for a 1x1 input, an output no
larger than the kernel): otherwise the re-arranged kernel would hold zeros that are not in
the model, and 0 * inf = NaN would reach outputs a non-finite input does not touch."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Node, Value
from .simplify import make_node


def _emit(g: Graph, op: str, inputs: list[Value], attrs: dict[str, Any], name: str,
          out: Value | None = None) -> Value:
    """Append a node; with `out`, the node produces that existing value."""
    node = make_node(g, op, inputs, attrs, name)
    if out is not None:
        if tuple(node.outputs[0].shape) != tuple(out.shape):
            raise AssertionError(f"{op}: {node.outputs[0].shape} != {out.shape}")
        node.outputs = [out]
        out.producer = node
    g.nodes.append(node)
    return node.outputs[0]


def _ok(n: Node) -> bool:
    if n.op != "conv2d_transpose" or not all(v.is_const for v in n.inputs[1:]):
        return False
    at = n.attrs
    s = tuple(at.get("strides", (1, 1)))
    return (at.get("groups", 1) == 1 and tuple(at.get("dilations", (1, 1))) == (1, 1)
            and s[0] == s[1] and len(n.inputs[0].shape) == 4)


def rewrite_conv_transpose(g: Graph, target: Any = None) -> Graph:
    """Rewrite every eligible `conv2d_transpose` of `g` (see the module docstring), except
    those placed on another target than `target`."""
    from .placement import placed_elsewhere

    old, g.nodes = g.nodes, []
    for n in old:
        if placed_elsewhere(n, target) or not (_ok(n) and _rewrite(g, n)):
            g.nodes.append(n)
    return g


def _rewrite(g: Graph, n: Node) -> bool:
    x, w = n.inputs[0], n.inputs[1].const
    bias = n.inputs[2].const if len(n.inputs) > 2 else None
    out = n.outputs[0]
    nb, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    oh, ow = out.shape[2:]
    s = int(n.attrs.get("strides", (1, 1))[0])
    pt, pl = (int(p) for p in n.attrs.get("pads", (0, 0, 0, 0))[:2])
    if h == wd == 1:  # one input pixel: out[o, y, x] = sum_c x[c] * w[c, o, y + pt, x + pl]
        dense_w = np.zeros((o, oh, ow, c), w.dtype)
        ys, xs = np.arange(oh) + pt, np.arange(ow) + pl
        vy, vx = ys < kh, xs < kw
        if not (vy.all() and vx.all()):
            return False  # outputs beyond the kernel: zeros that are not in the model
        sub = w[:, :, ys[vy]][:, :, :, xs[vx]]  # (C, O, oh', ow')
        dense_w[:, np.flatnonzero(vy)[:, None], np.flatnonzero(vx)[None, :], :] = \
            sub.transpose(1, 2, 3, 0)
        ins = [_emit(g, "reshape", [x], {"shape": (nb, c)}, f"{n.name}_flat"),
               g.add_const(f"{n.name}_dense_w", dense_w.reshape(o * oh * ow, c))]
        if bias is not None:
            ins.append(g.add_const(f"{n.name}_dense_b", np.repeat(bias, oh * ow)))
        y = _emit(g, "dense", ins, {}, f"{n.name}_dense")
        _emit(g, "reshape", [y], {"shape": tuple(out.shape)}, f"{n.name}_unflat", out)
        return True
    if kh % s or kw % s:
        return False  # phases with fewer taps: zero taps that are not in the model
    jy, jx = -(-kh // s), -(-kw // s)
    q0y, q0x = pt // s, pl // s
    qy, qx = (oh - 1 + pt) // s - q0y + 1, (ow - 1 + pl) // s - q0x + 1
    ptop, pleft = jy - 1 - q0y, jx - 1 - q0x
    pbot, pright = qy - h - ptop + jy - 1, qx - wd - pleft + jx - 1
    if min(ptop, pleft, pbot, pright) < 0:
        return False
    wc = np.zeros((s * s * o, c, jy, jx), w.dtype)
    for ry in range(s):
        for rx in range(s):
            for uy in range(jy):
                for ux in range(jx):
                    ky, kx = ry + s * (jy - 1 - uy), rx + s * (jx - 1 - ux)
                    if ky < kh and kx < kw:
                        p = ry * s + rx
                        wc[p * o:(p + 1) * o, :, uy, ux] = w[:, :, ky, kx].T
    ins = [x, g.add_const(f"{n.name}_subpixel_w", wc)]
    if bias is not None:
        ins.append(g.add_const(f"{n.name}_subpixel_b", np.tile(bias, s * s)))
    y = _emit(g, "conv2d", ins, {"strides": (1, 1), "pads": (ptop, pleft, pbot, pright),
                                 "dilations": (1, 1), "groups": 1}, f"{n.name}_subpixel")
    _emit(g, "pixel_shuffle", [y], {"stride": s, "offset": (pt, pl), "out_hw": (oh, ow)},
          f"{n.name}_shuffle", out)
    return True
