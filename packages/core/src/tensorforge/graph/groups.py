"""What graph passes hand to the compiler: fused groups (one kernel each) and a memory plan."""

from __future__ import annotations

from dataclasses import dataclass, field

from .ir import Node, Value
from .registry import OpPattern


@dataclass(eq=False)
class FusedGroup:
    """Nodes compiled into one kernel. `master` is the op whose strategy schedules the group
    (a conv2d with its elementwise epilogue, a reduction, or the last injective op);
    `inputs` are the values read from outside (graph inputs, constants, other groups' outputs),
    `outputs` the values other groups or the graph outputs read."""

    name: str
    nodes: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    master: Node
    pattern: OpPattern


@dataclass
class MemoryPlan:
    """Each intermediate value's storage id; storages are reused when lifetimes don't overlap.
    `storage_bytes[i]` is the size of storage i. Graph inputs, outputs and constants are not
    planned (they keep their own memory)."""

    storage_of: dict[Value, int] = field(default_factory=dict)
    storage_bytes: list[int] = field(default_factory=list)
    #: the device of each storage, when the plan was made per device (else empty)
    storage_device: list[str] = field(default_factory=list)

    @property
    def planned_bytes(self) -> int:
        return sum(self.storage_bytes)

    def unplanned_bytes(self) -> int:
        """What the same values take without reuse (one buffer each)."""
        return sum(v.nbytes for v in self.storage_of)
