"""Operator fusion by op class (TVM's rules), from a graph to fused groups in topological order.

Walking the nodes in order, a node joins the group of the producer of one of its inputs when:

- that value has this node as its only consumer and is not a graph output (a value read
  outside a group, or by the user, must be materialized), and is not an index input of the
  node (`OpDef.index_inputs`: checked indices stay a kernel argument, so that a failed check
  can report the offending value);
- the classes allow it:
  * an OUT_ELEMWISE_FUSABLE group (conv2d, dense, matmul, pools) takes ELEMWISE/BROADCAST
    consumers of the master's output shape: bias, batch-norm scale/shift, relu/clip, the
    residual add;
  * an injective group (ELEMWISE/BROADCAST/INJECTIVE) takes injective consumers, and a
    COMM_REDUCE consumer, which becomes the master (the chain is inlined into the reduction);
  * a COMM_REDUCE group takes ELEMWISE/BROADCAST consumers of its output shape;
  * OUT_ELEMWISE_FUSABLE and OPAQUE nodes never join a producer; nothing joins an OPAQUE node.

Then a reshape read by one group joins it, and elementwise groups that together form one
epilogue of a dense/conv group join it (`fuse_merge.py`: GELU's diamond). Then multi-output
epilogues (`_merge_epilogues`): the group of a `dense_packed` with few rows
(a recurrent product h @ W, at most `EPILOGUE_MAX_ROWS`) absorbs the injective groups that read
its outputs (an LSTM cell's gate split, nonlinearities and state update, then tanh(c) * o)
when no cycle results: one kernel per step, the product materialized inside it, the cell
state and hidden state its outputs.

A group holds at most `MAX_FUSED_NODES` nodes (TVM's `max_depth`, there 256): a kernel's
expressions nest as deep as its chain of inlined ops, and the loop-IR passes walk them
recursively (a 5,000-op elementwise chain in one kernel overflowed Python's stack). Longer
chains become several kernels, which identical workloads then share. A group also stops
where inlining would make an expression read its inputs more than `MAX_INLINE_SIZE` times
(ops that read their input twice double it: see `inline_size.py`).

With `enabled=False` (opt-level 0) every node is its own group. With `device_of` (a node ->
device name map from placement), a node joins only a group on its own device: fusion never
crosses devices.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import TensorforgeError
from ...naming import c_identifier
from ..groups import FusedGroup
from ..ir import Graph, Node, Value
from ..registry import OpPattern, get_op
from .concat_views import concat_views
from .fuse_merge import join_groups, merge_diamonds, merge_reshape_readers
from .inline_size import MAX_INLINE_SIZE, input_reads

_EW = OpPattern.BROADCAST
_INJ = OpPattern.INJECTIVE
EPILOGUE_MAX_ROWS = 8  # dense products with more rows keep their epilogues separate
_EPILOGUE_MASTERS = ("dense_packed",)
MAX_FUSED_NODES = 64  # real models' largest groups hold 14 (an LSTM cell step)
MAX_GROUP_ARGS = 256  # kernel parameters (ctypes passes at most 1024)


class _Group:
    def __init__(self, node: Node, pattern: OpPattern):
        self.nodes = [node]
        self.pattern = pattern
        self.master = node
        self.deps: set[_Group] = set()  # groups whose outputs this one reads
        self.made = {id(o) for o in node.outputs}
        self.reads = {id(v) for v in node.inputs}  # values read (from anywhere)

    def args_with(self, n: Node) -> int:
        """About how many kernel arguments the group has with `n` added (values read from
        outside, plus this node's outputs)."""
        made = self.made | {id(o) for o in n.outputs}
        reads = self.reads | {id(v) for v in n.inputs}
        return len(reads - made) + len(made)

    def reaches(self, other: _Group) -> bool:
        """Whether this group depends on `other`, directly or through other groups."""
        todo, seen = [self], set()
        while todo:
            grp = todo.pop()
            if grp is other:
                return True
            if grp not in seen:
                seen.add(grp)
                todo.extend(grp.deps)
        return False

    def accepts(self, n: Node, pattern: OpPattern) -> bool:
        gp = self.pattern
        if (pattern >= OpPattern.OUT_ELEMWISE_FUSABLE or gp == OpPattern.OPAQUE
                or len(self.nodes) >= MAX_FUSED_NODES or self.args_with(n) > MAX_GROUP_ARGS):
            return False
        same_shape = all(o.shape == self.master.outputs[0].shape for o in n.outputs)
        if gp in (OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.COMM_REDUCE):
            return pattern <= _EW and same_shape
        # injective group
        return pattern <= OpPattern.COMM_REDUCE

    def add(self, n: Node, pattern: OpPattern) -> None:
        self.nodes.append(n)
        self.made.update(id(o) for o in n.outputs)
        self.reads.update(id(v) for v in n.inputs)
        if pattern > self.pattern:
            self.pattern = pattern
        if pattern >= OpPattern.COMM_REDUCE or self.pattern <= _INJ:
            self.master = n


def fuse_ops(g: Graph, enabled: bool = True,
             device_of: Callable[[Node], str] | None = None) -> list[FusedGroup]:
    """Cut `g` into fused groups (one kernel each), in an order that respects dependencies;
    with `device_of`, groups never span two devices. A zero-copy concat (`concat_views`) is
    a group of its own that nothing joins (a view, no kernel)."""
    consumers = g.consumers()
    views = concat_views(g).nodes if enabled else set()
    graph_outputs = {id(v) for v in g.outputs}
    group_of: dict[int, _Group] = {}  # id(node) -> group
    groups: list[_Group] = []
    size: dict[int, int] = {}  # id(node) -> reads of its group's inputs, inlined
    for n in g.nodes:
        opdef = get_op(n.op)
        pattern = OpPattern.OPAQUE if id(n) in views else opdef.pattern
        joined = None
        if enabled and pattern < OpPattern.OUT_ELEMWISE_FUSABLE:
            for pos, v in _by_producer_class(n, group_of):
                p = v.producer
                if v.is_const or p is None or id(v) in graph_outputs:
                    continue
                if pos in opdef.index_inputs:
                    continue  # indices stay a kernel argument (the error path reads them)
                if any(c is not n for c in consumers.get(v, [])):
                    continue
                grp = group_of[id(p)]
                if device_of is not None and device_of(p) != device_of(n):
                    continue
                if (grp.accepts(n, pattern) and not _makes_cycle(grp, n, group_of)
                        and _inline_size(n, grp, group_of, size) <= MAX_INLINE_SIZE):
                    joined = grp
                    break
        size[id(n)] = _inline_size(n, joined, group_of, size) if joined is not None else 1
        if joined is None:
            joined = _Group(n, pattern)
            groups.append(joined)
        else:
            joined.add(n, pattern)
        group_of[id(n)] = joined
        for v in n.inputs:
            src = group_of.get(id(v.producer)) if v.producer is not None else None
            if src is not None and src is not joined:
                joined.deps.add(src)
    if enabled:
        if device_of is None:  # (a heterogeneous model's groups keep to their device)
            merge_reshape_readers(g, groups, group_of, views)
            merge_diamonds(g, groups, group_of, MAX_FUSED_NODES)
        groups = _merge_epilogues(g, groups, group_of, device_of)
    return _finish(g, groups, consumers, graph_outputs, views)


def _by_producer_class(n: Node, group_of: dict[int, _Group]) -> list[tuple[int, Value]]:
    """n's inputs in order, except that one from a group that is a lone reshape goes last: a
    residual add joins the product's epilogue rather than the reshape of its other operand
    (which then joins the add's group as an inlined read, `fuse_merge`)."""
    def rank(item: tuple[int, Value]) -> int:
        p = item[1].producer
        grp = group_of.get(id(p)) if p is not None else None
        return 1 if grp is not None and [m.op for m in grp.nodes] == ["reshape"] else 0

    return sorted(enumerate(n.inputs), key=rank)


def _merge_epilogues(g: Graph, groups: list[_Group], group_of: dict[int, _Group],
                     device_of: Callable[[Node], str] | None = None) -> list[_Group]:
    """Merge injective groups into the small dense group whose outputs they read (see the
    module docstring), repeatedly, so that chains of them join too."""
    order = {id(n): i for i, n in enumerate(g.nodes)}
    merged: set[_Group] = set()
    for grp in list(groups):
        if grp in merged or grp.master.op not in _EPILOGUE_MASTERS:
            continue
        shape = grp.master.outputs[0].shape
        if len(shape) != 2 or shape[0] > EPILOGUE_MAX_ROWS:
            continue
        changed = True
        while changed:
            changed = False
            for other in groups:
                if other is grp or other in merged or other.pattern > _INJ:
                    continue
                if device_of is not None and device_of(other.master) != device_of(grp.master):
                    continue
                if grp not in other.deps or len(other.deps) > 3:
                    continue  # not a reader of grp, or a gather of many (a concat of steps)
                if (len(grp.nodes) + len(other.nodes) > MAX_FUSED_NODES
                        or len(grp.reads | other.reads) > MAX_GROUP_ARGS):
                    continue
                if any(d is not grp and d.reaches(grp) for d in other.deps):
                    continue  # it also reads something computed from grp: a cycle
                join_groups(grp, other, groups, group_of, order)
                merged.add(other)
                changed = True
    return [grp for grp in groups if grp not in merged]


def _inline_size(n: Node, grp: _Group, group_of: dict[int, _Group],
                 size: dict[int, int]) -> int:
    """Reads of group inputs one element of `n` makes once its producers in `grp` are
    inlined into it (see `inline_size`); reductions and tiled masters are materialized."""
    total = 0
    for v, reads in zip(n.inputs, input_reads(n)):
        p = v.producer
        inlined = (p is not None and group_of.get(id(p)) is grp
                   and get_op(p.op).pattern < OpPattern.COMM_REDUCE)
        total += reads * (size.get(id(p), 1) if inlined else 1)
    return max(total, 1)


def _makes_cycle(grp: _Group, n: Node, group_of: dict[int, _Group]) -> bool:
    """Joining `n` to `grp` makes `grp` read n's other inputs; that is a cycle when their
    groups already depend on `grp` (a multi-output node's branches leaving and re-entering)."""
    for v in n.inputs:
        src = group_of.get(id(v.producer)) if v.producer is not None else None
        if src is not None and src is not grp and src.reaches(grp):
            return True
    return False


def _finish(g: Graph, groups: list[_Group], consumers: dict[Value, list[Node]],
            graph_outputs: set[int], views: set[int]) -> list[FusedGroup]:
    groups = _topological(groups)
    result: list[FusedGroup] = []
    produced: set[int] = {id(v) for v in g.inputs}
    used_names: set[str] = set()
    for k, grp in enumerate(groups):
        members = {id(n) for n in grp.nodes}
        inside = {id(o) for n in grp.nodes for o in n.outputs}
        inputs: list[Value] = []
        for n in grp.nodes:
            for v in n.inputs:
                if id(v) not in inside and all(v is not x for x in inputs):
                    inputs.append(v)
        outputs = [o for n in grp.nodes for o in n.outputs
                   if id(o) in graph_outputs
                   or any(id(c) not in members for c in consumers.get(o, []))]
        if not outputs:  # dead group (DCE not run): keep its last value so it still runs
            outputs = list(grp.nodes[-1].outputs)
        for v in inputs:
            if not v.is_const and id(v) not in produced:
                raise TensorforgeError(
                    f"fuse_ops: group of {', '.join(n.name for n in grp.nodes)} reads %{v.name} "
                    "before it is computed (a fusion cycle; please report this)")
        produced.update(id(o) for o in outputs)
        result.append(FusedGroup(_name(k, grp, used_names), list(grp.nodes), inputs, outputs,
                                 grp.master, grp.pattern, view=id(grp.master) in views))
    return result


def _topological(groups: list[_Group]) -> list[_Group]:
    """Groups in dependency order; ties keep the order of their first node."""
    order: list[_Group] = []
    done: set[_Group] = set()
    pending = list(groups)
    while pending:
        ready = [grp for grp in pending if grp.deps <= done]
        if not ready:
            names = ", ".join(grp.nodes[0].name for grp in pending)
            raise TensorforgeError(f"fuse_ops: groups starting at {names} depend on each other "
                                   "(a fusion cycle; please report this)")
        order.append(ready[0])
        done.add(ready[0])
        pending.remove(ready[0])
    return order


def _name(k: int, grp: _Group, used: set[str]) -> str:
    """A C identifier: `fused_<ops>` (shortened), unique in the model."""
    ops: list[str] = []
    for n in grp.nodes:
        if not ops or ops[-1] != n.op:
            ops.append(n.op)
    return c_identifier("fused_" + "_".join(ops), used, max_len=48)
