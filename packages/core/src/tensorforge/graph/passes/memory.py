"""Static memory planning over the fused-group order.

Every intermediate value (a group output that is not a graph output) gets a storage id. A
value is live from the group that writes it to the last group that reads it; when a group has
run, the storages of values whose last reader it was become free. A new value takes the free
storage of the best fit (the smallest one that is large enough, else the largest one, grown),
or a new storage. Graph inputs, outputs and constants keep their own memory. The parts of a
zero-copy concat share their root's storage (`concat_views.py`; parts and root are on one
device). With `device_of` (a value -> device map), storages hold values of one device only
(`MemoryPlan.storage_device`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..groups import FusedGroup, MemoryPlan
from ..ir import Graph, Value
from .concat_views import concat_views

ALIGN = 64  # bytes; storages are rounded up so every view starts aligned


def _round(n: int) -> int:
    return max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)


def plan_memory(g: Graph, groups: list[FusedGroup], reuse: bool = True,
                device_of: Callable[[Value], str] | None = None) -> MemoryPlan:
    """Storages for the intermediate values of `groups` (run in this order). The parts of a
    zero-copy concat (groups with `view`) live in their root's storage at their offsets; that
    storage is live from the first part written to the last read of any of them. With
    `device_of`, one set of storages per device."""
    external = {id(v) for v in g.inputs} | {id(v) for v in g.outputs}
    cv = concat_views(g)
    views = {id(grp.master) for grp in groups if grp.view}
    if views != cv.nodes:  # groups not cut by fuse_ops' rule: every concat is a kernel
        views = set()
    placement = cv.placement if views else {}

    def home(v: Value) -> Value:  # the value whose storage holds v
        return placement[id(v)][0] if id(v) in placement else v

    last_use: dict[int, int] = {}
    for i, grp in enumerate(groups):
        for v in grp.inputs:
            last_use[id(home(v))] = i
    plan = MemoryPlan(concat_copy_bytes=cv.copy_bytes if views else sum(
        n.outputs[0].nbytes for n in g.nodes if n.op == "concat"),
        concat_view_bytes=cv.view_bytes if views else 0)
    free: dict[str, list[int]] = {}  # storage ids by device
    where = device_of or (lambda v: "")
    for i, grp in enumerate(groups):
        for v in grp.outputs:
            if v.is_const or id(v) in external:
                continue
            r = home(v)
            if r not in plan.storage_of:
                dev = where(r)
                plan.storage_of[r] = _take(plan, free.setdefault(dev, []), _round(r.nbytes)) \
                    if reuse else _new(plan, _round(r.nbytes))
                if device_of is not None:
                    while len(plan.storage_device) < len(plan.storage_bytes):
                        plan.storage_device.append(dev)
            if r is not v:
                plan.storage_of[v] = plan.storage_of[r]
                plan.offset_of[v] = placement[id(v)][1]
        # values whose last reader is this group (or that nobody reads) are dead now
        homes = {id(home(v)): home(v) for v in grp.inputs + grp.outputs}
        dead = [r for r in homes.values() if r in plan.storage_of and (
            last_use.get(id(r)) == i or (id(r) not in last_use and not grp.view))]
        for r in dead:
            pool = free.setdefault(where(r), [])
            if plan.storage_of[r] not in pool:
                pool.append(plan.storage_of[r])
    return plan


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
