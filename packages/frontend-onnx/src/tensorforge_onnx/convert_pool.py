"""Converters for MaxPool, AveragePool and LpPool.

1-D and 2-D pools without dilation become the NCHW ops `max_pool2d` / `avg_pool2d` (1-D as
2-D over a unit height), which have tuned CPU schedules; 3-D pools, dilated windows, LpPool
and MaxPool's Indices output become `pool_nd`, whose window geometry (output sizes, padding,
ceil mode's extra positions) follows onnx's reference."""

from __future__ import annotations

import math
from typing import Any

import onnx

from tensorforge.graph import Value

from .context import Context
from .convert_nn import _lift, _lower, _pads, _pads4, _to2d
from .dispatch import converter

Node = onnx.NodeProto


def _geometry(ctx: Context, node: Node, x: Value) -> dict[str, Any]:
    at = ctx.attrs(node)
    n = len(x.shape) - 2
    kernel = [int(k) for k in at["kernel_shape"]]
    strides = [int(s) for s in at.get("strides", [1] * n)]
    dil = [int(d) for d in at.get("dilations", [1] * n)]
    return {"kernel": kernel, "strides": strides, "dilations": dil,
            "ceil": bool(at.get("ceil_mode", 0)), "auto": at.get("auto_pad", "NOTSET") or
            "NOTSET", "pads": [int(p) for p in at.get("pads", [0] * (2 * n))]}


def _nd_attrs(ctx: Context, node: Node, x: Value, kind: str) -> dict[str, Any]:
    """pool_nd's attributes, with onnx's reference geometry (op_pool_common, op_max_pool)."""
    geo = _geometry(ctx, node, x)
    k, s, d, pads = geo["kernel"], geo["strides"], geo["dilations"], geo["pads"]
    in_sp = list(x.shape[2:])
    n = len(in_sp)
    out, begin, limit = [0] * n, [0] * n, [0] * n
    dilated_max = kind == "max" and (any(v != 1 for v in d) or any(v != 1 for v in s))
    for i in range(n):
        span = (k[i] - 1) * d[i] + 1
        pb, pe = pads[i], pads[n + i]
        if dilated_max:
            if geo["auto"] in ("SAME_UPPER", "SAME_LOWER"):
                o = -(-in_sp[i] // s[i]) if geo["auto"] == "SAME_UPPER" else in_sp[i] // s[i]
                total = (o - 1) * s[i] + span - in_sp[i]
                pb = total // 2
            elif geo["auto"] == "VALID":
                o = math.ceil((in_sp[i] - span + 1) / s[i])
            else:
                o = (in_sp[i] + pb + pe - span) / s[i] + 1
                o = math.ceil(o) if geo["ceil"] else math.floor(o)
                if geo["ceil"] and (o - 1) * s[i] >= in_sp[i] + pb:
                    o -= 1
            out[i], begin[i], limit[i] = o, pb, 1 << 30
            continue
        if geo["auto"] in ("SAME_UPPER", "SAME_LOWER", "VALID"):
            o = (in_sp[i] - 1) // s[i] + 1 if geo["auto"] != "VALID" else (
                in_sp[i] - k[i]) // s[i] + 1
            total = max((o - 1) * s[i] + k[i] - in_sp[i], 0) if geo["auto"] != "VALID" else 0
            pb = total // 2 if geo["auto"] == "SAME_UPPER" else total - total // 2
            pe = total - pb
            out[i], begin[i], limit[i] = o, pb, in_sp[i] + pb + pe
            continue
        o = (in_sp[i] + pb + pe - span) / s[i] + 1
        o = math.ceil(o) if geo["ceil"] else math.floor(o)
        if geo["ceil"] and (o - 1) * s[i] >= in_sp[i] + pb:
            o -= 1
        extra = (o - 1) * s[i] + span - in_sp[i] - pb - pe
        begin[i] = pb + (extra // 2 if extra > 0 else 0)
        out[i], limit[i] = o, in_sp[i] + pb + pe
    return {"kind": kind, "kernel": tuple(k), "strides": tuple(s), "dilations": tuple(d),
            "out": tuple(out), "begin": tuple(begin), "limit": tuple(limit)}


def _fast_2d(ctx: Context, node: Node, x: Value) -> bool:
    """Whether the 2-D NCHW pool ops fit: 1-D or 2-D, no dilation."""
    geo = _geometry(ctx, node, x)
    return len(x.shape) in (3, 4) and all(v == 1 for v in geo["dilations"])


def _pool2d(ctx: Context, node: Node, x: Value, op: str, extra: dict[str, Any]) -> Value:
    nd = len(x.shape) - 2
    geo = _geometry(ctx, node, x)
    pads = _pads(ctx, node, ctx.attrs(node), list(x.shape[2:]), geo["kernel"],
                 geo["strides"], geo["dilations"])
    attrs = {"kernel": tuple(_to2d(geo["kernel"], nd, 1)),
             "strides": tuple(_to2d(geo["strides"], nd, 1)), "pads": _pads4(pads, nd),
             "ceil_mode": geo["ceil"], **extra}
    return _lower(ctx, ctx.emit_multi(op, [_lift(ctx, x, nd)], attrs)[0], nd)


@converter("MaxPool", versions=(1, 22))
def max_pool(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    indices = len(node.output) > 1 and bool(node.output[1])
    if not indices and _fast_2d(ctx, node, x):
        return [_pool2d(ctx, node, x, "max_pool2d", {})]
    attrs = _nd_attrs(ctx, node, x, "max")
    if indices:
        attrs.update(indices=True,
                     storage_order=int(ctx.attrs(node).get("storage_order", 0)))
    return ctx.emit_multi("pool_nd", [x], attrs)


@converter("AveragePool", versions=(1, 22))
def avg_pool(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    cip = bool(ctx.attrs(node).get("count_include_pad", 0))
    if _fast_2d(ctx, node, x):
        return [_pool2d(ctx, node, x, "avg_pool2d", {"count_include_pad": cip})]
    attrs = _nd_attrs(ctx, node, x, "avg")
    attrs["count_include_pad"] = cip
    return ctx.emit_multi("pool_nd", [x], attrs)


@converter("LpPool", versions=(2, 22))
def lp_pool(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    attrs = _nd_attrs(ctx, node, x, "lp")
    attrs["p"] = int(ctx.attrs(node).get("p", 2))
    return ctx.emit_multi("pool_nd", [x], attrs)
