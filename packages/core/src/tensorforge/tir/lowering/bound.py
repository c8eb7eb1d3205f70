"""Bound inference: the range of every iteration variable of every stage.

Root stages iterate their whole domain. A stage attached with `compute_at` iterates only the
region its consumers read inside the attach loop: consumer loops outside the attach point are
fixed (they stay symbolic in the region), the loops inside it are relaxed to their full range.
Memory scope widens that region on GPUs: loops above the attach point bound to threads that
share the stage's buffer are relaxed too (`shared`: `threadIdx.*`; `global`: `blockIdx.*` as
well; `local`: none; see `tir.thread_scope`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...arith import Analyzer, IntervalSet, eval_interval
from ...expr import (
    EQ,
    LT,
    ExprVisitor,
    FloorDiv,
    FloorMod,
    IntImm,
    PrimExpr,
    ProducerLoad,
    Range,
    Var,
    const,
    post_order_collect,
    substitute,
    uses_var,
)
from ...expr import construct as _c
from ...schedule import Fuse, Schedule, ScheduleError, Split, Stage
from ...schedule.relations import Rebase
from ...te.tensor import IterVar, Tensor
from ..thread_scope import default_scope, relaxes


@dataclass
class StageBounds:
    """Ranges of a stage's iteration variables, and each leaf-to-root value expression."""

    ranges: dict[IterVar, Range] = field(default_factory=dict)
    # the value of each root iter var as an expression of the leaf loop variables
    root_value: dict[IterVar, PrimExpr] = field(default_factory=dict)
    # predicates needed because splits do not divide or regions overhang the domain
    predicates: list[PrimExpr] = field(default_factory=list)


def _ceildiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return _c.floordiv(_c.add(a, _c.sub(b, 1)), b)


def _root_axes(stage: Stage) -> list[IterVar]:
    op = stage.op
    return list(getattr(op, "axis", ())) + list(getattr(op, "reduce_axis", ()))


def propagate_ranges(stage: Stage, sb: StageBounds, ana: Analyzer) -> None:
    """Fill ranges of derived iter vars from root ranges, then leaf->root value expressions."""
    r = sb.ranges
    for rel in stage.relations:
        if isinstance(rel, Split):
            ext = r[rel.parent].extent
            if rel.factor is not None:
                r[rel.inner] = Range(const(0), rel.factor)
                r[rel.outer] = Range(const(0), ana.simplify(_ceildiv(ext, rel.factor)))
            else:
                assert rel.nparts is not None
                r[rel.outer] = Range(const(0), rel.nparts)
                r[rel.inner] = Range(const(0), ana.simplify(_ceildiv(ext, rel.nparts)))
        elif isinstance(rel, Fuse):
            r[rel.fused] = Range(const(0), ana.simplify(r[rel.outer].extent * r[rel.inner].extent))
        elif isinstance(rel, Rebase):
            r[rel.rebased] = Range(const(0), r[rel.parent].extent)
    for iv in stage.leaf_iter_vars:
        ana.bind(iv.var, Range(const(0), r[iv].extent))
    # leaf -> root values, walking relations backwards. Values are offsets from range min.
    value: dict[IterVar, PrimExpr] = {iv: iv.var for iv in stage.leaf_iter_vars}
    preds: list[PrimExpr] = []
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            inner_ext = r[rel.inner].extent
            value[rel.parent] = _c.add(_c.mul(value[rel.outer], inner_ext), value[rel.inner])
            total = ana.simplify(r[rel.outer].extent * inner_ext)
            ext = r[rel.parent].extent
            if not ana.can_prove(_c.cmp(EQ, total, ext)):
                preds.append(_c.cmp(LT, value[rel.parent], ext))
        elif isinstance(rel, Fuse):
            ie = r[rel.inner].extent
            if _is_one(r[rel.outer].extent):  # (the simplifier cannot drop `f // seq` when
                value[rel.outer] = const(0)   # f < seq is symbolic: compiler.symbolic)
                value[rel.inner] = value[rel.fused]
                continue
            value[rel.outer] = _c.floordiv(value[rel.fused], ie)
            value[rel.inner] = _c.floormod(value[rel.fused], ie)
        elif isinstance(rel, Rebase):
            value[rel.parent] = value[rel.rebased]
    for iv in _root_axes(stage):
        off = value.get(iv)
        if off is None:  # an axis never reached from the leaves (should not happen)
            off = const(0)
        sb.root_value[iv] = ana.simplify(_c.add(r[iv].min, off))
    sb.predicates = preds


def _is_one(e: PrimExpr) -> bool:
    return getattr(e, "value", None) == 1


def bound_tag(stage: Stage, iv: IterVar) -> str:
    """The thread tag `iv` of `stage` is bound to ("" when it is a plain loop)."""
    attr = stage.iter_var_attrs.get(iv)
    if attr is None or attr.kind != "bind" or attr.bind_thread is None:
        return ""
    return attr.bind_thread.thread_tag


def enclosing_loops(stage: Stage) -> list[tuple[Stage, IterVar]]:
    """The loops around an attached stage's nest, innermost first: its consumer's leaves up
    to the attach point, then that consumer's own enclosing loops, and so on."""
    out: list[tuple[Stage, IterVar]] = []
    st = stage
    while st.attach_type == "scope" and st.attach_stage is not None:
        parent, ivar = st.attach_stage, st.attach_ivar
        pos = parent.leaf_iter_vars.index(ivar)  # type: ignore[arg-type]
        out += [(parent, iv) for iv in reversed(parent.leaf_iter_vars[: pos + 1])]
        st = parent
    return out


def effective_scope(stage: Stage) -> str:
    """The stage's memory scope: `set_scope`'s, else the default for where it is attached
    (`local` under `threadIdx` loops, `shared` under `blockIdx` loops, else `global`)."""
    if stage.scope:
        return stage.scope
    if stage.attach_type != "scope":
        return "global"
    return default_scope([bound_tag(s, iv) for s, iv in enclosing_loops(stage)])


class _Loads(ExprVisitor):
    def __init__(self, targets: set[Tensor]):
        self.targets = targets
        self.loads: list[ProducerLoad] = []

    def visit_ProducerLoad(self, e: ProducerLoad) -> None:
        if e.producer in self.targets:
            self.loads.append(e)
        self.generic_visit(e)


def infer_bounds(sch: Schedule, bodies: dict[Stage, tuple[PrimExpr, ...]],
                 ana: Analyzer) -> dict[Stage, StageBounds]:
    """Ranges for all stages; `bodies` are op bodies with inline stages already expanded."""
    result: dict[Stage, StageBounds] = {}
    for st in reversed(sch.stages):
        if st.attach_type == "inline":
            continue
        sb = StageBounds()
        if st.attach_type == "scope":
            region = _needed_region(sch, st, bodies, result, ana)
            for iv, rng in zip(st.op.axis, region):  # type: ignore[attr-defined]
                sb.ranges[iv] = rng
        else:
            for iv in getattr(st.op, "axis", ()):
                sb.ranges[iv] = iv.dom
        for iv in getattr(st.op, "reduce_axis", ()):
            sb.ranges[iv] = iv.dom
        propagate_ranges(st, sb, ana)
        if st.attach_type == "scope":
            for iv in st.op.axis:  # type: ignore[attr-defined]
                v = sb.root_value[iv]
                ext = iv.dom.extent
                if not ana.can_prove(v >= 0):
                    sb.predicates.append(v >= 0)
                if not ana.can_prove(v < ext):
                    sb.predicates.append(v < ext)
        result[st] = sb
    return result


def _leaf_extent_set(sb: StageBounds, iv: IterVar) -> IntervalSet:
    # leaf loops run from 0; the range min is folded into the root value
    return IntervalSet(const(0), _c.sub(sb.ranges[iv].extent, 1))


def _relaxed_loops(st: Stage, reader: Stage, parent: Stage, ivar: IterVar
                   ) -> list[tuple[Stage, IterVar]]:
    """The loops that run inside one iteration of `parent`'s loop `ivar` around `reader`'s
    reads, with their stages: the parent's loops inside `ivar` (the parent itself reading),
    or all loops of the reader and of every stage it is attached through (a chain of
    compute_at ending at `parent` at `ivar` or inside it) plus the parent's loops between."""
    pos = parent.leaf_iter_vars.index(ivar)
    if reader is parent:
        return [(parent, iv) for iv in parent.leaf_iter_vars[pos + 1:]]
    chain = [reader]
    while chain[-1].attach_type == "scope" and chain[-1].attach_stage is not parent:
        chain.append(chain[-1].attach_stage)  # type: ignore[arg-type]
        if len(chain) > 64:
            break
    last = chain[-1]
    if last.attach_type != "scope" or last.attach_stage is not parent or \
            parent.leaf_iter_vars.index(last.attach_ivar) < pos:  # type: ignore[arg-type]
        raise ScheduleError(
            f"compute_at: stage {st.name} is attached at {parent.name}.{ivar.name} but is "
            f"also read by stage {reader.name} outside that loop; compute it at root or "
            f"inline it"
        )
    relaxed = [(c, iv) for c in chain for iv in c.leaf_iter_vars]
    end = parent.leaf_iter_vars.index(last.attach_ivar) + 1  # type: ignore[arg-type]
    return relaxed + [(parent, iv) for iv in parent.leaf_iter_vars[pos + 1:end]]


def _through_fused(reader: Stage, rb: StageBounds, ana: Analyzer) -> Any:
    """For a reader with fused axes, a function narrowing a read's index set: the index
    written in the reader's leaf loops (`root_value`) and simplified, used where that
    leaves no division of a loop that runs inside the attach point. A fused (row, column)
    axis split into pixel tiles reads `row * W + col` of a flat stage
    (`conv2d_nchwc(flat_pixels=)`): per root axis a box of whole rows, in the leaf loops
    the tile's pixels. None: no fused axes."""
    if not any(isinstance(rel, Fuse) for rel in reader.relations):
        return None
    vmap = {iv.var: val for iv, val in rb.root_value.items()}
    fused = {id(iv.var) for iv in _root_axes(reader) if iv in rb.root_value and
             post_order_collect(rb.root_value[iv], lambda e: isinstance(e, (FloorDiv,
                                                                             FloorMod)))}

    def narrow(idx: PrimExpr, box: IntervalSet, leaf_dom: dict[Var, IntervalSet]
               ) -> IntervalSet:
        if len({id(v) for v in post_order_collect(idx, lambda e: id(e) in fused)}) < 2:
            return box  # a read of one root axis: the box is exact
        exact = ana.simplify(substitute(idx, vmap))
        if post_order_collect(exact, lambda e: isinstance(e, (FloorDiv, FloorMod)) and uses_var(
                e, lambda v: v in leaf_dom)):
            return box  # a division of a relaxed loop left: the box may be the tighter
        s = eval_interval(exact, leaf_dom)
        return box if s.min_value is None or s.max_value is None else s

    return narrow


def _needed_region(sch: Schedule, st: Stage, bodies: dict[Stage, tuple[PrimExpr, ...]],
                   done: dict[Stage, StageBounds], ana: Analyzer) -> list[Range]:
    parent, ivar = st.attach_stage, st.attach_ivar
    assert parent is not None and ivar is not None
    outs = {st.op.output(i) for i in range(st.op.num_outputs)}
    scope = effective_scope(st)
    shared_by = [(owner, iv) for owner, iv in enclosing_loops(st)
                 if relaxes(scope, bound_tag(owner, iv))]
    lo: list[PrimExpr | None] = [None] * len(st.op.output(0).shape)
    hi: list[PrimExpr | None] = [None] * len(lo)
    for reader in sch.stages:
        if reader.attach_type == "inline" or reader not in bodies:
            continue
        finder = _Loads(outs)
        for b in bodies[reader]:
            finder.visit(b)
        if not finder.loads:
            continue
        relaxed = _relaxed_loops(st, reader, parent, ivar)
        rb = done[reader]
        leaf_dom: dict[Var, IntervalSet] = {}
        for owner, iv in relaxed:
            leaf_dom[iv.var] = _leaf_extent_set(done[owner], iv)
        for owner_stage, iv in shared_by:  # threads that fill the buffer together
            leaf_dom[iv.var] = _leaf_extent_set(done[owner_stage], iv)
        root_dom: dict[Var, IntervalSet] = {}
        for iv, val in rb.root_value.items():
            root_dom[iv.var] = eval_interval(val, leaf_dom)
        through = _through_fused(reader, rb, ana)
        for load in finder.loads:
            for d, idx in enumerate(load.indices):
                s = eval_interval(idx, root_dom)
                if through is not None:
                    s = through(idx, s, leaf_dom)
                if s.min_value is None or s.max_value is None:
                    raise ScheduleError(
                        f"compute_at: cannot bound the region of {st.name} read by "
                        f"{reader.name} at dimension {d} (index {idx})"
                    )
                lo[d] = s.min_value if lo[d] is None else _c.min_(lo[d], s.min_value)
                hi[d] = s.max_value if hi[d] is None else _c.max_(hi[d], s.max_value)
    out: list[Range] = []
    shape = st.op.output(0).shape
    for d in range(len(lo)):
        if lo[d] is None:
            out.append(Range(const(0), shape[d]))
            continue
        mn = ana.simplify(lo[d])
        ext = ana.simplify(_c.add(_c.sub(hi[d], mn), 1))
        if not isinstance(ext, IntImm):
            bound = ana.const_int_bound(ext)
            mx = bound.max_value
            if isinstance(mx, int) and abs(mx) < 2**40:
                ext = const(int(mx))
        out.append(Range(mn, ext))
    return out
