"""Group merges after `fuse_ops`' walk (which only ever joins a node to the group of its
producer, through a value read once):

- `merge_reshape_readers`: a group that is one reshape, whose result one other group reads,
  joins that group: the reader's kernel reads the reshape's input through the index map (a
  reshape is a renaming of the same elements), instead of a kernel copying them first. The
  graph pass `split_shared_reshapes` gives each reader of a shared reshape its own copy of
  the node first.
- `merge_diamonds`: elementwise groups whose every input comes from one group G (or is a
  constant, or comes from groups that do not depend on G) join G when together they leave
  one output: GELU written out, ``x * (1 + erf(x / sqrt 2)) / 2`` after a dense product,
  reads the product twice (so the walk stops at it) but is an epilogue of the product."""

from __future__ import annotations

from typing import Any

from ..ir import Graph, Node, Value
from ..registry import OpPattern

_EW = OpPattern.BROADCAST


def join_groups(into: Any, other: Any, groups: list[Any], group_of: dict[int, Any],
                order: dict[int, int]) -> None:
    """`other`'s nodes, values and dependencies move into `into`; readers of `other` now
    depend on `into`. `other` stays in `groups` (the caller drops it)."""
    into.nodes = sorted(into.nodes + other.nodes, key=lambda n: order[id(n)])
    into.made |= other.made
    into.reads |= other.reads
    into.deps |= other.deps - {into}
    for n in other.nodes:
        group_of[id(n)] = into
    for x in groups:
        if other in x.deps:
            x.deps.discard(other)
            if x is not into:
                x.deps.add(into)


def _absorb(into: Any, other: Any, groups: list[Any], group_of: dict[int, Any],
            order: dict[int, int]) -> None:
    join_groups(into, other, groups, group_of, order)
    groups.remove(other)


def _readers(g: Graph) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {}
    for n in g.nodes:
        for v in n.inputs:
            out.setdefault(id(v), []).append(n)
    return out


def merge_reshape_readers(g: Graph, groups: list[Any], group_of: dict[int, Any],
                          views: set[int] | frozenset[int] = frozenset()) -> None:
    """The first merge (module docstring); in place. A reader in `views` (ids of zero-copy
    concats, `concat_views`: no kernel to read through) keeps its reshape apart."""
    order = {id(n): i for i, n in enumerate(g.nodes)}
    readers = _readers(g)
    outputs = {id(v) for v in g.outputs}
    for grp in list(groups):
        if len(grp.nodes) != 1 or grp.nodes[0].op != "reshape":
            continue
        v = grp.nodes[0].outputs[0]
        rs = readers.get(id(v), [])
        if id(v) in outputs or len(rs) != 1 or id(rs[0]) in views:
            continue
        _absorb(group_of[id(rs[0])], grp, groups, group_of, order)


def merge_diamonds(g: Graph, groups: list[Any], group_of: dict[int, Any],
                   max_nodes: int) -> None:
    """The second merge (module docstring); in place. A merged group holds at most
    `max_nodes` nodes (`fuse.MAX_FUSED_NODES`: the loop-IR passes recurse through a
    kernel's expressions)."""
    order = {id(n): i for i, n in enumerate(g.nodes)}
    readers = _readers(g)
    outputs = {id(v) for v in g.outputs}

    def external_outputs(members: set[int], nodes: list[Node]) -> list[Value]:
        return [o for n in nodes for o in n.outputs
                if id(o) in outputs or any(id(r) not in members for r in readers.get(id(o), []))]

    for grp in list(groups):
        if grp not in groups or grp.pattern != OpPattern.OUT_ELEMWISE_FUSABLE:
            continue
        shape = grp.master.outputs[0].shape
        while True:
            outs = external_outputs({id(n) for n in grp.nodes}, grp.nodes)
            if len(outs) != 1 or id(outs[0]) in outputs:
                break
            cands = {id(group_of[id(r)]): group_of[id(r)] for r in readers.get(id(outs[0]), [])}
            if not cands or any(c.pattern > _EW or any(o.shape != shape for n in c.nodes
                                                       for o in n.outputs)
                                for c in cands.values()):
                break
            # each candidate may also read groups other than grp and the candidates, if
            # those do not depend on grp (no cycle through them)
            if any(d is not grp and all(d is not c2 for c2 in cands.values()) and d.reaches(grp)
                   for c in cands.values() for d in c.deps):
                break
            members = {id(n) for n in grp.nodes}
            for c in cands.values():
                members |= {id(n) for n in c.nodes}
            if len(members) > max_nodes:
                break
            nodes = [n for n in g.nodes if id(n) in members]
            if len(external_outputs(members, nodes)) != 1:
                break
            for c in cands.values():
                _absorb(grp, c, groups, group_of, order)


def split_shared_reshapes(g: Graph) -> Graph:
    """A reshape read by several nodes becomes one reshape per reader (so each reader's
    kernel can read through it; `merge_reshape_readers`). Reshapes of constants and reshapes
    that are graph outputs stay as they are."""
    readers = _readers(g)
    outputs = {id(v) for v in g.outputs}
    nodes: list[Node] = []
    for n in g.nodes:
        v = n.outputs[0] if n.op == "reshape" else None
        rs = list({id(r): r for r in readers.get(id(v), [])}.values()) if v is not None else []
        if v is None or n.inputs[0].is_const or id(v) in outputs or len(rs) < 2:
            nodes.append(n)
            continue
        for k, r in enumerate(rs):
            out = Value(g.unique_name(f"{v.name}_{k}"), v.shape, v.dtype)
            copy = Node("reshape", list(n.inputs), [out], dict(n.attrs),
                        g.unique_name(f"{n.name}_{k}", g._node_names))
            out.producer = copy
            nodes.append(copy)
            r.inputs = [out if x is v else x for x in r.inputs]
    g.nodes = nodes
    return g
