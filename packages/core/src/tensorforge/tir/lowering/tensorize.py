"""Tensorize: replace the loop nest under an axis by a tensor intrinsic's implementation.

The nest below the tensorized axis must have the intrinsic's shape (its data-parallel and
reduction extents, in order). Each tensor the nest touches is bound to a Buffer view of the
region it touches there (elem_offset = the region's first element, strides of the real
buffer), and the intrinsic's `fimpl(ins, outs)` emits the statement over those views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...arith import IntervalSet, eval_interval
from ...expr import Buffer, BufferLoad, IntImm, PrimExpr, Var, const, post_order_collect
from ...expr import construct as _c
from ...schedule import ScheduleError, Stage
from ...te.tensor import REDUCE, IterVar
from ..stmt import Stmt

if TYPE_CHECKING:
    from .schedule_ops import _Lowering


def _row_major(buf: Buffer) -> list[PrimExpr]:
    if buf.strides:
        return list(buf.strides)
    strides: list[PrimExpr] = []
    acc: PrimExpr = const(1)
    for d in reversed(buf.shape):
        strides.append(acc)
        acc = _c.mul(acc, d)
    return strides[::-1]


def _view(lw: _Lowering, real: Buffer, intrin_buf: Buffer, indices: Sequence[Sequence[PrimExpr]],
          dom: dict[Var, IntervalSet], what: str) -> Buffer:
    nd = len(real.shape)
    mins: list[PrimExpr] = []
    for d in range(nd):
        lo: PrimExpr | None = None
        for idx in indices:
            s = eval_interval(idx[d], dom)
            if s.min_value is None:
                raise ScheduleError(f"tensorize: cannot bound the region of {real.name} ({what})")
            lo = s.min_value if lo is None else _c.min_(lo, s.min_value)
        mins.append(lw.ana.simplify(lo))  # type: ignore[arg-type]
    strides = _row_major(real)
    offset: PrimExpr = real.elem_offset
    for m, st in zip(mins, strides):
        offset = _c.add(offset, _c.mul(m, st))
    k = len(intrin_buf.shape)
    if k > nd:
        raise ScheduleError(
            f"tensorize: the intrinsic's {intrin_buf.name} has {k} dimensions but {real.name} "
            f"has {nd}"
        )
    return Buffer(real.name, intrin_buf.shape, real.dtype, real.scope, data=real.data,
                  strides=strides[nd - k :], elem_offset=lw.ana.simplify(offset),
                  data_alignment=1)


def tensorize_stmts(lw: _Lowering, st: Stage, t_pos: int, bodies: Sequence[PrimExpr],
                    out_idx: tuple[PrimExpr, ...], outs: Sequence[Buffer]
                    ) -> tuple[Stmt, Stmt | None, Stmt | None]:
    """(body, reset, update) of the intrinsic bound to the nest under leaf `t_pos`."""
    leaves = st.leaf_iter_vars
    iv = leaves[t_pos]
    intrin = st.iter_var_attrs[iv].tensor_intrin
    inner = leaves[t_pos:]
    sb = lw.bounds[st]
    iop = intrin.op
    want_dp = [_int(a.dom.extent) for a in iop.axis]
    want_red = [_int(a.dom.extent) for a in iop.reduce_axis]
    have_dp = [_int(sb.ranges[x].extent) for x in inner if x.kind != REDUCE]
    have_red = [_int(sb.ranges[x].extent) for x in inner if x.kind == REDUCE]
    # leading unit-extent axes of the intrinsic match nothing in the nest
    while len(want_dp) > len(have_dp) and want_dp and want_dp[0] == 1:
        want_dp.pop(0)
    if have_dp != want_dp or have_red != want_red:
        raise ScheduleError(
            f"tensorize on stage {st.name}, axis {iv.name}: the loops under it have extents "
            f"{have_dp} (data-parallel) and {have_red} (reduction) but intrinsic "
            f"{intrin.name!r} computes {want_dp} and {want_red}; split the axes to match"
        )
    dom = {x.var: IntervalSet(const(0), _c.sub(sb.ranges[x].extent, 1)) for x in inner}
    loads: dict[Buffer, list[tuple[PrimExpr, ...]]] = {}
    for b in bodies:
        for ld in post_order_collect(b, lambda n: isinstance(n, BufferLoad)):
            loads.setdefault(ld.buffer, []).append(ld.indices)
    ins_real = list(loads)
    ins_intrin = [intrin.buffers[t] for t in intrin.inputs]
    if len(ins_real) != len(ins_intrin):
        raise ScheduleError(
            f"tensorize on stage {st.name}: the nest reads {len(ins_real)} tensors "
            f"({', '.join(b.name for b in ins_real)}) but intrinsic {intrin.name!r} takes "
            f"{len(ins_intrin)}"
        )
    for r, ib in zip(ins_real, ins_intrin):
        if r.dtype != ib.dtype:
            raise ScheduleError(
                f"tensorize on stage {st.name}: {r.name} is {r.dtype} but intrinsic "
                f"{intrin.name!r} expects {ib.dtype} for {ib.name}"
            )
    ins = [_view(lw, r, ib, loads[r], dom, "input") for r, ib in zip(ins_real, ins_intrin)]
    out_intrin = [intrin.buffers[iop.output(i)] for i in range(iop.num_outputs)]
    outs_v = [_view(lw, r, ib, [out_idx], dom, "output") for r, ib in zip(outs, out_intrin)]
    res: Any = intrin.fimpl(ins, outs_v)
    if isinstance(res, (tuple, list)):
        body, reset, update = (list(res) + [None, None, None])[:3]
    else:
        body, reset, update = res, None, None
    return body, reset, update


def _int(e: PrimExpr) -> int:
    if not isinstance(e, IntImm):
        raise ScheduleError(f"tensorize needs constant loop extents, got {e}")
    return e.value


__all__ = ["tensorize_stmts", "IterVar"]
