"""Channels padded to whole vector blocks in the NCHW[x]c layout pass (`layout_nchwc.py`).

A convolution whose output channel count only quarter- or half-vector blocks divide
(ShuffleNetV2's 58/116/232 channels: blocks of 4 or 8, or none, on a 16-lane AVX-512 core)
computes, when the padding costs at most `PAD_LIMIT` of the work, a whole number of full
vector blocks instead: its weights and bias get zero rows for the extra output channels, and
every convolution that reads the padded value zero columns for them, so whatever the padding
slots hold never reaches a real channel. A value's padding is a tuple of *segments*, each
(logical channels, slots): one segment for a convolution's output, several after a channel
concat of padded parts; slices and splits that take whole segments, the channel shuffle
(`channel_shuffle`'s `padded` attribute: the shuffle's groups are the segments), depthwise
convolutions (zero weights on the padding), pools and elementwise ops carry it. Anywhere else
(`to_plain`) the padded value becomes its logical NCHW form again (one transform, then a slice
per segment). The padding slots hold finite values: zero where a convolution or the shuffle
writes them, or an activation of zero (relu, clip, sigmoid) after an elementwise epilogue.
`-pad-channels=off` (target option) keeps the narrow blocks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Value
from .simplify import make_node
from .subpixel import _emit

__all__ = ["PADDING_SAFE", "PAD_LIMIT", "Segments", "common_segments", "pad_axis",
           "pad_weights", "padded_slice", "padded_slots", "padding_on", "plain_segments",
           "slot_index", "slots", "unpad_to_plain"]

#: pad a conv's output channels to whole vectors when the padding adds at most this share of
#: its channels (58 -> 64, 116 -> 128: 10%; 232 -> 240: 3%; MobileNet's 24 -> 32 (33%) and
#: EfficientNet's 40 -> 48 (20%) keep their half-vector blocks)
PAD_LIMIT = 0.125

Segments = tuple[tuple[int, int], ...]

#: elementwise ops that carry padded channels: finite on finite input
PADDING_SAFE = frozenset({"relu", "clip", "leaky_relu", "sigmoid", "tanh", "hard_sigmoid",
                          "hard_swish", "silu", "neg", "abs", "identity", "add", "sub", "mul",
                          "maximum", "minimum"})


def padding_on(target: Any) -> bool:
    """The `-pad-channels` target option (`auto` unless a target says `off`)."""
    opts = getattr(target, "options", {}) or {}
    return str(opts.get("pad-channels", "auto") or "auto") != "off"


def padded_slots(c: int, lanes: int) -> int | None:
    """Slots for a conv output of `c` channels padded to whole `lanes`-wide blocks, or None
    when a full-vector block divides `c` already or the padding would exceed `PAD_LIMIT`."""
    if c % lanes == 0:
        return None
    s = -(-c // lanes) * lanes
    return s if s - c <= PAD_LIMIT * c else None


def plain_segments(c: int) -> Segments:
    """The segments of an unpadded value of `c` channels."""
    return ((c, c),)


def slots(segs: Segments) -> int:
    return sum(p for _, p in segs)


def slot_index(segs: Segments) -> np.ndarray:
    """The slot of every logical channel, in order."""
    out, at = [], 0
    for real, p in segs:
        out.extend(range(at, at + real))
        at += p
    return np.asarray(out, dtype=np.int64)


def pad_axis(a: np.ndarray, axis: int, segs: Segments) -> np.ndarray:
    """`a` with its `axis` spread to the slots of `segs`, zeros in the padding."""
    shape = list(a.shape)
    shape[axis] = slots(segs)
    out = np.zeros(shape, a.dtype)
    index = [slice(None)] * a.ndim
    index[axis] = slot_index(segs)
    out[tuple(index)] = a
    return out


def unpad_to_plain(g: Graph, bv: Value, b: int, segs: Segments, name: str, out: Value) -> None:
    """Emit the NCHW form `out` of a padded blocked value `bv` (block `b`): one transform to
    NCHW over all slots, then each segment's channels (a slice; a concat of several)."""
    wide = _emit(g, "layout_transform", [bv], {"src_layout": f"NCHW{b}c",
                                               "dst_layout": "NCHW"}, f"{name}_slots")
    n, _, h, w = wide.shape
    parts, at = [], 0
    for real, p in segs:
        parts.append(_emit(g, "strided_slice", [wide],
                           {"begin": (0, at, 0, 0), "step": (1, 1, 1, 1),
                            "size": (n, real, h, w)}, f"{name}_seg{len(parts)}",
                           out if len(segs) == 1 else None))
        at += p
    if len(segs) > 1:
        _emit(g, "concat", parts, {"axis": 1}, f"{name}_to_nchw", out)


def common_segments(rw: Any, n: Any, tensors: list[Value], b: int) -> Any:
    """The padding an elementwise node `n` carries in the layout pass `rw`: None when no
    operand is padded, the operands' common segments when all are padded alike in block `b`
    and the op keeps the padding finite (`PADDING_SAFE`), else False (it runs unpadded)."""
    if not any(id(v) in rw.segs for v in tensors):
        return None
    segs = rw.segs.get(id(tensors[0]))
    if n.op not in PADDING_SAFE or any(
            rw.segs.get(id(v)) != segs or rw.blocked[id(v)][1] != b for v in tensors):
        return False
    return segs


def pad_weights(g: Graph, n: Any, in_segs: Segments | None, out_segs: Segments | None,
                depthwise: bool) -> tuple[Value, list[Value]]:
    """(weights, [bias]) of conv `n` spread to the padded channels' slots, zeros in the
    padding (a depthwise conv's output channels are its input's)."""
    w = n.inputs[1].const
    if depthwise:
        w = pad_axis(w, 0, in_segs)
    else:
        w = pad_axis(w, 1, in_segs) if in_segs else w
        w = pad_axis(w, 0, out_segs) if out_segs else w
    wv = g.add_const(f"{n.inputs[1].name}_padded", np.ascontiguousarray(w))
    rest = []
    for v in n.inputs[2:]:  # the bias (O,)
        if out_segs and v.const.ndim == 1:
            v = g.add_const(f"{v.name}_padded", pad_axis(v.const, 0, out_segs))
        rest.append(v)
    return wv, rest


def padded_slice(rw: Any, n: Any, xb: Value, b: int, segs: Segments) -> bool:
    """split / channel slice of a padded value: each part whole segments, taken by their
    slots (its own segments carried)."""
    bounds, at = {0: (0, 0)}, (0, 0)  # logical channel -> (segment index, slot)
    for i, (real, p) in enumerate(segs):
        at = (at[0] + real, at[1] + p)
        bounds[at[0]] = (i + 1, at[1])
    x, nn = n.inputs[0], n.inputs[0].shape[0]
    if n.op == "split":
        if n.attrs["axis"] % 4 != 1:
            return False
        cuts = np.cumsum((0, *n.attrs["sizes"])).tolist()
    else:
        begin, step, size = n.attrs["begin"], n.attrs["step"], n.attrs["size"]
        if (begin[0], size[0]) != (0, nn) or tuple(step) != (1, 1, 1, 1) or tuple(
                begin[2:]) != (0, 0) or tuple(size[2:]) != tuple(x.shape[2:]):
            return False
        cuts = [begin[1], begin[1] + size[1]]
    if any(k not in bounds for k in cuts):
        return False
    parts = [(bounds[a], bounds[z]) for a, z in zip(cuts, cuts[1:])]
    if n.op == "split":
        node = make_node(rw.g, "split", [xb], {
            "axis": 1, "sizes": tuple((z[1] - a[1]) // b for a, z in parts)}, n.name)
        rw.g.nodes.append(node)
        outs = list(zip(n.outputs, node.outputs))
    else:
        (a, z), = parts
        _, _, h, w = x.shape
        y = _emit(rw.g, "strided_slice", [xb],
                  {"begin": (0, a[1] // b, 0, 0, 0), "step": (1,) * 5,
                   "size": (nn, (z[1] - a[1]) // b, h, w, b)}, n.name)
        outs = [(n.outputs[0], y)]
    for (o, bo), (a, z) in zip(outs, parts):
        rw.set_blocked(o, bo, b, segs[a[0]:z[0]])
    return True
