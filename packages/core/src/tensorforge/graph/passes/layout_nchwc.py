"""The NCHW[x]c layout pass for SIMD CPUs (a target registers it at stage `graph.layout`).

Walking the graph in order, it converts

- `conv2d` with constant weights (groups 1, or depthwise) to `conv2d_nchwc` /
  `depthwise_conv2d_nchwc`: weights packed OIHW[x]i[y]o by a `layout_transform` of the
  constant (folded at compile time);
- elementwise/broadcast ops whose tensor operands are all blocked (relu, clip, the residual
  add, the BN scale/shift): the same op, per-channel constants re-laid to (.., C/x, .., x);
- pools and `pixel_shuffle` on a blocked input: their NCHW[x]c forms;
- `concat` along the channels of blocked inputs (SqueezeNet's fire modules) whose channel
  counts the block divides: a concat along the channel-block axis of NCHW[x]c;
- `dense` (and 2-D `matmul`) with a constant weight to `dense_packed` (weights NK[y]n);

and inserts `layout_transform` only where a value enters the blocked region (the network
input) or leaves it (an op without a blocked form: reshape/flatten, a graph output), once per
value. Transposed convolutions are first rewritten to convolutions (`subpixel.py`).

Block sizes come from the channel counts and the target's float32 lanes L: the output block
is 2L, L, L/2 or 4, the first that divides the channel count (2L only from 4L channels up);
the input block of a convolution reuses the producer's block, or for a network input the
largest divisor of C up to L (3 for RGB). A convolution whose output channels have none of
these divisors (odd counts: 3, 5, 17) stays in NCHW; channels are not padded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Node, Value
from ..registry import OpPattern, get_op
from .placement import placed_elsewhere
from .subpixel import _emit, rewrite_conv_transpose

_POOLS = {"max_pool2d": "max_pool2d_nchwc", "avg_pool2d": "avg_pool2d_nchwc",
          "global_avg_pool2d": "global_avg_pool2d_nchwc"}


def _lanes(target: Any) -> int:
    from ...ops.schedule_generic import vector_lanes

    return vector_lanes(target, "float32")


def out_block(c: int, lanes: int) -> int | None:
    """The channel block of a conv output with `c` channels (None: stay in NCHW)."""
    for b in (2 * lanes, lanes, lanes // 2, 4):
        if b >= 4 and c % b == 0 and (b <= lanes or c >= 2 * b):
            return b
    return None


def in_block(c: int, lanes: int) -> int:
    """The channel block of a network input with `c` channels."""
    return out_block(c, lanes) or max(d for d in range(1, min(c, lanes) + 1) if c % d == 0)


def dense_block(n: int, lanes: int) -> int | None:
    for b in (2 * lanes, lanes, lanes // 2):
        if b >= 4 and n % b == 0:
            return b
    return None


class _Rewriter:
    def __init__(self, g: Graph, lanes: int, winograd: Any = None, target: Any = None):
        self.g, self.lanes, self.target = g, lanes, target
        self.blocked: dict[int, tuple[Value, int]] = {}  # id(NCHW value) -> (blocked, x)
        self.plain: set[int] = set()  # NCHW values that exist (or were materialized)
        self.winograd = winograd

    # moving values between layouts ---------------------------------------------------------
    def to_plain(self, v: Value) -> Value:
        """`v` in NCHW: materialized once from its blocked form (as the original value)."""
        if id(v) in self.blocked and id(v) not in self.plain:
            bv, b = self.blocked[id(v)]
            _emit(self.g, "layout_transform", [bv],
                  {"src_layout": f"NCHW{b}c", "dst_layout": "NCHW"}, f"{v.name}_to_nchw", v)
            self.plain.add(id(v))
        return v

    def to_blocked(self, v: Value, b: int) -> Value:
        if id(v) in self.blocked and self.blocked[id(v)][1] == b:
            return self.blocked[id(v)][0]
        src = self.to_plain(v)
        bv = _emit(self.g, "layout_transform", [src],
                   {"src_layout": "NCHW", "dst_layout": f"NCHW{b}c"}, f"{v.name}_nchw{b}c")
        self.blocked[id(v)] = (bv, b)
        self.plain.add(id(v))
        return bv

    def keep(self, n: Node) -> None:
        n.inputs = [self.to_plain(v) for v in n.inputs]
        self.g.nodes.append(n)
        self.plain.update(id(o) for o in n.outputs)

    # rules -----------------------------------------------------------------------------------
    def conv(self, n: Node) -> bool:
        x, w = n.inputs[0], n.inputs[1]
        if len(x.shape) != 4 or not all(v.is_const for v in n.inputs[1:]):
            return False
        o, cg, kh, kw = w.shape
        c = x.shape[1]
        groups = n.attrs.get("groups", 1)
        depthwise = groups > 1 and groups == c == o and cg == 1
        if groups != 1 and not depthwise:
            return False
        attrs = {k: tuple(n.attrs.get(k, d)) for k, d in
                 (("strides", (1, 1)), ("pads", (0, 0, 0, 0)), ("dilations", (1, 1)))}
        if depthwise:
            ob = self.blocked[id(x)][1] if id(x) in self.blocked else out_block(c, self.lanes)
            if ob is None:
                return False
            ib, op = 1, "depthwise_conv2d_nchwc"
        else:
            ob = out_block(o, self.lanes)
            if ob is None:
                return False
            ib = self.blocked[id(x)][1] if id(x) in self.blocked else in_block(c, self.lanes)
            op = "conv2d_nchwc"
        xb = self.to_blocked(x, ob if depthwise else ib)
        if not depthwise and self.winograd is not None:
            wino = self.winograd(n, x.shape, w.shape, attrs, ib, ob, self.lanes)
            if wino is not None:
                y = wino(self.g, n, xb, ib, ob)
                self.blocked[id(n.outputs[0])] = (y, ob)
                return True
        wp = _emit(self.g, "layout_transform", [w],
                   {"src_layout": "OIHW", "dst_layout": f"OIHW{ib}i{ob}o"}, f"{w.name}_packed")
        y = _emit(self.g, op, [xb, wp, *n.inputs[2:]], attrs, n.name)
        self.blocked[id(n.outputs[0])] = (y, ob)
        return True

    def elementwise(self, n: Node) -> bool:
        if get_op(n.op).pattern > OpPattern.BROADCAST or len(n.outputs) != 1:
            return False
        out = n.outputs[0]
        tensors = [v for v in n.inputs if not v.is_const]
        if len(out.shape) != 4 or not tensors or not any(id(v) in self.blocked for v in tensors):
            return False
        if any(tuple(v.shape) != tuple(out.shape) for v in tensors):
            return False
        if any(v.is_const and v.const.ndim > 4 for v in n.inputs):
            return False
        b = next(self.blocked[id(v)][1] for v in tensors if id(v) in self.blocked)
        ins = []
        for v in n.inputs:
            if v.is_const:
                ins.append(self._relay_const(v, b))
            else:
                ins.append(self.to_blocked(v, b))
        y = _emit(self.g, n.op, ins, dict(n.attrs), n.name)
        self.blocked[id(out)] = (y, b)
        return True

    def _relay_const(self, v: Value, b: int) -> Value:
        a = v.const
        if a.ndim == 0:
            return v
        a4 = a.reshape((1,) * (4 - a.ndim) + a.shape)
        n0, c0, h0, w0 = a4.shape
        if c0 == 1:
            r = a4.reshape(n0, 1, h0, w0, 1)
        else:
            r = a4.reshape(n0, c0 // b, b, h0, w0).transpose(0, 1, 3, 4, 2)
        return self.g.add_const(f"{v.name}_nchw{b}c", np.ascontiguousarray(r))

    def pool(self, n: Node) -> bool:
        x = n.inputs[0]
        if n.op not in _POOLS or id(x) not in self.blocked:
            return False
        xb, b = self.blocked[id(x)]
        y = _emit(self.g, _POOLS[n.op], [xb], dict(n.attrs), n.name)
        self.blocked[id(n.outputs[0])] = (y, b)
        return True

    def shuffle(self, n: Node) -> bool:
        x = n.inputs[0]
        if n.op != "pixel_shuffle" or id(x) not in self.blocked:
            return False
        xb, b = self.blocked[id(x)]
        if n.outputs[0].shape[1] % b:
            return False
        y = _emit(self.g, "pixel_shuffle", [xb], dict(n.attrs), n.name)
        self.blocked[id(n.outputs[0])] = (y, b)
        return True

    def concat(self, n: Node) -> bool:
        """Channel concat of blocked inputs: blocks stay whole (each input's channel count is a
        multiple of the block), so it is a concat along the C/x axis of NCHW[x]c."""
        out = n.outputs[0]
        if len(out.shape) != 4 or n.attrs.get("axis", 0) % 4 != 1 or any(
                v.is_const or len(v.shape) != 4 for v in n.inputs):
            return False
        first = next((self.blocked[id(v)][1] for v in n.inputs if id(v) in self.blocked), None)
        if first is None or any(v.shape[1] % first for v in n.inputs):
            return False
        ins = [self.to_blocked(v, first) for v in n.inputs]
        y = _emit(self.g, "concat", ins, {"axis": 1}, n.name)
        self.blocked[id(out)] = (y, first)
        return True

    def dense(self, n: Node) -> bool:
        if n.op == "matmul" and len(n.inputs) == 2 and n.inputs[1].is_const and len(
                n.inputs[0].shape) == 2 and n.inputs[1].const.ndim == 2:
            w = self.g.add_const(f"{n.inputs[1].name}_t",
                                 np.ascontiguousarray(n.inputs[1].const.T))
            ins = [n.inputs[0], w]
        elif n.op == "dense" and all(v.is_const for v in n.inputs[1:]):
            ins = list(n.inputs)
        else:
            return False
        b = dense_block(ins[1].shape[0], self.lanes)
        if b is None:
            return False
        wp = _emit(self.g, "layout_transform", [ins[1]],
                   {"src_layout": "NK", "dst_layout": f"NK{b}n"}, f"{ins[1].name}_packed")
        _emit(self.g, "dense_packed", [self.to_plain(ins[0]), wp, *ins[2:]], {}, n.name,
              n.outputs[0])
        self.plain.add(id(n.outputs[0]))
        return True

    def run(self) -> Graph:
        g = self.g
        old, g.nodes = g.nodes, []
        self.plain.update(id(v) for v in g.inputs)
        for n in old:
            done = False
            if placed_elsewhere(n, self.target):  # another device runs it: leave it NCHW
                self.keep(n)
                continue
            if n.op == "conv2d":
                done = self.conv(n)
            elif n.op in _POOLS:
                done = self.pool(n)
            elif n.op == "pixel_shuffle":
                done = self.shuffle(n)
            elif n.op in ("dense", "matmul"):
                done = self.dense(n)
            elif n.op == "concat":
                done = self.concat(n)
            else:
                done = self.elementwise(n)
            if not done:
                self.keep(n)
        g.outputs = [self.to_plain(v) for v in g.outputs]
        return g


def convert_layout_nchwc(g: Graph, target: Any = None, winograd: Any = None) -> Graph:
    """The pass (see the module docstring). `winograd(node, x_shape, w_shape, attrs, ib, ob,
    lanes)` may return a builder that emits a Winograd convolution instead of the direct one."""
    g = rewrite_conv_transpose(g, target)
    return _Rewriter(g, _lanes(target), winograd, target).run()


def count_layout_transforms(g: Graph) -> int:
    """layout_transform nodes on non-constant values (what runs at inference)."""
    return sum(1 for n in g.nodes if n.op == "layout_transform" and not n.inputs[0].is_const)
