"""QDQ convolutions to integer kernels (`fuse_qdq_conv`), and their NCHW[x]c form.

ONNX Runtime's quantizer writes an int8 model in QDQ format: each convolution reads
`DequantizeLinear` outputs (activation, int8 weight, int32 bias) and its output goes through
`QuantizeLinear` (a Relu in between when the quantizer kept it). Run as written that is a
float convolution between dequantize and quantize. ONNX Runtime itself fuses the pattern into
QLinearConv; this pass does the same:

    dq(xq, sx, zx), dq(wq, sw, 0), dq(bq, sx*sw, 0) -> conv2d [-> relu] -> q(., sy, zy)
 => qconv2d(xq, wq, bq) {x_zero_point=zx}: int32
    -> cast float32 -> mul M (M[o] = float32(sx * sw[o]) / sy, per channel or tensor)
    -> round (half to even) -> add zy -> clip to the type's range (from zy after a relu)
    -> cast to int8 / uint8

which is QLinearConv's arithmetic exactly as MLAS computes it (the int32 accumulator plus
bias to float32, times the float32 scale, rounded half to even, plus the zero point,
saturated). Weights must be int8 with zero points 0 (the quantizer's default, symmetric per
tensor or per channel), groups 1; anything else stays the float QDQ form (still correct).
It runs before constant folding, which would otherwise turn the weights' dequantize into
float constants (the ONNX frontend keeps those nodes for this reason); the next pass,
`fold_constant_dequantize`, folds the ones it left.

`fuse_qdq_max_pool` runs a max pool between a dequantize and a quantize with the same
parameters on the integers. `qconv_nchwc(rewriter, node)` is the CPU layout pass's rule
for `qconv2d`: the weights packed 4 input channels per int32 (`pack_weight_dot4`), the zero
point folded into the bias."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Node, Value
from ..ops.qconv import pack_weight_dot4
from ..registry import get_op
from .simplify import make_node


def _scalar(v: Value | None) -> Any:
    if v is None:
        return 0
    if not v.is_const or v.const.size != 1:
        return None
    return v.const.reshape(()).item()


def _dq_parts(v: Value) -> tuple[Value, Value, Value | None] | None:
    n = v.producer
    if n is None or n.op != "dequantize" or n.attrs.get("to", "float32") != "float32":
        return None
    ins = n.inputs
    return ins[0], ins[1], ins[2] if len(ins) > 2 else None


def _weight(v: Value, o: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(int8 OIHW weight, float32 (O,) scale) of a dequantized constant weight with zero
    points 0."""
    parts = _dq_parts(v)
    if parts is None:
        return None
    wq, ws, wz = parts
    if not (wq.is_const and wq.dtype == "int8" and ws.is_const and ws.const.size in (1, o)):
        return None
    if wz is not None and (not wz.is_const or np.any(wz.const != 0)):
        return None
    return wq.const, np.broadcast_to(ws.const.astype("float32").reshape(-1), (o,))


def _bias(v: Value | None, scale: np.ndarray) -> np.ndarray | None:
    """The int32 bias of a dequantized int32 constant whose scale is x_scale * w_scale."""
    o = scale.shape[0]
    if v is None:
        return np.zeros(o, "int32")
    parts = _dq_parts(v)
    if parts is None:
        return None
    bq, bs, bz = parts
    if not (bq.is_const and bq.dtype == "int32" and bs.is_const and bs.const.size in (1, o)):
        return None
    if bz is not None and (not bz.is_const or np.any(bz.const != 0)):
        return None
    if not np.allclose(np.broadcast_to(bs.const.reshape(-1), (o,)), scale, rtol=1e-6,
                       atol=0):
        return None
    return bq.const.reshape(-1).astype("int32")


def _only_user(users: dict[Value, list[Node]], v: Value, g: Graph, op: str) -> Node | None:
    us = users.get(v, [])
    if len(us) != 1 or us[0].op != op or any(o is v for o in g.outputs):
        return None
    return us[0]


def _match(g: Graph, n: Node, users: dict[Value, list[Node]]) -> dict[str, Any] | None:
    if n.attrs.get("groups", 1) != 1 or len(n.inputs[0].shape) != 4:
        return None
    x = _dq_parts(n.inputs[0])
    if x is None:
        return None
    xq, xs, xz = x
    sx, zx = _scalar(xs), _scalar(xz)
    if xq.dtype not in ("int8", "uint8") or sx is None or zx is None:
        return None
    o = n.inputs[1].shape[0]
    w = _weight(n.inputs[1], o)
    if w is None:
        return None
    wq, sw = w
    sxw = np.float32(sx) * sw  # float32, as ONNX Runtime's QLinearConv
    bias = _bias(n.inputs[2] if len(n.inputs) > 2 else None, sxw)
    if bias is None:
        return None
    y, relu = n.outputs[0], False
    nxt = users.get(y, [])
    if len(nxt) == 1 and nxt[0].op == "relu" and not any(v is y for v in g.outputs):
        relu, y = True, nxt[0].outputs[0]
    q = _only_user(users, y, g, "quantize")
    if q is None or len(q.inputs) < 2:
        return None
    sy, zy = _scalar(q.inputs[1]), _scalar(q.inputs[2] if len(q.inputs) > 2 else None)
    to = q.attrs.get("to", "uint8")
    if sy is None or zy is None or to not in ("int8", "uint8") or q.attrs.get("precision") \
            or "lo" in q.attrs or "hi" in q.attrs:
        return None
    return {"xq": xq, "zx": int(zx), "wq": wq, "bias": bias, "q": q, "relu": relu,
            "mult": (sxw / np.float32(sy)).astype("float32"), "zy": int(zy), "to": to}


def fuse_qdq_conv(g: Graph) -> Graph:
    """Rewrite every QDQ convolution that `_match` accepts to an integer `qconv2d` and its
    float32 requantization (see the module docstring), in the place of its quantize node
    (the float convolution is left dead)."""
    users = g.consumers()
    replaced: dict[int, list[Node]] = {}  # id(quantize node) -> nodes replacing it
    for n in g.nodes:
        m = _match(g, n, users) if n.op == "conv2d" else None
        if m is not None:
            replaced[id(m["q"])] = _rewrite(g, n, m)
    g.nodes = [r for n in g.nodes for r in replaced.get(id(n), [n])]
    return g


def _rewrite(g: Graph, n: Node, m: dict[str, Any]) -> list[Node]:
    """qconv2d -> cast -> mul (requantization scale) -> round -> add zero point -> clip ->
    cast into the old output: the quantize in float32 vector arithmetic (exact: the rounded
    value is an integer, the sum with the zero point is exact below 2**24 and clipped
    above)."""
    o = len(m["bias"])
    attrs = {k: n.attrs[k] for k in ("strides", "pads", "dilations") if k in n.attrs}
    attrs["x_zero_point"] = m["zx"]
    qconv = make_node(g, "qconv2d", [m["xq"], g.add_const(f"{n.name}_wq", m["wq"]),
                                     g.add_const(f"{n.name}_bq", m["bias"])], attrs,
                      f"{n.name}_acc")
    cast = make_node(g, "cast", qconv.outputs, {"to": "float32"}, f"{n.name}_accf")
    mult = m["mult"]
    mv = g.add_const(f"{n.name}_requant_scale", mult.reshape(1, o, 1, 1)
                     if o > 1 and np.any(mult != mult[0]) else mult[:1].reshape(()))
    mul = make_node(g, "mul", [cast.outputs[0], mv], {}, f"{n.name}_scaled")
    rnd = make_node(g, "round", mul.outputs, {}, f"{n.name}_rounded")
    zy = g.add_const(f"{n.name}_zy", np.array(m["zy"], "float32"))
    add = make_node(g, "add", [rnd.outputs[0], zy], {}, f"{n.name}_shifted")
    info = np.iinfo(m["to"])
    lo = m["zy"] if m["relu"] else int(info.min)
    clip = make_node(g, "clip", add.outputs, {"min": float(lo), "max": float(info.max)},
                     f"{n.name}_clipped")
    q = make_node(g, "cast", clip.outputs, {"to": m["to"]}, m["q"].name)
    q.outputs = list(m["q"].outputs)
    q.outputs[0].producer = q
    return [qconv, cast, mul, rnd, add, clip, q]


def fuse_qdq_max_pool(g: Graph) -> Graph:
    """dq(xq, s, z) -> max_pool2d -> q(., s, z) (the quantizer gives a max pool its input's
    scale and zero point) => max_pool2d(xq): the maximum commutes with the monotone
    dequantize, so the int8 pool is exact (ONNX Runtime drops the pair the same way)."""
    users = g.consumers()
    for n in g.nodes:
        parts = _dq_parts(n.inputs[0]) if n.op == "max_pool2d" and n.inputs else None
        if parts is None or parts[0].dtype not in ("int8", "uint8"):
            continue
        q = _only_user(users, n.outputs[0], g, "quantize")
        if q is None or len(q.inputs) < 2 or set(q.attrs) - {"to"} \
                or q.attrs.get("to") != parts[0].dtype:
            continue
        same = (_scalar(q.inputs[1]), _scalar(q.inputs[2] if len(q.inputs) > 2 else None)) \
            == (_scalar(parts[1]), _scalar(parts[2]))
        if not same or _scalar(parts[1]) is None or _scalar(parts[2]) is None:
            continue
        pool = make_node(g, "max_pool2d", [parts[0]], dict(n.attrs), q.name)
        pool.outputs = list(q.outputs)
        pool.outputs[0].producer = pool
        g.nodes[g.nodes.index(q)] = pool
    return g


def fold_constant_dequantize(g: Graph) -> Graph:
    """Every `dequantize` of constants left (weights of ops other than the convolutions
    above: a Gemm, a BatchNormalization's parameters) becomes its float constant, as the
    frontend would have folded it, so the passes before `fold_constants` (batch-norm
    folding) see constants."""
    repl: dict[int, Value] = {}
    keep: list[Node] = []
    for n in g.nodes:
        n.inputs = [repl.get(id(v), v) for v in n.inputs]
        if n.op == "dequantize" and all(v.is_const for v in n.inputs):
            o = n.outputs[0]
            arr = get_op("dequantize").reference([v.const for v in n.inputs], n.attrs)[0]
            repl[id(o)] = g.add_const(o.name, np.asarray(arr).astype(o.dtype).reshape(o.shape))
        else:
            keep.append(n)
    g.nodes = keep
    g.outputs = [repl.get(id(v), v) for v in g.outputs]
    return g


def qconv_nchwc(rw: Any, n: Node) -> bool:
    """The layout rule for `qconv2d` (`rw`: the NCHW[x]c rewriter): NCHW[x]c int8 data,
    weights packed by `pack_weight_dot4` in output blocks of the float32 lanes (one int32
    accumulator vector; 8 or 4 where the lanes do not divide the channels)."""
    from .layout_nchwc import in_block
    from .subpixel import _emit

    x, w = n.inputs[0], n.inputs[1]
    if not w.is_const or (len(n.inputs) > 2 and not n.inputs[2].is_const):
        return False
    o, c = w.shape[0], w.shape[1]
    ob = next((b for b in (rw.lanes, 8, 4) if o % b == 0), None)
    if ob is None:
        return False
    ib = rw.blocked[id(x)][1] if id(x) in rw.blocked else in_block(c, rw.lanes)
    xb = rw.to_blocked(x, ib)
    pv = int(n.attrs.get("x_zero_point", 0)) + (128 if x.dtype == "int8" else 0)
    wq = w.const
    bias = n.inputs[2].const.astype("int64") if len(n.inputs) > 2 else np.zeros(o, "int64")
    bias = bias - pv * wq.astype("int64").sum(axis=(1, 2, 3))
    if np.abs(bias).max(initial=0) >= 2 ** 31:
        return False
    wp = rw.g.add_const(f"{w.name}_dot4", pack_weight_dot4(wq, ob))
    bv = rw.g.add_const(f"{n.name}_bias_folded", bias.astype("int32"))
    attrs = {k: tuple(n.attrs.get(k, d)) for k, d in
             (("strides", (1, 1)), ("pads", (0, 0, 0, 0)), ("dilations", (1, 1)))}
    y = _emit(rw.g, "qconv2d_nchwc", [xb, wp, bv], {**attrs, "channels": c, "pad_value": pv},
              n.name)
    rw.blocked[id(n.outputs[0])] = (y, ob)
    return True
