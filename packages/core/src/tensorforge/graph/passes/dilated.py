"""Output bands of a dilated convolution that only some taps reach.

An atrous convolution on a small map (DeepLab's ASPP: 3x3 at dilation 12 on 14x14, padding
12) reads mostly padding: output row 5 meets the input only through the centre row of taps,
rows 0-1 through the centre and bottom rows, rows 12-13 through the top and centre. Computing
all nine taps everywhere does 5x the useful work and streams a 38x38 padded copy of the input.

`split_dilated_bands` cuts such a convolution along H, then each part along W, into bands of
output positions that meet the same taps: each band is a convolution with only those taps, on
the rows/columns of the input they read (a `strided_slice`), with the padding that keeps its
output size; a `concat` along H (W) puts the bands back together. It applies only to dilated
convolutions with constant weights where the bands save at least `MIN_SAVING` of the tap work;
the result is exact (the same sums, without the terms that read padding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Node, Value
from .simplify import make_node

MIN_SAVING = 0.4  # split only when the bands do at most 60% of the taps' work


def _bands(size: int, out: int, k: int, s: int, d: int, p0: int) -> list[tuple[int, int, tuple]]:
    """(first, end, live taps) of runs of output positions that meet the same taps."""
    bands: list[tuple[int, int, tuple]] = []
    for y in range(out):
        live = tuple(r for r in range(k) if 0 <= y * s + r * d - p0 < size)
        if bands and bands[-1][2] == live:
            bands[-1] = (bands[-1][0], y + 1, live)
        else:
            bands.append((y, y + 1, live))
    return bands


def _split(g: Graph, n: Node, axis: int, out_value: Value | None = None) -> list[Node] | None:
    """Nodes replacing conv `n` by bands along `axis` (2: H, 3: W), or None."""
    x, w = n.inputs[0], n.inputs[1]
    j = axis - 2
    size, out, k = x.shape[axis], n.outputs[0].shape[axis], w.shape[axis]
    s = tuple(n.attrs.get("strides", (1, 1)))[j]
    d = tuple(n.attrs.get("dilations", (1, 1)))[j]
    pads = list(n.attrs.get("pads", (0, 0, 0, 0)))
    bands = _bands(size, out, k, s, d, pads[j])
    work = sum((b - a) * len(live) for a, b, live in bands)
    if len(bands) < 2 or any(not live for _, _, live in bands) or work > (
            1 - MIN_SAVING) * k * out:
        return None
    nodes: list[Node] = []
    parts = []
    for a, b, live in bands:
        r0, r1 = live[0], live[-1]
        need_lo, need_hi = a * s + r0 * d - pads[j], (b - 1) * s + r1 * d - pads[j]
        lo, hi = max(0, need_lo), min(size - 1, need_hi)
        xin = x
        if (lo, hi) != (0, size - 1):
            begin = [0, 0, 0, 0]
            extent = list(x.shape)
            begin[axis], extent[axis] = lo, hi - lo + 1
            sl = make_node(g, "strided_slice", [x], {"begin": tuple(begin), "step": (1,) * 4,
                                                     "size": tuple(extent)},
                           f"{n.name}_in{axis}_{a}")
            nodes.append(sl)
            xin = sl.outputs[0]
        idx = [slice(None)] * 4
        idx[axis] = slice(r0, r1 + 1)
        wb = g.add_const(f"{w.name}_b{axis}_{a}", np.ascontiguousarray(w.const[tuple(idx)]))
        bp = list(pads)
        bp[j], bp[j + 2] = lo - need_lo, need_hi - hi
        dil = list(n.attrs.get("dilations", (1, 1)))
        dil[j] = d if r1 > r0 else 1
        conv = make_node(g, "conv2d", [xin, wb, *n.inputs[2:]],
                         {**n.attrs, "pads": tuple(bp), "dilations": tuple(dil)},
                         f"{n.name}_b{axis}_{a}")
        assert conv.outputs[0].shape[axis] == b - a
        sub = _split(g, conv, 3) if axis == 2 else None
        if sub is None:
            nodes.append(conv)
            parts.append(conv.outputs[0])
        else:
            nodes.extend(sub)
            parts.append(sub[-1].outputs[0])
    cat = make_node(g, "concat", parts, {"axis": axis}, f"{n.name}_bands{axis}")
    target = out_value if out_value is not None else n.outputs[0]
    cat.outputs = [target]
    target.producer = cat
    nodes.append(cat)
    return nodes


def split_dilated_bands(g: Graph, target: Any = None) -> Graph:
    """Replace every dilated convolution where bands pay (see the module doc), except those
    placed on another target than `target`."""
    from .placement import placed_elsewhere

    new: list[Node] = []
    for n in g.nodes:
        dil = tuple(n.attrs.get("dilations", (1, 1))) if n.op == "conv2d" and not \
            placed_elsewhere(n, target) else (1, 1)
        if dil != (1, 1) and len(n.inputs) > 1 and n.inputs[1].is_const and len(
                n.inputs[0].shape) == 4 and n.attrs.get("groups", 1) == 1:
            repl = _split(g, n, 2) or _split(g, n, 3)
            if repl is not None:
                new.extend(repl)
                continue
        new.append(n)
    g.nodes = new
    return g
