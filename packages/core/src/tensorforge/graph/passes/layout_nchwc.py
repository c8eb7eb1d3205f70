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
- `qconv2d` (int8, from `qdq.py`) to `qconv2d_nchwc` (weights 4 channels per int32);

and inserts `layout_transform` only where a value enters the blocked region (the network
input) or leaves it (an op without a blocked form: reshape/flatten, a graph output), once per
value. Transposed convolutions are first rewritten to convolutions (`subpixel.py`).

Block sizes come from the channel counts and the target's float32 lanes L: the output block
is 2L, L, L/2 or 4, the first that divides the channel count (2L only from 4L channels up);
the input block of a convolution reuses the producer's block, or for a network input the
largest divisor of C up to L (3 for RGB). A convolution whose output channels only L/2 or 4
divide, or none, gets L-wide blocks with its channels padded when that adds at most 1/8
(`layout_padding.py`: 58 -> 64, 116 -> 128); otherwise it keeps the narrow block, or stays
in NCHW (odd counts: 3, 5, 17).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Node, Value
from ..registry import OpPattern, get_op
from .dilated import split_dilated_bands
from .layout_flat import flat_pixels_on
from .layout_padding import (
    Segments,
    common_segments,
    pad_axis,
    pad_weights,
    padded_slice,
    padded_slots,
    padding_on,
    plain_segments,
    unpad_to_plain,
)
from .placement import placed_elsewhere
from .qdq import qconv_nchwc
from .simplify import make_node
from .subpixel import _emit, rewrite_conv_transpose

_POOLS = {"max_pool2d": "max_pool2d_nchwc", "avg_pool2d": "avg_pool2d_nchwc",
          "global_avg_pool2d": "global_avg_pool2d_nchwc"}


def _lanes(target: Any) -> int:
    from ...ops.schedule_generic import vector_lanes

    return vector_lanes(target, "float32")


def out_block(c: int, lanes: int, divides: int = 0) -> int | None:
    """The channel block of a conv output with `c` channels (None: stay in NCHW); with
    `divides`, a block that also divides it (the channels per group of a grouped consumer)."""
    for b in (2 * lanes, lanes, lanes // 2, 4):
        if b >= 4 and c % b == 0 and (b <= lanes or c >= 2 * b) and (
                not divides or divides % b == 0):
            return b
    return None


def group_caps(g: Graph, lanes: int) -> dict[int, int]:
    """id(value) -> a number its channel block must divide: the channels per group of the
    grouped convolutions that read it (when a multiple of the lanes: narrower groups re-block
    their input, cheaper than a producer in 4-lane blocks), and the channel counts of the
    other parts of a channel concat it is part of; carried back through the elementwise ops
    (BN, relu), pools and concats between them and the producing convolution, so that
    convolution picks a block its readers can use without re-blocking (RegNet: 64 channels in
    groups of 16 take blocks of 16; a DenseNet block's 64 + 32k channels take blocks of 32)."""
    caps: dict[int, int] = {}
    for n in reversed(g.nodes):
        if n.op == "conv2d" and len(n.inputs) > 1 and n.inputs[1].is_const:
            groups = n.attrs.get("groups", 1)
            cg = n.inputs[1].shape[1]
            if groups > 1 and cg % lanes == 0:  # narrower groups re-block their input:
                x = n.inputs[0]  # a producer in 4-lane blocks is slower than one transform
                caps[id(x)] = int(np.gcd(caps.get(id(x), 0), cg))
        if n.op == "concat" and n.attrs.get("axis", 0) % 4 == 1 and all(
                len(v.shape) == 4 for v in n.inputs):
            # blocks stay whole in a channel concat: the block divides every part
            cap = caps.get(id(n.outputs[0]), 0)
            for v in n.inputs:
                cap = int(np.gcd(cap, v.shape[1]))
            # one block for all parts: the one the smallest part can take (not a quarter
            # vector: then the parts keep their own blocks and the concat runs in NCHW)
            cap = out_block(min(v.shape[1] for v in n.inputs), lanes, cap) or 0
            if 4 * cap <= lanes:
                continue
            for v in n.inputs:
                caps[id(v)] = int(np.gcd(caps.get(id(v), 0), cap))
            continue
        if len(n.outputs) != 1 or id(n.outputs[0]) not in caps:
            continue
        out = n.outputs[0]
        through = n.op in _POOLS or get_op(n.op).pattern <= OpPattern.BROADCAST
        for v in n.inputs if through else ():
            if not v.is_const and len(v.shape) == 4 and v.shape[:2] == out.shape[:2]:
                caps[id(v)] = int(np.gcd(caps.get(id(v), 0), caps[id(out)]))
    return caps


def in_block(c: int, lanes: int) -> int:
    """The channel block of a network input with `c` channels."""
    return out_block(c, lanes) or max(d for d in range(1, min(c, lanes) + 1) if c % d == 0)


def dense_block(n: int, lanes: int) -> int | None:
    for b in (2 * lanes, lanes, lanes // 2):
        if b >= 4 and n % b == 0:
            return b
    return None


#: a wide dense whose columns no block divides packs its weight in a panel count that is a
#: multiple of this (zero panels, never stored), so a register tile of up to 8 panels divides
#: it: 50257 columns are 3142 panels of 16 (2 x 1571: tiles of 1 or 2 panels only)
RAGGED_PANEL_ROUND = 8


def ragged_dense_block(units: int, lanes: int) -> int:
    """The panel width of a dense whose columns no block divides: a full vector once there
    are 8 vectors of columns or more (the padding is then under an eighth), else half a
    vector (a classifier of 10 pads 6 columns, not 22)."""
    return lanes if units >= 8 * lanes else max(4, lanes // 2)


def _live_taps(size: int, out: int, k: int, stride: int, dil: int, pad: int) -> list[int]:
    """Taps of one spatial axis that read the input (not only padding) for some output."""
    return [r for r in range(k) if any(0 <= o * stride + r * dil - pad < size
                                       for o in range(out))]


def prune_dead_taps(g: Graph, n: Node) -> None:
    """A dilated convolution whose outer taps read only padding for every output (DeepLab's
    atrous rates 24 and 36 on a 14x14 map: a 3x3 kernel at dilation 24 is a 1x1 conv) gets
    the live taps' weights and the padding that keeps its output shape: the work of the taps
    that only add zeros is gone. In place on `n` (weights: a new constant)."""
    x, w = n.inputs[0], n.inputs[1]
    if not w.is_const or len(x.shape) != 4:
        return
    _, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = n.attrs.get("strides", (1, 1)), n.attrs.get("dilations", (1, 1))
    pt, pl, pb, pr = n.attrs.get("pads", (0, 0, 0, 0))
    oh, ow = n.outputs[0].shape[2:]
    new_pads, keep = [], []
    for size, out, k, st, d, p0 in ((x.shape[2], oh, kh, sh, dh, pt),
                                    (x.shape[3], ow, kw, sw, dw, pl)):
        live = _live_taps(size, out, k, st, d, p0)
        if not live:
            return
        r0, r1 = live[0], live[-1]
        q0 = p0 - r0 * d
        q1 = (out - 1) * st + d * (r1 - r0) + 1 - size - q0
        if q0 < 0 or q1 < 0:
            return
        keep.append((r0, r1 + 1))
        new_pads.append((q0, q1))
    if keep == [(0, kh), (0, kw)]:
        return
    (a0, a1), (b0, b1) = keep
    wc = np.ascontiguousarray(w.const[:, :, a0:a1, b0:b1])
    n.inputs[1] = g.add_const(f"{w.name}_live", wc)
    n.attrs = {**n.attrs, "pads": (new_pads[0][0], new_pads[1][0], new_pads[0][1],
                                   new_pads[1][1]),
               "dilations": (dh if a1 - a0 > 1 else 1, dw if b1 - b0 > 1 else 1)}


class _Rewriter:
    def __init__(self, g: Graph, lanes: int, winograd: Any = None, target: Any = None):
        self.g, self.lanes, self.target = g, lanes, target
        self.caps = group_caps(g, lanes)
        self.skip: set[int] = set()  # nodes folded into an earlier rule (channel shuffle)
        self.reblocked: dict[tuple[int, int], Value] = {}  # (id(value), block) -> value
        self.consumers: dict[int, list[Node]] = {}
        for n in g.nodes:
            for v in n.inputs:
                self.consumers.setdefault(id(v), []).append(n)
        self.blocked: dict[int, tuple[Value, int]] = {}  # id(NCHW value) -> (blocked, x)
        self.plain: set[int] = set()  # NCHW values that exist (or were materialized)
        self.winograd = winograd
        self.pad = padding_on(target)
        #: id(NCHW value) -> its segments, for values held with channels padded to whole
        #: blocks (`layout_padding.py`); the blocked value then has `slots(segs)` channels
        self.segs: dict[int, Segments] = {}

    # moving values between layouts ---------------------------------------------------------
    def to_plain(self, v: Value) -> Value:
        """`v` in NCHW: materialized once from its blocked form (as the original value)."""
        if id(v) in self.segs and id(v) not in self.plain:
            bv, b = self.blocked[id(v)]
            unpad_to_plain(self.g, bv, b, self.segs[id(v)], v.name, v)
            self.plain.add(id(v))
        if id(v) in self.blocked and id(v) not in self.plain:
            bv, b = self.blocked[id(v)]
            _emit(self.g, "layout_transform", [bv],
                  {"src_layout": f"NCHW{b}c", "dst_layout": "NCHW"}, f"{v.name}_to_nchw", v)
            self.plain.add(id(v))
        return v

    def to_blocked(self, v: Value, b: int) -> Value:
        """`v` in NCHW[b]c without padding (a padded value goes through its NCHW form)."""
        if id(v) in self.segs:
            key = (id(v), b)
            if key not in self.reblocked:
                self.reblocked[key] = _emit(
                    self.g, "layout_transform", [self.to_plain(v)],
                    {"src_layout": "NCHW", "dst_layout": f"NCHW{b}c"}, f"{v.name}_nchw{b}c")
            return self.reblocked[key]
        if id(v) in self.blocked and self.blocked[id(v)][1] == b:
            return self.blocked[id(v)][0]
        if id(v) in self.blocked:  # another block: one re-blocking transform, kept apart
            key = (id(v), b)
            if key not in self.reblocked:
                bv, b0 = self.blocked[id(v)]
                self.reblocked[key] = _emit(
                    self.g, "layout_transform", [bv],
                    {"src_layout": f"NCHW{b0}c", "dst_layout": f"NCHW{b}c"},
                    f"{v.name}_nchw{b}c")
            return self.reblocked[key]
        src = self.to_plain(v)
        bv = _emit(self.g, "layout_transform", [src],
                   {"src_layout": "NCHW", "dst_layout": f"NCHW{b}c"}, f"{v.name}_nchw{b}c")
        self.blocked[id(v)] = (bv, b)
        self.plain.add(id(v))
        return bv

    def segments(self, v: Value) -> Segments:
        """The segments of a blocked value (one unpadded segment unless padded)."""
        return self.segs.get(id(v), plain_segments(v.shape[1]))

    def set_blocked(self, v: Value, bv: Value, b: int, segs: Segments | None = None) -> None:
        """Record `bv` (block `b`) as the blocked form of `v`, padded as `segs` says."""
        self.blocked[id(v)] = (bv, b)
        if segs is not None and any(real != p for real, p in segs):
            self.segs[id(v)] = segs

    def keep(self, n: Node) -> None:
        n.inputs = [self.to_plain(v) for v in n.inputs]
        self.g.nodes.append(n)
        self.plain.update(id(o) for o in n.outputs)

    def _narrow(self, b: int, n: Node) -> bool:
        """Quarter-vector blocks (ShuffleNet's 116 channels in blocks of 4 on 16 lanes) on an
        image at least a vector wide: NCHW with vectors along the width does more per FMA."""
        return 4 * b <= self.lanes and n.outputs[0].shape[3] >= self.lanes

    # rules -----------------------------------------------------------------------------------
    def conv(self, n: Node) -> bool:
        if len(n.inputs[0].shape) != 4 or not all(v.is_const for v in n.inputs[1:]):
            return False
        prune_dead_taps(self.g, n)
        x, w = n.inputs[0], n.inputs[1]
        o, cg, kh, kw = w.shape
        c = x.shape[1]
        groups = n.attrs.get("groups", 1)
        depthwise = groups > 1 and groups == c == o and cg == 1
        attrs = {k: tuple(n.attrs.get(k, d)) for k, d in
                 (("strides", (1, 1)), ("pads", (0, 0, 0, 0)), ("dilations", (1, 1)))}
        cap = self.caps.get(id(n.outputs[0]), 0)
        in_segs = self.segs.get(id(x)) if groups == 1 or depthwise else None
        out_segs = in_segs if depthwise else None
        if depthwise:
            ob = self.blocked[id(x)][1] if id(x) in self.blocked else out_block(c, self.lanes)
            if ob is None or self._narrow(ob, n) and not in_segs:
                return False
            ib, op = 1, "depthwise_conv2d_nchwc"
        elif groups > 1:  # grouped: blocks within a group (x | C/groups, y | O/groups)
            ob = out_block(o, self.lanes, int(np.gcd(o // groups, cap or o // groups)))
            have = self.blocked[id(x)][1] if id(x) in self.blocked else None
            ib = have if have is not None and cg % have == 0 else out_block(c, self.lanes, cg)
            if ob is None or ib is None:
                return False
            op = "conv2d_nchwc"
            attrs["groups"] = groups
        else:
            ob = out_block(o, self.lanes, cap) or out_block(o, self.lanes)
            wide = padded_slots(o, self.lanes) if self.pad and (
                ob is None or ob < self.lanes) else None
            if wide:  # narrow blocks or none: whole vectors, zero weights in the padding
                ob, out_segs = self.lanes, ((o, wide),)
            elif ob is None or self._narrow(ob, n):
                # no block, or quarter-vector blocks (ShuffleNet's 116 channels in 4s) on a
                # wide image: NCHW, vectors along the width (conv2d/direct_nchw)
                return False
            ib = self.blocked[id(x)][1] if id(x) in self.blocked else in_block(c, self.lanes)
            op = "conv2d_nchwc"
        if n.attrs.get("out_dtype"):  # int8 x int8 -> int32: kept, and no Winograd
            attrs["out_dtype"] = n.attrs["out_dtype"]
        elif op == "conv2d_nchwc" and groups == 1 and flat_pixels_on(
                self.target, kh, kw, x.shape[3], attrs):
            attrs["flat_pixels"] = True  # one row of H*W pixels (`conv2d_nchwc`)
        if in_segs:  # read as it is, padding and all
            xb, xblock = self.blocked[id(x)]
            ob, ib = (xblock, 1) if depthwise else (ob, xblock)
        else:
            xb = self.to_blocked(x, ob if depthwise else ib)
        if in_segs or out_segs:  # zero weights (and bias) on the padding slots
            w, rest = pad_weights(self.g, n, in_segs, out_segs, depthwise)
        else:
            rest = list(n.inputs[2:])
        if not depthwise and groups == 1 and self.winograd is not None and \
                "out_dtype" not in attrs and not (in_segs or out_segs):
            wino = self.winograd(n, x.shape, w.shape, attrs, ib, ob, self.lanes)
            if wino is not None:
                y = wino(self.g, n, xb, ib, ob)
                self.blocked[id(n.outputs[0])] = (y, ob)
                return True
        wp = _emit(self.g, "layout_transform", [w],
                   {"src_layout": "OIHW", "dst_layout": f"OIHW{ib}i{ob}o"}, f"{w.name}_packed")
        y = _emit(self.g, op, [xb, wp, *rest], attrs, n.name)
        self.set_blocked(n.outputs[0], y, ob, out_segs)
        return True

    def elementwise(self, n: Node) -> bool:
        if get_op(n.op).pattern > OpPattern.BROADCAST or len(n.outputs) != 1:
            return False
        if n.op == "batch_norm":  # (C,) parameters indexed by channel: no blocked form
            return False
        out = n.outputs[0]
        tensors = [v for v in n.inputs if not v.is_const]
        if len(out.shape) != 4 or not tensors or not any(id(v) in self.blocked for v in tensors):
            return False
        per_channel = (out.shape[0], out.shape[1], 1, 1)  # SE's scale: (N, C, 1, 1)
        if any(tuple(v.shape) not in (tuple(out.shape), per_channel) for v in tensors):
            return False
        if not any(id(v) in self.blocked and tuple(v.shape) == tuple(out.shape)
                   for v in tensors):
            return False
        if any(v.is_const and v.const.ndim > 4 for v in n.inputs):
            return False
        b = next(self.blocked[id(v)][1] for v in tensors
                 if id(v) in self.blocked and tuple(v.shape) == tuple(out.shape))
        segs = common_segments(self, n, tensors, b)
        if segs is False:
            return False
        ins = []
        for v in n.inputs:
            if v.is_const:
                ins.append(self._relay_const(v, b, segs))
            else:
                ins.append(self.blocked[id(v)][0] if segs else self.to_blocked(v, b))
        y = _emit(self.g, n.op, ins, dict(n.attrs), n.name)
        self.set_blocked(out, y, b, segs)
        return True

    def _relay_const(self, v: Value, b: int, segs: Segments | None = None) -> Value:
        a = v.const
        if a.ndim == 0:
            return v
        a4 = a.reshape((1,) * (4 - a.ndim) + a.shape)
        if segs and a4.shape[1] > 1:  # per-channel: zeros on the padding slots
            a4 = pad_axis(a4, 1, segs)
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
        self.set_blocked(n.outputs[0], y, b, self.segs.get(id(x)))
        return True

    def shuffle(self, n: Node) -> bool:
        x = n.inputs[0]
        if n.op != "pixel_shuffle" or id(x) not in self.blocked or id(x) in self.segs:
            return False
        xb, b = self.blocked[id(x)]
        if n.outputs[0].shape[1] % b:
            return False
        y = _emit(self.g, "pixel_shuffle", [xb], dict(n.attrs), n.name)
        self.blocked[id(n.outputs[0])] = (y, b)
        return True

    def concat(self, n: Node) -> bool:
        """Channel concat of blocked inputs: blocks stay whole (each input's channel count is a
        multiple of the block), so it is a concat along the C/x axis of NCHW[x]c; a concat
        along H or W (a dilated conv's bands) is one along the same axis."""
        out = n.outputs[0]
        axis = n.attrs.get("axis", 0) % 4
        if len(out.shape) != 4 or axis == 0 or any(
                v.is_const or len(v.shape) != 4 for v in n.inputs):
            return False
        first = next((self.blocked[id(v)][1] for v in n.inputs if id(v) in self.blocked), None)
        padded = [v for v in n.inputs if id(v) in self.segs]
        if first is None or any(v.shape[1] % first for v in n.inputs if id(v) not in self.segs
                                ) or any(self.blocked[id(v)][1] != first for v in padded):
            return False
        if padded and axis != 1:
            return False
        ins = [self.blocked[id(v)][0] if id(v) in self.segs else self.to_blocked(v, first)
               for v in n.inputs]
        y = _emit(self.g, "concat", ins, {"axis": axis}, n.name)  # H, W: the same axis
        segs = sum((self.segments(v) for v in n.inputs), ()) if padded else None
        self.set_blocked(out, y, first, segs)
        return True

    def global_mean(self, n: Node) -> bool:
        """reduce_mean over H and W (the dynamo exporter's adaptive average pool, and
        ShuffleNet's head) on a blocked input: the blocked global average pool."""
        x, out = n.inputs[0], n.outputs[0]
        axes = {int(a) % 4 for a in n.attrs.get("axes") or ()} if len(x.shape) == 4 else set()
        if axes != {2, 3} or id(x) not in self.blocked:
            return False
        xb, b = self.blocked[id(x)]
        if n.attrs.get("keepdims", True):
            y = _emit(self.g, "global_avg_pool2d_nchwc", [xb], {}, n.name)
            self.set_blocked(out, y, b, self.segs.get(id(x)))
            return True
        if id(x) in self.segs:
            return False
        y = _emit(self.g, "global_avg_pool2d_nchwc", [xb], {}, n.name)
        plain = _emit(self.g, "layout_transform", [y],
                      {"src_layout": f"NCHW{b}c", "dst_layout": "NCHW"}, f"{n.name}_to_nchw")
        _emit(self.g, "reshape", [plain], {"shape": tuple(out.shape)}, f"{n.name}_flat", out)
        self.plain.add(id(out))
        return True

    def channel_shuffle(self, n: Node) -> bool:
        """reshape (N, g, C/g, H, W) -> transpose (0, 2, 1, 3, 4) -> reshape (N, C, H, W) of
        a blocked value: one `channel_shuffle` that stays blocked (the two intermediate values
        have no other reader and are dropped)."""
        x, mid = n.inputs[0], n.outputs[0]
        if id(x) not in self.blocked or len(x.shape) != 4 or len(mid.shape) != 5:
            return False
        nn, c, h, w = x.shape
        gr = mid.shape[1]
        if tuple(mid.shape) != (nn, gr, c // gr, h, w) or gr * (c // gr) != c:
            return False
        t = self.consumers.get(id(mid), [])
        if len(t) != 1 or t[0].op != "transpose" or tuple(t[0].attrs.get("perm", ())) != (
                0, 2, 1, 3, 4):
            return False
        r = self.consumers.get(id(t[0].outputs[0]), [])
        if len(r) != 1 or r[0].op != "reshape" or tuple(r[0].outputs[0].shape) != tuple(
                x.shape) or any(id(v) in {id(o) for o in self.g.outputs}
                                for v in (mid, t[0].outputs[0])):
            return False
        if any(placed_elsewhere(m, self.target) for m in (t[0], r[0])):
            return False  # another device runs part of the shuffle
        xb, b = self.blocked[id(x)]
        attrs: dict[str, Any] = {"groups": gr}
        segs = self.segs.get(id(x))
        if segs:  # the groups must be the segments: each run of C/g channels in P slots
            if len(segs) != gr or len(set(segs)) != 1 or segs[0][0] != c // gr:
                return False
            attrs["padded"] = segs[0]
        y = _emit(self.g, "channel_shuffle", [xb], attrs, r[0].name)
        self.set_blocked(r[0].outputs[0], y, b, segs)
        self.skip.update((id(t[0]), id(r[0])))
        return True

    def channel_slice(self, n: Node) -> bool:
        """strided_slice / split of whole channel blocks of a blocked value (ShuffleNet's
        branches): the same op on the C/x axis; a slice of rows or columns (a dilated conv's
        bands) keeps the blocks."""
        x = n.inputs[0]
        if id(x) not in self.blocked or len(x.shape) != 4:
            return False
        xb, b = self.blocked[id(x)]
        nn, c, h, w = x.shape
        if id(x) in self.segs:
            return padded_slice(self, n, xb, b, self.segs[id(x)])
        if n.op == "split":
            sizes = n.attrs["sizes"]
            if n.attrs["axis"] % 4 != 1 or any(z % b for z in sizes):
                return False
            node = make_node(self.g, "split", [xb],
                             {"axis": 1, "sizes": tuple(z // b for z in sizes)}, n.name)
            self.g.nodes.append(node)
            for o, bo in zip(n.outputs, node.outputs):
                self.blocked[id(o)] = (bo, b)
            return True
        at = n.attrs
        begin, step, size = at["begin"], at["step"], at["size"]
        if (begin[0], size[0]) != (0, nn) or tuple(step) != (1, 1, 1, 1) or begin[1] % b or (
                size[1] % b):
            return False
        y = _emit(self.g, "strided_slice", [xb],
                  {"begin": (0, begin[1] // b, begin[2], begin[3], 0), "step": (1,) * 5,
                   "size": (nn, size[1] // b, size[2], size[3], b)}, n.name)
        self.blocked[id(n.outputs[0])] = (y, b)
        return True

    def resize(self, n: Node) -> bool:
        """A resize of H and W only (DeepLab's bilinear upsampling) on a blocked input: the
        same per-axis interpolation on NCHW[x]c, lanes = channels."""
        x, at = n.inputs[0], n.attrs
        if id(x) not in self.blocked or id(x) in self.segs or len(x.shape) != 4 or len(
                n.inputs) != 1 or tuple(at["size"][:2]) != tuple(x.shape[:2]) or tuple(
                at["scales"][:2]) != (1.0, 1.0):
            return False
        xb, b = self.blocked[id(x)]
        nn, c, oh, ow = at["size"]
        y = _emit(self.g, "resize", [xb], {**at, "size": (nn, c // b, oh, ow, b),
                                          "scales": (*at["scales"], 1.0)}, n.name)
        self.blocked[id(n.outputs[0])] = (y, b)
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
        units = ins[1].shape[0]
        b = dense_block(units, self.lanes)
        attrs: dict[str, Any] = {k: v for k, v in n.attrs.items() if k == "out_dtype"}
        if b is None:  # a classifier of 10: the last panel zero-padded, packed here
            b = ragged_dense_block(units, self.lanes)
            panels = -(-units // b)
            if panels >= RAGGED_PANEL_ROUND * 8:  # (GPT-2's LM head: 50257 columns)
                panels = -(-panels // RAGGED_PANEL_ROUND) * RAGGED_PANEL_ROUND
            wpad = np.zeros((panels * b, ins[1].shape[1]), ins[1].dtype)
            wpad[:units] = ins[1].const
            wp = self.g.add_const(f"{ins[1].name}_packed", np.ascontiguousarray(
                wpad.reshape(-1, b, wpad.shape[1]).transpose(0, 2, 1)))
            attrs["units"] = units
        else:
            wp = _emit(self.g, "layout_transform", [ins[1]],
                       {"src_layout": "NK", "dst_layout": f"NK{b}n"}, f"{ins[1].name}_packed")
        _emit(self.g, "dense_packed", [self.to_plain(ins[0]), wp, *ins[2:]], attrs, n.name,
              n.outputs[0])
        self.plain.add(id(n.outputs[0]))
        return True

    def run(self) -> Graph:
        g = self.g
        old, g.nodes = g.nodes, []
        self.plain.update(id(v) for v in g.inputs)
        for n in old:
            done = False
            if id(n) in self.skip:
                continue
            if placed_elsewhere(n, self.target):  # another device runs it: leave it NCHW
                self.keep(n)
                continue
            if n.op == "conv2d":
                done = self.conv(n)
            elif n.op == "qconv2d":
                done = qconv_nchwc(self, n)
            elif n.op in _POOLS:
                done = self.pool(n)
            elif n.op == "pixel_shuffle":
                done = self.shuffle(n)
            elif n.op in ("dense", "matmul"):
                done = self.dense(n)
            elif n.op == "concat":
                done = self.concat(n)
            elif n.op == "reduce_mean":
                done = self.global_mean(n)
            elif n.op == "reshape":
                done = self.channel_shuffle(n)
            elif n.op in ("strided_slice", "split"):
                done = self.channel_slice(n)
            elif n.op == "resize":
                done = self.resize(n)
            else:
                done = self.elementwise(n)
            if not done:
                self.keep(n)
        g.outputs = [self.to_plain(v) for v in g.outputs]
        return g


def convert_layout_nchwc(g: Graph, target: Any = None, winograd: Any = None) -> Graph:
    """The pass (see the module docstring). `winograd(node, x_shape, w_shape, attrs, ib, ob,
    lanes)` may return a builder that emits a Winograd convolution instead of the direct one."""
    g = split_dilated_bands(rewrite_conv_transpose(g, target), target)
    return _Rewriter(g, _lanes(target), winograd, target).run()


def count_layout_transforms(g: Graph) -> int:
    """layout_transform nodes on non-constant values (what runs at inference)."""
    return sum(1 for n in g.nodes if n.op == "layout_transform" and not n.inputs[0].is_const)
