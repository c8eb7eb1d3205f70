"""How large a fused kernel's expressions grow when its ops are inlined into each other.

Inlining substitutes a producer's expression at every place its consumer reads it, so an op
that reads its input twice (softplus: ``max(x, 0) + log(1 + exp(-|x|))``) doubles the
expression of everything inlined before it: a chain of k such ops is 2**k nodes, and the
loop-IR passes walk expressions as trees (14 fused softplus took two minutes to lower, 20
would take hours). `fuse_ops` therefore stops a group where the estimate passes
`MAX_INLINE_SIZE` and materializes the value instead.

`input_reads(node)` counts how often the node's TE compute reads each input per output
element (through the op's own intermediate stages, which are inlined too); it is computed
once per (op, attributes, input types).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import Node, freeze

__all__ = ["MAX_INLINE_SIZE", "input_reads"]

#: The most reads of group inputs one output element's inlined expression may make.
MAX_INLINE_SIZE = 256
_WORK_LIMIT = 100_000  # expression nodes walked per op before giving up (then: reads of 1)
_cache: dict[Any, tuple[int, ...]] = {}


def input_reads(n: Node) -> tuple[int, ...]:
    """Reads of each input of `n` per output element of its (first) output."""
    try:
        key = (n.op, freeze(n.attrs), tuple((v.shape, v.dtype) for v in n.inputs))
        hash(key)
    except TypeError:
        return (1,) * len(n.inputs)
    if key not in _cache:
        _cache[key] = _count(n)
    return _cache[key]


def _count(n: Node) -> tuple[int, ...]:
    from ... import te
    from ..registry import get_op

    opdef = get_op(n.op)
    if opdef.compute is None:
        return (1,) * len(n.inputs)
    try:
        ins = [te.placeholder(v.shape, v.dtype, name=f"in{k}") for k, v in enumerate(n.inputs)]
        outs = opdef.compute(ins, n.attrs, [(o.shape, o.dtype) for o in n.outputs])
        counter = _ReadCounter([p.op for p in ins])
        out = outs[0]
        counter.walk(out.op.body[out.value_index], 1)
        return tuple(counter.counts)
    except Exception:  # noqa: BLE001 - an estimate only; a real error shows at lowering
        return (1,) * len(n.inputs)


class _ReadCounter:
    def __init__(self, placeholders: list[Any]):
        self.index = {id(op): k for k, op in enumerate(placeholders)}
        self.counts = [0] * len(placeholders)
        self.work = 0

    def walk(self, root: Any, mult: int) -> None:
        from ...expr.nodes import ProducerLoad

        todo = [(root, mult)]
        while todo:
            x, m = todo.pop()
            self.work += 1
            if self.work > _WORK_LIMIT:
                raise RuntimeError("expression too large to count")
            if isinstance(x, ProducerLoad):
                op = x.producer.op
                k = self.index.get(id(op))
                if k is not None:
                    self.counts[k] += m
                elif hasattr(op, "body"):  # the op's own stage: inlined or read per element
                    todo.append((op.body[x.producer.value_index], m))
                todo.extend((i, m) for i in x.indices)
            elif dataclasses.is_dataclass(x) and not isinstance(x, type):
                for f in dataclasses.fields(x):
                    todo.extend(_children(getattr(x, f.name), m))
            elif isinstance(x, (tuple, list)):
                todo.extend((c, m) for c in x)


def _children(value: Any, m: int) -> list[tuple[Any, int]]:
    if isinstance(value, (tuple, list)):
        return [(c, m) for c in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(value, m)]
    return []
