"""Tensorize: replace the loop nest under an axis by a tensor intrinsic's implementation.

The nest below the tensorized axis must have the intrinsic's shape (its data-parallel and
reduction extents, in order) and compute what the intrinsic's TE body computes, up to the
renaming of loop variables and tensors: every read is taken relative to the region the nest
touches, the nest's inner loop variables become the intrinsic's axes, and the two bodies must
be structurally equal (`expr.structural_equal`) after simplification. Each tensor the nest
touches is bound to a Buffer view of the region it touches there (elem_offset = the region's
first element, strides of the real buffer), and the intrinsic's `fimpl(ins, outs)` emits the
statement over those views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...arith import Analyzer, IntervalSet, eval_interval
from ...expr import (
    Buffer,
    BufferLoad,
    ExprMutator,
    IntImm,
    PrimExpr,
    ProducerLoad,
    Reduce,
    Var,
    const,
    post_order_collect,
    structural_equal,
    substitute,
    uses_var,
)
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


def _region_mins(lw: _Lowering, real: Buffer, indices: Sequence[Sequence[PrimExpr]],
                 dom: dict[Var, IntervalSet], what: str) -> list[PrimExpr]:
    mins: list[PrimExpr] = []
    for d in range(len(real.shape)):
        lo: PrimExpr | None = None
        for idx in indices:
            s = eval_interval(idx[d], dom)
            if s.min_value is None:
                raise ScheduleError(f"tensorize: cannot bound the region of {real.name} ({what})")
            lo = s.min_value if lo is None else _c.min_(lo, s.min_value)
        mins.append(lw.ana.simplify(lo))  # type: ignore[arg-type]
    return mins


class _AsIntrinsicReads(ExprMutator):
    """Nest reads -> reads of the intrinsic's tensors, indexed relative to the region."""

    def __init__(self, lw: _Lowering, tensors: dict[Buffer, Any], mins: dict[Buffer, list],
                 ana: Analyzer):
        self.lw, self.tensors, self.mins, self.ana = lw, tensors, mins, ana
        self.ok = True

    def rel(self, buf: Buffer, idx: Sequence[PrimExpr], k: int) -> tuple[PrimExpr, ...]:
        rel = [self.ana.simplify(_c.sub(i, m)) for i, m in zip(idx, self.mins[buf])]
        lead, tail = rel[: len(rel) - k], rel[len(rel) - k :]
        if not all(isinstance(x, IntImm) and x.value == 0 for x in lead):
            self.ok = False  # the nest walks a dimension the intrinsic does not have
        return tuple(tail)

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        t = self.tensors[e.buffer]
        return ProducerLoad(t, self.rel(e.buffer, [self.visit(i) for i in e.indices],
                                        len(t.shape)))


def _view(lw: _Lowering, real: Buffer, intrin_buf: Buffer, indices: Sequence[Sequence[PrimExpr]],
          dom: dict[Var, IntervalSet], what: str) -> Buffer:
    mins = _region_mins(lw, real, indices, dom, what)
    strides = _row_major(real)
    offset: PrimExpr = real.elem_offset
    for m, st in zip(mins, strides):
        offset = _c.add(offset, _c.mul(m, st))
    nd, k = len(real.shape), len(intrin_buf.shape)
    if k > nd:
        raise ScheduleError(
            f"tensorize: the intrinsic's {intrin_buf.name} has {k} dimensions but {real.name} "
            f"has {nd}"
        )
    return Buffer(real.name, intrin_buf.shape, real.dtype, real.scope, data=real.data,
                  strides=strides[nd - k :], elem_offset=lw.ana.simplify(offset),
                  data_alignment=1)


def _check_semantics(lw: _Lowering, st: Stage, intrin: Any, inner: Sequence[IterVar],
                     bodies: Sequence[PrimExpr], loads: dict[Buffer, list],
                     ins_real: Sequence[Buffer], out_idx: tuple[PrimExpr, ...],
                     outs: Sequence[Buffer], dom: dict[Var, IntervalSet]) -> None:
    """The nest's body must equal the intrinsic's TE body up to renaming (else ScheduleError
    showing both)."""
    iop = intrin.op
    dp = [x for x in inner if x.kind != REDUCE]
    red = [x for x in inner if x.kind == REDUCE]
    n_unit = len(iop.axis) - len(dp)
    rename: dict[Var, PrimExpr] = {x.var: a.var for x, a in zip(dp, iop.axis[n_unit:])}
    rename.update({x.var: r.var for x, r in zip(red, iop.reduce_axis)})
    unit = {a.var: const(0, a.var.dtype) for a in iop.axis[:n_unit]}
    ana = Analyzer()
    for a in [*iop.axis, *iop.reduce_axis]:
        ana.bind(a.var, a.dom)
    tensors = dict(zip(ins_real, intrin.inputs))
    mins = {b: _region_mins(lw, b, loads[b], dom, "input") for b in ins_real}
    outs_t = [iop.output(i) for i in range(iop.num_outputs)]
    for b, t in zip(outs, outs_t):
        tensors[b] = t
        mins[b] = _region_mins(lw, b, [out_idx], dom, "output")
    conv = _AsIntrinsicReads(lw, tensors, mins, ana)

    def nest_form(e: PrimExpr) -> PrimExpr:
        return ana.simplify(substitute(conv.visit(e), rename))

    def intrin_form(e: PrimExpr) -> PrimExpr:
        return ana.simplify(substitute(e, unit))

    pairs = []
    for b, ib in zip(bodies, iop.body):
        if isinstance(b, Reduce) != isinstance(ib, Reduce):
            pairs.append((b, ib, False))
            continue
        if isinstance(b, Reduce):
            src, isrc = nest_form(b.source[b.value_index]), intrin_form(ib.source[ib.value_index])
            comb = substitute(b.combiner.result[b.value_index],
                              dict(zip(b.combiner.lhs + b.combiner.rhs,
                                       ib.combiner.lhs + ib.combiner.rhs)))
            same = (structural_equal(src, isrc) and b.dtype == ib.dtype and structural_equal(
                ana.simplify(comb), ana.simplify(ib.combiner.result[ib.value_index])))
            pairs.append((src, isrc, same))
        else:
            nb, nib = nest_form(b), intrin_form(ib)
            pairs.append((nb, nib, structural_equal(nb, nib)))
    out_rel = [conv.rel(b, out_idx, len(t.shape)) for b, t in zip(outs, outs_t)]
    out_same = all(
        structural_equal(tuple(ana.simplify(substitute(i, rename)) for i in rel),
                         tuple(intrin_form(a.var) for a in iop.axis))
        for rel in out_rel)
    leaves = {x.var for x in st.leaf_iter_vars}
    leftover = any(uses_var(p[0], lambda v: v in leaves) for p in pairs)
    if conv.ok and out_same and not leftover and all(p[2] for p in pairs):
        return
    nest_text = "; ".join(str(p[0]) for p in pairs)
    intrin_text = "; ".join(str(p[1]) for p in pairs)
    why = "" if out_same else " (and writes its output in another order)"
    raise ScheduleError(
        f"tensorize on stage {st.name}: the loop nest does not compute what intrinsic "
        f"{intrin.name!r} computes{why}, even up to renaming:\n  nest:      {nest_text}\n"
        f"  intrinsic: {intrin_text}")


def tensorize_stmts(lw: _Lowering, st: Stage, t_pos: int, bodies: Sequence[PrimExpr],
                    out_idx: tuple[PrimExpr, ...], outs: Sequence[Buffer]
                    ) -> tuple[Stmt, Stmt | None, Stmt | None]:
    """(body, reset, update) of the intrinsic bound to the nest under leaf `t_pos`; `bodies`
    are the stage's expressions (reductions whole) over buffers."""
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
    out_intrin = [intrin.buffers[iop.output(i)] for i in range(iop.num_outputs)]
    for r, ib in [*zip(ins_real, ins_intrin), *zip(outs, out_intrin)]:
        if r.dtype != ib.dtype:
            raise ScheduleError(
                f"tensorize on stage {st.name}: {r.name} is {r.dtype} but intrinsic "
                f"{intrin.name!r} expects {ib.dtype} for {ib.name}"
            )
        if ib.scope != "global" and r.scope != ib.scope:
            raise ScheduleError(
                f"tensorize on stage {st.name}: {r.name} lives in scope {r.scope!r} but "
                f"intrinsic {intrin.name!r} takes {ib.name} from {ib.scope!r}; cache_read it "
                f"(or set_scope) into {ib.scope!r}"
            )
    _check_semantics(lw, st, intrin, inner, bodies, loads, ins_real, out_idx, outs, dom)
    ins = [_view(lw, r, ib, loads[r], dom, "input") for r, ib in zip(ins_real, ins_intrin)]
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
