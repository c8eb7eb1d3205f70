"""rfactor: factor a reduction over one of its (split) axes into a new stage.

`BF = s.rfactor(B, ki)` makes `BF[ki, ...]` hold partial reductions over the other reduction
axes; `B` then reduces `BF` over the new axis. The partial results are data-parallel in `ki`,
so they can be vectorized or parallelized, which a reduction axis cannot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..expr import LT, PrimExpr, Range, Reduce, Var, const, substitute
from ..expr import construct as _c
from ..te.tensor import DATA_PAR, REDUCE, ComputeOp, IterVar, Tensor
from .errors import ScheduleError
from .relations import Fuse, Split

if TYPE_CHECKING:
    from .schedule import Schedule


def _ceildiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return _c.floordiv(_c.add(a, _c.sub(b, 1)), b)


def rfactor(sch: Schedule, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor:
    from .stage import Stage

    tensor = sch.current(tensor)
    st = sch[tensor]
    op = st.op
    if not isinstance(op, ComputeOp) or not op.reduce_axis:
        raise ScheduleError(f"rfactor: stage {st.name} is not a reduction")
    if axis not in st.leaf_iter_vars or axis.kind != REDUCE:
        raise ScheduleError(
            f"rfactor on stage {st.name}: {getattr(axis, 'name', axis)} must be a current "
            "reduction axis of the stage (a reduce_axis or one of its split parts)"
        )
    ndim = len(op.axis)
    if not 0 <= factor_axis <= ndim:
        raise ScheduleError(f"rfactor on stage {st.name}: factor_axis must be in [0, {ndim}]")
    for rel in st.relations:
        touched = [rel.parent] if isinstance(rel, Split) else [rel.outer, rel.inner]
        if any(t.kind != REDUCE for t in touched):
            raise ScheduleError(
                f"rfactor on stage {st.name}: call rfactor before transforming the "
                "data-parallel axes (only the reduction axes may be split or fused)"
            )
    # ranges of the reduction leaves, and each root reduction var as a function of them
    rng: dict[IterVar, Range] = {iv: iv.dom for iv in op.reduce_axis}  # type: ignore[misc]
    for rel in st.relations:
        if isinstance(rel, Split):
            ext = rng[rel.parent].extent
            if rel.factor is not None:
                rng[rel.inner] = Range(const(0), rel.factor)
                rng[rel.outer] = Range(const(0), _ceildiv(ext, rel.factor))
            else:
                rng[rel.outer] = Range(const(0), rel.nparts)  # type: ignore[arg-type]
                rng[rel.inner] = Range(const(0), _ceildiv(ext, rel.nparts))  # type: ignore
        elif isinstance(rel, Fuse):
            rng[rel.fused] = Range(const(0), _c.mul(rng[rel.outer].extent,
                                                    rng[rel.inner].extent))
    leaves = [iv for iv in st.leaf_iter_vars if iv.kind == REDUCE]
    v_rf = IterVar(Range(const(0), rng[axis].extent), Var(f"{axis.name}.v"), DATA_PAR)
    new_red = {iv: IterVar(Range(const(0), rng[iv].extent), Var(iv.name), REDUCE)
               for iv in leaves if iv is not axis}
    value: dict[IterVar, PrimExpr] = {axis: v_rf.var}
    value.update({iv: n.var for iv, n in new_red.items()})
    preds: list[PrimExpr] = []
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            inner_ext = rng[rel.inner].extent
            value[rel.parent] = _c.add(_c.mul(value[rel.outer], inner_ext), value[rel.inner])
            preds.append(_c.cmp(LT, value[rel.parent], rng[rel.parent].extent))
        elif isinstance(rel, Fuse):
            value[rel.outer] = _c.floordiv(value[rel.fused], rng[rel.inner].extent)
            value[rel.inner] = _c.floormod(value[rel.fused], rng[rel.inner].extent)
    new_axis = [IterVar(a.dom, Var(a.name), DATA_PAR) for a in op.axis]
    vmap: dict[Var, PrimExpr] = {a.var: n.var for a, n in zip(op.axis, new_axis)}
    for iv in op.reduce_axis:
        vmap[iv.var] = value[iv]
    red0: Reduce = op.body[0]  # type: ignore[assignment]
    cond = substitute(red0.condition, vmap)
    for p in preds:
        cond = _c.logical_and(cond, p)
    source = tuple(substitute(s, vmap) for s in red0.source)
    raxes = tuple(new_red[iv] for iv in leaves if iv is not axis)
    rf_axis = list(new_axis)
    rf_axis.insert(factor_axis, v_rf)
    if raxes:
        bodies = [Reduce(red0.combiner, source, raxes, cond, i) for i in range(len(source))]
    else:  # nothing left to reduce: the partial result is the (guarded) source itself
        ident = red0.combiner.identity
        bodies = [_c.select(cond, s, ident[i]) if not _is_true(cond) else s
                  for i, s in enumerate(source)]
    rf_op = ComputeOp(f"{op.name}.rf", rf_axis, bodies, op.tag, op.attrs, raxes)
    # the original stage now reduces the partial results over a fresh axis
    k_new = IterVar(Range(const(0), rng[axis].extent), Var(f"{axis.name}.v"), REDUCE)
    idx_vars = [a.var for a in op.axis]
    idx = list(idx_vars)
    idx.insert(factor_axis, k_new.var)
    srcs = tuple(rf_op.output(i)[tuple(idx)] for i in range(rf_op.num_outputs))
    final = [Reduce(red0.combiner, srcs, (k_new,), const(True), i, red0.init)
             for i in range(len(srcs))]
    new_op = ComputeOp(op.name, op.axis, final, op.tag, op.attrs, (k_new,))
    rf_stage = Stage(rf_op, sch)
    sch._insert_before(st, rf_stage)
    sch._swap_op(st, new_op)
    st.all_iter_vars = list(op.axis) + [k_new]
    st.leaf_iter_vars = list(op.axis) + [k_new]
    st.relations = []
    st.iter_var_attrs = {}
    sch._propagate_from(st, op)
    outs = [rf_op.output(i) for i in range(rf_op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs  # type: ignore[return-value]


def _is_true(c: PrimExpr) -> bool:
    return getattr(c, "value", None) == 1 and c.dtype == "bool"
