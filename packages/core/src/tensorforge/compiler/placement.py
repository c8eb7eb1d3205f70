"""Device placement: which nodes of a graph run on the target's device and which on the host.

For a GPU target (its kind lists the key "gpu") a node goes to the device when the target
registers a strategy for its op, or when core's generic GPU schedule may take it (the op has
a TE compute and its `OpDef.gpu` is true); every other node runs on the host target (`llvm`
unless `compile(..., host=...)` says otherwise), with the reason recorded. CPU targets keep
everything. Fusion never crosses devices (`fuse_ops(..., device_of=...)`), and every value
read on another device than the one that holds it is a copy the executor makes (and
`tforge inspect` lists).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..graph.ir import Graph, Node, Value
from ..graph.registry import get_op
from ..tir.transform.pipeline import is_gpu

HOST = "host"
DEVICE = "device"


@dataclass
class Placement:
    """`device_of(node)` is DEVICE or HOST; `fallbacks` lists (node, op, why) on the host."""

    target: Any
    host: Any
    placed: dict[int, str] = field(default_factory=dict)
    fallbacks: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def heterogeneous(self) -> bool:
        return bool(self.fallbacks)

    def device_of(self, node: Node) -> str:
        return self.placed.get(id(node), DEVICE)

    def target_of(self, where: str) -> Any:
        return self.target if where == DEVICE else self.host

    def value_device(self, v: Value) -> str:
        """Where a value lives: its producer's device; graph inputs and constants live on
        the host (constants are uploaded once to each device that reads them)."""
        return self.device_of(v.producer) if v.producer is not None else HOST


def device_supports(target: Any, node: Node, strategies: dict[str, list[Any]]
                    ) -> tuple[bool, str]:
    """(whether `node` can run on GPU `target`, why not)."""
    if node.op in strategies:
        return True, ""
    opdef = get_op(node.op)
    if opdef.compute is None:
        return False, "no TE compute"
    if not opdef.gpu:
        return False, f"op {node.op!r} has no GPU strategy on {target.kind.name}"
    return True, ""


def place(g: Graph, target: Any, host: Any = None,
          supports: Callable[[Any, Node, dict[str, list[Any]]], tuple[bool, str]] =
          device_supports) -> Placement:
    """Place every node of `g` (see the module docstring)."""
    from ..plugins import get_registry

    p = Placement(target, host)
    if not is_gpu(target):
        return p
    strategies = get_registry().strategies(target)
    for n in g.nodes:
        ok, why = supports(target, n, strategies)
        if not ok:
            p.placed[id(n)] = HOST
            p.fallbacks.append((n.name, n.op, why))
    if p.fallbacks and host is None:
        from ..errors import TensorforgeError

        ops = sorted({op for _, op, _ in p.fallbacks})
        raise TensorforgeError(
            f"ops {', '.join(ops)} cannot run on {target.kind.name} and no host target is "
            "available for them; pass host='llvm' (pip install tensorforge-target-llvm)")
    return p
