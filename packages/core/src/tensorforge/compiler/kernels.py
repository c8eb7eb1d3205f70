"""From a fused group to a schedule: TE placeholders for the group's inputs (constants too:
they become kernel parameters), each node's TE compute in order, then a schedule from the
target's strategy for the master op or the generic schedule in core."""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import TensorforgeError
from ..graph.groups import FusedGroup
from ..graph.ir import Value
from ..graph.narrow_types import storage_dtype
from ..graph.registry import get_op
from ..naming import c_identifier


def build_group_te(group: FusedGroup, shape_of: Any = None, attrs_of: Any = None
                   ) -> tuple[list[Any], list[Any]]:
    """(input placeholders, output tensors) of `group`, in its inputs/outputs order.
    `shape_of(value)` / `attrs_of(node)` override the static shapes and attributes (a
    symbolic compile gives te expressions of size variables; `compiler.symbolic`)."""
    from .. import te

    shape_of = shape_of or (lambda v: v.shape)
    attrs_of = attrs_of or (lambda n: n.attrs)
    used: set[str] = set()
    env: dict[int, Any] = {}
    placeholders = []
    for v in group.inputs:
        p = te.placeholder(shape_of(v), storage_dtype(v.dtype), name=c_identifier(v.name, used))
        env[id(v)] = p
        placeholders.append(p)
    for pos, n in enumerate(group.nodes):
        opdef = get_op(n.op)
        if opdef.compute is None:
            raise TensorforgeError(
                f"op {n.op!r} (node {n.name}) has no tensor-expression compute, so it cannot "
                "be compiled yet; it runs only in the reference interpreter")
        ins = [env[id(v)] for v in n.inputs]
        with te.check_scope(pos):  # data checks in the compute name this node on failure
            outs = opdef.compute(ins, attrs_of(n), [(shape_of(o), storage_dtype(o.dtype))
                                                for o in n.outputs])
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
            t = te.compute(shape_of(v), lambda *i, src=src: src[i], name=c_identifier(v.name, used),
                           tag="elemwise")
        seen.add(id(t))
        outputs.append(t)
    return placeholders, outputs


def schedule_group(group: FusedGroup, outs: list[Any], target: Any,
                   strategies: dict[str, list[Any]] | None = None,
                   tuning: Any = None) -> tuple[Any, str]:
    """(schedule, how it was chosen): the master op's best strategy on `target` (with the
    tuned config `tuning.config(group, strategy)` when there is one), else the generic
    schedule in core (the GPU one for targets with the "gpu" key)."""

    for strat in (strategies or {}).get(group.master.op, [])[:1]:
        cfg = tuning.config(group, strat) if tuning is not None else None
        if cfg is None:
            return strat.load_schedule()(outs, target), f"strategy {strat.key}"
        knobs = ", ".join(f"{k}={v}" for k, v in cfg.values().items())
        return (strat.load_schedule()(outs, target, cfg),
                f"strategy {strat.key} tuned config {cfg.index} ({knobs})")
    return generic_schedule(target)(outs, target), "generic"


def generic_schedule(target: Any) -> Any:
    """Core's schedule for any fused group on `target`: GPU threads or CPU loops."""
    from ..tir.transform.pipeline import is_gpu

    if is_gpu(target):
        from ..ops.schedule_gpu import schedule_gpu_generic

        return schedule_gpu_generic
    from ..ops.schedule_generic import schedule_generic

    return schedule_generic


def lower_group(group: FusedGroup, target: Any, strategies: dict[str, list[Any]] | None = None,
                tuning: Any = None, te_args: dict[str, Any] | None = None) -> tuple[Any, str]:
    """(lowered PrimFunc named after the group, schedule used). If a tuned config fails to
    apply or lower, the strategy's default is used; if that fails, the all-at-root schedule
    (correct, slow; on a GPU the generic GPU schedule, since an unbound kernel cannot run);
    each with a warning. `te_args` (a symbolic compile): `shape_of`, `attrs_of` for
    `build_group_te` and `scalars`, the size variables passed after the buffers; when the
    strategy fails on a symbolic extent the generic schedule is tried before the default."""
    from .. import te
    from ..driver import lower

    te_args = dict(te_args or {})
    scalars = te_args.pop("scalars", [])
    for tuned in ((tuning, None) if tuning is not None else (None,)):
        placeholders, outs = build_group_te(group, **te_args)
        try:
            s, how = schedule_group(group, outs, target, strategies, tuned)
            return lower(s, placeholders + outs + scalars, name=group.name, target=target), how
        except Exception as exc:  # a schedule bug must not make the model uncompilable
            then = "the untuned schedule" if tuned is not None else "the default schedule"
            warnings.warn(f"{group.name}: schedule failed ({type(exc).__name__}: {exc}); "
                          f"using {then}", stacklevel=2)
    placeholders, outs = build_group_te(group, **te_args)
    from ..tir.transform.pipeline import is_gpu

    if scalars:  # symbolic extents: the generic CPU schedule takes them
        try:
            s = generic_schedule(target)(outs, target)
            return lower(s, placeholders + outs + scalars, name=group.name,
                         target=target), "generic"
        except Exception as exc:
            warnings.warn(f"{group.name}: generic schedule failed ({type(exc).__name__}: "
                          f"{exc}); using the default schedule", stacklevel=2)
            placeholders, outs = build_group_te(group, **te_args)

    if is_gpu(target):
        from ..ops.schedule_gpu import schedule_gpu_generic

        s = schedule_gpu_generic(outs, target)
        return lower(s, placeholders + outs, name=group.name, target=target), "generic"
    s = te.create_schedule([o.op for o in outs])
    return lower(s, placeholders + outs + scalars, name=group.name, target=target), "default"


def group_args(group: FusedGroup) -> list[Value]:
    """Kernel parameters in call order: the group's inputs, then its outputs."""
    return list(group.inputs) + list(group.outputs)
