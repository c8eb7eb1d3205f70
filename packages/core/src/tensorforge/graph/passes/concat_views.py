"""Zero-copy concatenation: a concat whose parts are contiguous slices of its output becomes
a view, and the producers of its parts write straight into those slices.

A concat along axis `a` of an output whose dimensions before `a` are all 1 (a channel concat
at batch 1, in NCHW or along the C/x axis of NCHW[x]c) lays each part out as one contiguous
byte range of the output. `concat_views(g)` places every part at (root value, byte offset):
the root is the output of the last concat of a chain, and a part that is itself a concat
output passes its placement on to its own parts. DenseNet's blocks concatenate all earlier
features again for every layer (`cat(x0, f1..fk)`, then `cat(x0, f1..fk+1)`): each of those is
a prefix of the block's last concat, so the whole block lives in one buffer and nothing is
copied.

A concat stays a copy when a part is a graph input or output, a constant, read twice by it,
already placed elsewhere by another concat (a value has one address), would land on bytes
another part already holds (only the enclosing concat views may share them), or would start
off a 64-byte boundary (the alignment of every storage); so does a concat whose output is a graph
output, and one placed on a device or fed by a part from another device (heterogeneous models:
views exist in host memory only). `fuse_ops` keeps view concats in groups of their own,
`plan_memory` gives the parts their root's storage at their offsets (one storage live from the
first part written to the last alias read), and the compiler emits no kernel for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Node, Value

ALIGN = 64


@dataclass
class ConcatViews:
    """`placement[id(value)] = (root, byte offset)` for every value stored inside a root's
    buffer (the parts and the intermediate concat outputs); `nodes` the concats that are
    views; `copy_bytes` what the concats that stay copies move per run."""

    placement: dict[int, tuple[Value, int]] = field(default_factory=dict)
    nodes: set[int] = field(default_factory=set)
    # id(root) -> (start, end, value) of everything placed in it; id() of view concat outputs
    occupants: dict[int, list[tuple[int, int, Value]]] = field(default_factory=dict)
    views: set[int] = field(default_factory=set)
    copy_bytes: int = 0
    view_bytes: int = 0  # what the view concats would have copied


def _contiguous(n: Node) -> bool:
    out = n.outputs[0]
    axis = n.attrs.get("axis", 0) % len(out.shape)
    return all(d == 1 for d in out.shape[:axis])


def concat_views(g: Graph) -> ConcatViews:
    """Which concats of `g` are views and where every part lives (see the module doc)."""
    res = ConcatViews()
    external = {id(v) for v in g.inputs} | {id(v) for v in g.outputs}
    for n in reversed(g.nodes):
        if n.op != "concat":
            continue
        out = n.outputs[0]
        plan = _place(n, res, external) if _contiguous(n) else None
        if plan is None:
            res.copy_bytes += out.nbytes
            continue
        res.nodes.add(id(n))
        res.view_bytes += out.nbytes
        res.views.add(id(out))
        root, base = res.placement.get(id(out), (out, 0))
        occ = res.occupants.setdefault(id(root), [])
        if id(out) not in res.placement:
            occ.append((0, out.nbytes, out))
        for v in n.inputs:
            if id(v) not in res.placement:
                r, off = plan[id(v)]
                occ.append((off, off + v.nbytes, v))
        res.placement.update(plan)
    return res


def _same_host_device(n: Node) -> bool:
    """The concat and the producers of its parts run on one CPU device (a heterogeneous
    model's device kernels write whole device buffers, never host slices)."""
    from .placement import DEVICE_ATTR, on_host_memory

    where = n.attrs.get(DEVICE_ATTR)
    return on_host_memory(n) and all(
        v.producer is None or v.producer.attrs.get(DEVICE_ATTR) == where for v in n.inputs)


def _place(n: Node, res: ConcatViews, external: set[int]) -> dict[int, tuple[Value, int]] | None:
    out = n.outputs[0]
    if id(out) in external or not _same_host_device(n):
        return None
    if id(out) not in res.placement and n.inputs and id(n.inputs[0]) in res.placement:
        # the parts already sit side by side in a later concat's buffer (DenseNet: each
        # layer's cat(x0, f1..fk) is a prefix of the block's cat(x0, f1..fn)): a view there
        root, base = res.placement[id(n.inputs[0])]
        res.placement[id(out)] = (root, base)
        plan = _place(n, res, external)
        if plan is None:
            del res.placement[id(out)]
        return plan
    root, base = res.placement.get(id(out), (out, 0))
    plan: dict[int, tuple[Value, int]] = {}
    off = base
    for v in n.inputs:
        if v.is_const or id(v) in external or id(v) in plan or v.dtype != out.dtype or (
                v.producer is None) or off % ALIGN or off + v.nbytes > root.nbytes:
            return None
        want = (root, off)
        have = res.placement.get(id(v))
        if have is not None and (have[0] is not root or have[1] != off):
            return None
        if have is None and any(  # only concat views around it may share its bytes
                a < off + v.nbytes and off < b and not (
                    id(w) in res.views and a <= off and off + v.nbytes <= b)
                for a, b, w in res.occupants.get(id(root), ())):
            return None
        plan[id(v)] = want
        off += v.nbytes
    return plan
