"""Device placement: which nodes run on the target's device and which on the host.

Every node carries its device as the attribute `device` (a target kind name, e.g. "opencl" or
"llvm"). `place` fills it in after the graph-level simplifications and before the layout
stage; a target's own graph passes may set it earlier (an accelerator's layout pass claims
the convolutions it runs), and `place` keeps what is set.

- CPU targets: no marks (everything runs on the target).
- GPU targets (the kind lists the key "gpu"): a node goes to the device when the target
  registers a strategy for its op, or when core's generic GPU schedule may take it (the op has
  a TE compute and `OpDef.gpu`); others run on the host target, with the reason recorded.
- Other device targets (accelerators): unmarked nodes run on the host.

The layout stage then runs the target's passes, then the host's on the host's nodes
(`placed_elsewhere` tells a pass which nodes to leave alone); nodes a layout pass creates take
its device (`mark_new`). Fusion never crosses devices (`fuse_ops(device_of=...)`), and every
value read on another device than the one that holds it is a copy the executor makes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import TensorforgeError
from ..ir import Graph, Node, Value
from ..registry import get_op

DEVICE_ATTR = "device"


def device_of(node: Node, default: str = "") -> str:
    """The kind name of the target `node` runs on ("" when unplaced)."""
    return str(node.attrs.get(DEVICE_ATTR, default))


def placed_elsewhere(node: Node, target: Any) -> bool:
    """Whether `node` is placed on another target than `target` (a layout pass of `target`
    leaves such nodes alone)."""
    where = node.attrs.get(DEVICE_ATTR)
    return where is not None and where != getattr(getattr(target, "kind", None), "name", None)


def on_host_memory(node: Node) -> bool:
    """Whether `node` runs where the executor's host arrays live: unplaced (a CPU compile) or
    placed on a target kind of device type "cpu". Zero-copy concat views exist only there
    (device pools are not sliced at offsets)."""
    where = node.attrs.get(DEVICE_ATTR)
    if where is None:
        return True
    from ...plugins import get_registry

    kind = get_registry().targets.get(str(where))
    return kind is not None and kind.device_type == "cpu"


def mark_new(g: Graph, target: Any) -> Graph:
    """Place every unplaced node of `g` on `target` (the nodes a pass of it just made)."""
    name = target.kind.name
    for n in g.nodes:
        n.attrs.setdefault(DEVICE_ATTR, name)
    return g


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


def place(g: Graph, target: Any, host: Any,
          supports: Callable[[Any, Node, dict[str, list[Any]]], tuple[bool, str]] =
          device_supports) -> Graph:
    """Mark every node of `g` with its device (see the module docstring)."""
    from ...plugins import get_registry
    from ...tir.transform.pipeline import is_gpu

    if target is None or target.kind.device_type == "cpu":
        return g
    gpu = is_gpu(target)
    strategies = get_registry().strategies(target) if gpu else {}
    why: dict[str, str] = {}
    for n in g.nodes:
        if DEVICE_ATTR in n.attrs:
            continue
        ok, reason = supports(target, n, strategies) if gpu else (False, "")
        if not ok:
            why[n.name] = reason or f"{target.kind.name} does not run op {n.op!r}"
        n.attrs[DEVICE_ATTR] = target.kind.name if ok else (
            host.kind.name if host is not None else "")
    missing = [n for n in g.nodes if n.attrs[DEVICE_ATTR] == ""]
    if missing:
        ops = sorted({n.op for n in missing})
        raise TensorforgeError(
            f"ops {', '.join(ops)} cannot run on {target.kind.name} ({why[missing[0].name]}) "
            "and there is no host target for them; pass host='llvm' "
            "(pip install tensorforge-target-llvm)")
    return g


@dataclass
class Placement:
    """The devices of a placed graph: `device_of(node)`, the host fallbacks and the copies."""

    target: Any
    host: Any
    fallbacks: list[tuple[str, str, str]] = field(default_factory=list)

    def device_of(self, node: Node) -> str:
        return device_of(node, self.target.kind.name)

    def target_for(self, kind: str) -> Any:
        return self.host if self.host is not None and kind == self.host.kind.name \
            else self.target

    def value_device(self, v: Value) -> str:
        """Where a value lives: its producer's device; graph inputs and constants start on
        the host (constants are uploaded once to each device that reads them)."""
        if v.producer is not None:
            return self.device_of(v.producer)
        return self.host.kind.name if self.host is not None else self.target.kind.name

    @property
    def devices(self) -> list[str]:
        out = [self.target.kind.name]
        if self.host is not None and self.host.kind.name != out[0]:
            out.append(self.host.kind.name)
        return out


def placement_of(g: Graph, target: Any, host: Any) -> Placement:
    """The `Placement` of a graph whose nodes `place` marked; fallbacks are the host nodes."""
    p = Placement(target, host)
    if host is not None and target is not None and host.kind.name != target.kind.name:
        for n in g.nodes:
            if device_of(n) == host.kind.name:
                p.fallbacks.append((n.name, n.op, _fallback_reason(target, n)))
    return p


def _fallback_reason(target: Any, n: Node) -> str:
    from ...plugins import get_registry
    from ...tir.transform.pipeline import is_gpu

    if not is_gpu(target):
        return f"{target.kind.name} does not run it"
    return device_supports(target, n, get_registry().strategies(target))[1] or \
        "placed on the host by a graph pass"
