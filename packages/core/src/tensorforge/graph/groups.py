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
    view: bool = False  # a zero-copy concat: no kernel, its parts are written in place


@dataclass
class MemoryPlan:
    """Each intermediate value's storage id; storages are reused when lifetimes don't overlap.
    `storage_bytes[i]` is the size of storage i. Graph inputs, outputs and constants are not
    planned (they keep their own memory)."""

    storage_of: dict[Value, int] = field(default_factory=dict)
    storage_bytes: list[int] = field(default_factory=list)
    #: the device of each storage, when the plan was made per device (else empty)
    storage_device: list[str] = field(default_factory=list)
    # byte offset of a value inside its storage (the parts of a zero-copy concat); else 0
    offset_of: dict[Value, int] = field(default_factory=dict)
    concat_copy_bytes: int = 0  # what the concats that stay copies move per run
    concat_view_bytes: int = 0  # what the zero-copy concats no longer move

    @property
    def planned_bytes(self) -> int:
        return sum(self.storage_bytes)

    def unplanned_bytes(self) -> int:
        """What the same values take without reuse (one buffer each)."""
        return sum(v.nbytes for v in self.storage_of)
