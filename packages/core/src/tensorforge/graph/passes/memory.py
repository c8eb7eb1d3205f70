"""Static memory planning over the fused-group order.

Every intermediate value (a group output that is not a graph output) gets a storage id. A
value is live from the group that writes it to the last group that reads it; when a group has
run, the storages of values whose last reader it was become free. A new value takes the free
storage of the best fit (the smallest one that is large enough, else the largest one, grown),
or a new storage. Graph inputs, outputs and constants keep their own memory. With `device_of`
(a value -> device map), storages hold values of one device only (`MemoryPlan.storage_device`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..groups import FusedGroup, MemoryPlan
from ..ir import Graph, Value

ALIGN = 64  # bytes; storages are rounded up so every view starts aligned


def _round(n: int) -> int:
    return max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)


def plan_memory(g: Graph, groups: list[FusedGroup], reuse: bool = True,
                device_of: Callable[[Value], str] | None = None) -> MemoryPlan:
    """Storages for the intermediate values of `groups` (run in this order); with
    `device_of`, one set of storages per device."""
    external = {id(v) for v in g.inputs} | {id(v) for v in g.outputs}
    last_use: dict[int, int] = {}
    for i, grp in enumerate(groups):
        for v in grp.inputs:
            last_use[id(v)] = i
    plan = MemoryPlan()
    free: dict[str, list[int]] = {}  # storage ids by device
    where = device_of or (lambda v: "")
    for i, grp in enumerate(groups):
        for v in grp.outputs:
            if v.is_const or id(v) in external:
                continue
            dev = where(v)
            sid = _take(plan, free.setdefault(dev, []), _round(v.nbytes)) if reuse else \
                _new(plan, _round(v.nbytes))
            plan.storage_of[v] = sid
            if device_of is not None:
                while len(plan.storage_device) < len(plan.storage_bytes):
                    plan.storage_device.append(dev)
        # values whose last reader is this group (or that nobody reads) are dead now
        dead = [v for v in _planned_inputs(plan, grp) if last_use.get(id(v)) == i]
        dead += [v for v in grp.outputs if v in plan.storage_of and id(v) not in last_use]
        for v in dead:
            free.setdefault(where(v), []).append(plan.storage_of[v])
    return plan


def _planned_inputs(plan: MemoryPlan, grp: FusedGroup) -> list[Value]:
    return [v for v in grp.inputs if v in plan.storage_of]


def _new(plan: MemoryPlan, size: int) -> int:
    plan.storage_bytes.append(size)
    return len(plan.storage_bytes) - 1


def _take(plan: MemoryPlan, free: list[int], size: int) -> int:
    if not free:
        return _new(plan, size)
    fits = [s for s in free if plan.storage_bytes[s] >= size]
    if fits:
        sid = min(fits, key=lambda s: plan.storage_bytes[s])
    else:
        sid = max(free, key=lambda s: plan.storage_bytes[s])
        plan.storage_bytes[sid] = size  # grow the largest free storage
    free.remove(sid)
    return sid
