"""VDLA's `graph.layout` pass: claim the quantized convolutions and the classifier.

Runs before placement (`graph/passes/placement.py`). A node goes to `vdla` when VDLA computes
it exactly as the graph says:

- `conv2d` int8 x int8 -> int32 (batch 1, groups 1, no dilation, one stride, equal pads)
  whose only reader is a `requantize` to int8 with a multiplier below 2**15 (a 16-bit ALU
  immediate) and zero point 0, and for which a tile fits the SRAMs: it becomes
  `conv2d_nchwc` on NCHW<bi>c data and OIHW<bi>i<bo>o weights (channels zero-padded to the
  blocks: the 3-channel stem too) plus `vdla_requantize` (bias, requantization and relu's
  clip on the ALU, `graph_ops.py`); one kernel after fusion.
- `dense` int8 x int8 -> int32 with batch 1: `dense_packed` on (N'/bo, K', bo) weights, the
  bias added on the host (the result stays int32).

The data moves between the layouts through `layout_transform` (and `pad` / `strided_slice`
for padded channels), which stay unplaced here: placement puts them, and every node VDLA
does not run, on the host (`vdla -host=llvm`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorforge.graph.ir import Graph, Node, Value
from tensorforge.graph.passes.placement import DEVICE_ATTR
from tensorforge.graph.passes.simplify import make_node
from tensorforge.runtime.transforms import np_layout_transform

from .config import VDLAConfig
from .errors import VDLACompileError
from .graph_ops import MAX_ROUND_SHIFT  # noqa: F401  (registers vdla_requantize)
from .strategies import ConvShape, Epilogue, fitting_tiles

#: ALU immediates are 16-bit signed
_IMM_MAX = (1 << 15) - 1


def _up(n: int, b: int) -> int:
    return -(-n // b) * b


def _emit(g: Graph, op: str, inputs: list[Value], attrs: dict[str, Any], name: str,
          out: Value | None = None, device: str | None = None) -> Value:
    node = make_node(g, op, inputs, attrs, name)
    if device is not None:
        node.attrs[DEVICE_ATTR] = device
    if out is not None:
        assert tuple(node.outputs[0].shape) == tuple(out.shape), (op, node.outputs, out)
        node.outputs = [out]
        out.producer = node
    g.nodes.append(node)
    return node.outputs[0]


def _requantize_ok(r: Node) -> bool:
    at = r.attrs
    return (r.op == "requantize" and at.get("to", "int8") == "int8"
            and int(at.get("zero_point", 0)) == 0 and 0 < int(at["multiplier"]) <= _IMM_MAX
            and -128 <= int(at.get("lo", -128)) <= int(at.get("hi", 127)) <= 127)


def conv_shape(n: Node, config: VDLAConfig) -> ConvShape | None:
    """The VDLA form of a quantized conv2d node, or None when VDLA cannot run it."""
    x, w = n.inputs[0], n.inputs[1]
    at = n.attrs
    if (at.get("out_dtype") != "int32" or x.dtype != "int8" or not w.is_const
            or w.dtype != "int8" or x.shape[0] != 1 or at.get("groups", 1) != 1
            or tuple(at.get("dilations", (1, 1))) != (1, 1)
            or not all(v.is_const for v in n.inputs[2:])):
        return None
    sh, sw = at.get("strides", (1, 1))
    pads = tuple(at.get("pads", (0, 0, 0, 0)))
    if sh != sw or len(set(pads)) != 1:
        return None
    o, c, kh, kw = w.shape
    return ConvShape(x.shape[2], x.shape[3], _up(c, config.block_in) // config.block_in,
                     _up(o, config.block_out) // config.block_out, kh, kw, sh, pads[0])


class _Claim:
    def __init__(self, g: Graph, target: Any):
        self.g, self.target = g, target
        self.config = VDLAConfig.from_target(target)
        self.device = target.kind.name
        self.readers: dict[int, list[Node]] = {}
        for n in g.nodes:
            for v in n.inputs:
                self.readers.setdefault(id(v), []).append(n)
        self.skip: set[int] = set()

    def sole_reader(self, v: Value) -> Node | None:
        r = self.readers.get(id(v), [])
        return r[0] if len(r) == 1 and v not in self.g.outputs else None

    def pad_channels(self, x: Value, c: int, name: str) -> Value:
        """x (N, C, ...) zero-padded to `c` channels (on the host)."""
        if x.shape[1] == c:
            return x
        pads = [(0, 0)] * len(x.shape)
        pads[1] = (0, c - x.shape[1])
        return _emit(self.g, "pad", [x], {"pads": tuple(pads), "value": 0}, f"{name}_pad")

    def conv(self, n: Node) -> bool:
        cfg = self.config
        shape = conv_shape(n, cfg)
        r = self.sole_reader(n.outputs[0])
        if shape is None or r is None or not _requantize_ok(r):
            return False
        try:
            fitting_tiles(shape, cfg, Epilogue(2 if len(n.inputs) > 2 else 1,
                                               int(len(n.inputs) > 2)))
        except VDLACompileError:
            return False
        bi, bo = cfg.block_in, cfg.block_out
        w = n.inputs[1].const
        o, c = w.shape[:2]
        op_, cp = _up(o, bo), _up(c, bi)
        wpad = np.zeros((op_, cp, *w.shape[2:]), np.int8)
        wpad[:o, :c] = w
        wp = self.g.add_const(f"{n.inputs[1].name}_vdla",
                              np_layout_transform(wpad, "OIHW", f"OIHW{bi}i{bo}o"))
        x = self.pad_channels(n.inputs[0], cp, n.name)
        xb = _emit(self.g, "layout_transform", [x],
                   {"src_layout": "NCHW", "dst_layout": f"NCHW{bi}c"}, f"{n.name}_nchw{bi}c")
        at = n.attrs
        acc = _emit(self.g, "conv2d_nchwc", [xb, wp],
                    {"strides": tuple(at.get("strides", (1, 1))),
                     "pads": tuple(at.get("pads", (0, 0, 0, 0))), "dilations": (1, 1),
                     "out_dtype": "int32"}, n.name, device=self.device)
        ins = [acc]
        if len(n.inputs) > 2:
            b = np.zeros(op_, np.int32)
            b[:o] = n.inputs[2].const.reshape(-1)
            ins.append(self.g.add_const(f"{n.inputs[2].name}_vdla",
                                        b.reshape(1, op_ // bo, 1, 1, bo)))
        ra = r.attrs
        q = _emit(self.g, "vdla_requantize", ins,
                  {"multiplier": int(ra["multiplier"]), "shift": int(ra["shift"]),
                   "lo": int(ra.get("lo", -128)), "hi": int(ra.get("hi", 127))},
                  r.name, device=self.device)
        out = r.outputs[0]
        if op_ == o:
            _emit(self.g, "layout_transform", [q],
                  {"src_layout": f"NCHW{bo}c", "dst_layout": "NCHW"}, f"{r.name}_nchw", out)
        else:
            y = _emit(self.g, "layout_transform", [q],
                      {"src_layout": f"NCHW{bo}c", "dst_layout": "NCHW"}, f"{r.name}_nchw")
            _emit(self.g, "strided_slice", [y], {"begin": (0, 0, 0, 0), "step": (1, 1, 1, 1),
                                                 "size": tuple(out.shape)},
                  f"{r.name}_unpad", out)
        self.skip.add(id(r))
        return True

    def dense(self, n: Node) -> bool:
        x, w = n.inputs[0], n.inputs[1]
        if (n.attrs.get("out_dtype") != "int32" or x.dtype != "int8" or not w.is_const
                or w.dtype != "int8" or x.shape[0] != 1
                or not all(v.is_const for v in n.inputs[2:])):
            return False
        bi, bo = self.config.block_in, self.config.block_out
        units, k = w.shape
        np_, kp = _up(units, bo), _up(k, bi)
        wpad = np.zeros((np_, kp), np.int8)
        wpad[:units, :k] = w.const
        wp = self.g.add_const(f"{w.name}_vdla", np.ascontiguousarray(
            wpad.reshape(np_ // bo, bo, kp).transpose(0, 2, 1)))
        xp = self.pad_channels(x, kp, n.name)
        out = n.outputs[0]
        bias = n.inputs[2:]
        direct = np_ == units and not bias
        y = _emit(self.g, "dense_packed", [xp, wp], {"out_dtype": "int32"}, n.name,
                  out if direct else None, device=self.device)
        if np_ != units:
            y = _emit(self.g, "strided_slice", [y], {"begin": (0, 0), "step": (1, 1),
                                                     "size": (1, units)}, f"{n.name}_unpad",
                      None if bias else out)
        if bias:
            _emit(self.g, "add", [y, bias[0]], {}, f"{n.name}_bias", out)
        return True

    def run(self) -> Graph:
        old, self.g.nodes = self.g.nodes, []
        for n in old:
            if id(n) in self.skip:
                continue
            if DEVICE_ATTR not in n.attrs:
                if n.op == "conv2d" and self.conv(n):
                    continue
                if n.op == "dense" and self.dense(n):
                    continue
            self.g.nodes.append(n)
        return self.g


def convert_layout(g: Graph, target: Any) -> Graph:
    """Claim what VDLA runs (module docstring); the rest is left for placement."""
    return _Claim(g, target).run()


__all__ = ["conv_shape", "convert_layout"]
