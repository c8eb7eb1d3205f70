"""From a fused group to a schedule: TE placeholders for the group's inputs (constants too:
they become kernel parameters), each node's TE compute in order, then a schedule from the
target's strategy for the master op or the generic schedule in core."""

from __future__ import annotations

import re
import warnings
from typing import Any

from ..errors import TensorforgeError
from ..graph.groups import FusedGroup
from ..graph.ir import Value
from ..graph.registry import get_op


def _ident(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    if base[0].isdigit():
        base = "v" + base
    base = base[:40]
    out, k = base, 1
    while out in used:
        out = f"{base}_{k}"
        k += 1
    used.add(out)
    return out


def build_group_te(group: FusedGroup) -> tuple[list[Any], list[Any]]:
    """(input placeholders, output tensors) of `group`, in its inputs/outputs order."""
    from .. import te

    used: set[str] = set()
    env: dict[int, Any] = {}
    placeholders = []
    for v in group.inputs:
        p = te.placeholder(v.shape, v.dtype, name=_ident(v.name, used))
        env[id(v)] = p
        placeholders.append(p)
    for n in group.nodes:
        opdef = get_op(n.op)
        if opdef.compute is None:
            raise TensorforgeError(
                f"op {n.op!r} (node {n.name}) has no tensor-expression compute, so it cannot "
                "be compiled yet; it runs only in the reference interpreter")
        ins = [env[id(v)] for v in n.inputs]
        outs = opdef.compute(ins, n.attrs, [(o.shape, o.dtype) for o in n.outputs])
        if len(outs) != len(n.outputs):
            raise TensorforgeError(f"op {n.op!r}: compute returned {len(outs)} tensors for "
                                   f"{len(n.outputs)} outputs")
        for o, t in zip(n.outputs, outs):
            env[id(o)] = t
    outputs = []
    seen: set[int] = set()
    for v in group.outputs:
        t = env[id(v)]
        if any(t is p for p in placeholders) or id(t) in seen:  # pass-through: copy it
            src = t
            t = te.compute(v.shape, lambda *i, src=src: src[i], name=_ident(v.name, used),
                           tag="elemwise")
        seen.add(id(t))
        outputs.append(t)
    return placeholders, outputs


def schedule_group(group: FusedGroup, outs: list[Any], target: Any,
                   strategies: dict[str, list[Any]] | None = None) -> tuple[Any, str]:
    """(schedule, how it was chosen): the master op's best strategy on `target`, else the
    generic schedule in core."""
    from ..ops.schedule_generic import schedule_generic

    for strat in (strategies or {}).get(group.master.op, [])[:1]:
        return strat.load_schedule()(outs, target), f"strategy {strat.key}"
    return schedule_generic(outs, target), "generic"


def lower_group(group: FusedGroup, target: Any,
                strategies: dict[str, list[Any]] | None = None) -> tuple[Any, str]:
    """(lowered PrimFunc named after the group, schedule used). If the chosen schedule fails
    to apply or lower, the default all-at-root schedule is used (correct, slow) with a warning."""
    from .. import te
    from ..driver import lower

    placeholders, outs = build_group_te(group)
    args = placeholders + outs
    try:
        s, how = schedule_group(group, outs, target, strategies)
        return lower(s, args, name=group.name, target=target), how
    except Exception as exc:  # a schedule bug must not make the model uncompilable
        warnings.warn(f"{group.name}: schedule failed ({type(exc).__name__}: {exc}); using "
                      "the default schedule", stacklevel=2)
    placeholders, outs = build_group_te(group)
    s = te.create_schedule([o.op for o in outs])
    return lower(s, placeholders + outs, name=group.name, target=target), "default"


def group_args(group: FusedGroup) -> list[Value]:
    """Kernel parameters in call order: the group's inputs, then its outputs."""
    return list(group.inputs) + list(group.outputs)
