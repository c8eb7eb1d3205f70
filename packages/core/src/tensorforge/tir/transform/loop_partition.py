"""Loop partition: split a loop so that the guards lowering put around non-divisible splits
(`if likely(cond)`) hold everywhere in a main part, leaving them only in a short tail.

For a loop `v` in [min, min+ext) and a guard conjunct that is linear in `v` with a constant
coefficient, the inner loop variables are relaxed to their whole ranges and the rest bounded
by a constant, which gives the range of `v` where the guard always holds. The loop becomes
up to three loops (head, main, tail); the simplifier then proves the guard true in the main
loop and removes it, so the main body vectorizes and has no branch."""

from __future__ import annotations

import functools

from ...arith import Analyzer, IntervalSet, detect_linear_equation, eval_interval
from ...expr import (
    GE,
    GT,
    LE,
    LT,
    And,
    Call,
    ExprMutator,
    ExprVisitor,
    IntImm,
    PrimExpr,
    Var,
    const,
    uses_var,
)
from ...expr import construct as _c
from ..stmt import For, IfThenElse, PrimFunc, Stmt, seq


class _Guards(ExprVisitor):
    """Collect `likely(...)` guard conditions and the loops inside a body."""

    def __init__(self) -> None:
        self.conds: list[PrimExpr] = []
        self.loops: list[For] = []

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        c = s.condition
        if isinstance(c, Call) and c.op == "likely":
            self.conds.append(c.args[0])
        self.generic_visit(s)

    def visit_For(self, s: For) -> None:
        self.loops.append(s)
        self.generic_visit(s)


def _conjuncts(c: PrimExpr) -> list[PrimExpr]:
    if isinstance(c, And):
        return _conjuncts(c.a) + _conjuncts(c.b)
    return [c]


def _as_lt_zero(c: PrimExpr) -> PrimExpr | None:
    """Rewrite an integer comparison as `e < 0`."""
    t = type(c)
    if t not in (LT, LE, GT, GE) or not c.a.dtype.startswith("int"):
        return None
    if t is LT:
        return _c.sub(c.a, c.b)
    if t is LE:
        return _c.sub(_c.sub(c.a, c.b), 1)
    if t is GT:
        return _c.sub(c.b, c.a)
    return _c.sub(_c.sub(c.b, c.a), 1)


def _safe_range(v: Var, conj: PrimExpr, inner: dict[Var, IntervalSet], ana: Analyzer
                ) -> tuple[int | None, int | None] | None:
    """[lo, hi) of v where the conjunct holds for every value of the inner loop vars."""
    e = _as_lt_zero(conj)
    if e is None:
        return None
    lin = detect_linear_equation(e, [v], ana)
    if lin is None or not isinstance(lin[0], IntImm) or lin[0].value == 0:
        return None
    coef, rest = lin[0].value, lin[1]
    rest_set = eval_interval(rest, inner)
    if coef > 0:
        if rest_set.max_value is None:
            return None
        hi_rest = ana.const_int_bound(rest_set.max_value).max_value
        if not isinstance(hi_rest, int):
            return None
        # coef*v + rest < 0 for all rest <= hi_rest  <=>  v <= (-hi_rest - 1) // coef
        return None, (-hi_rest - 1) // coef + 1
    if rest_set.min_value is None:
        return None
    # rest - c*v < 0 with c = -coef  <=>  v > rest / c, for every rest up to its maximum
    if rest_set.max_value is None:
        return None
    hi_rest = ana.const_int_bound(rest_set.max_value).max_value
    if not isinstance(hi_rest, int):
        return None
    return hi_rest // (-coef) + 1, None


class _Partition(ExprMutator):
    def __init__(self) -> None:
        self.ana = Analyzer()

    def visit_For(self, s: For) -> Stmt:
        if s.kind != "thread_binding" and isinstance(s.min, IntImm) and s.min.value == 0 \
                and not isinstance(s.extent, IntImm):
            return self._symbolic(s)
        if s.kind == "thread_binding" or not (
            isinstance(s.min, IntImm) and isinstance(s.extent, IntImm)
        ):
            return super().generic_visit(s)
        v = s.loop_var
        g = _Guards()
        g.visit(s.body)
        conds = [c for cond in g.conds for c in _conjuncts(cond)
                 if uses_var(c, lambda x: x is v)]
        start, end = s.min.value, s.min.value + s.extent.value
        lo, hi = start, end
        found = False
        if conds:
            inner = {
                loop.loop_var: IntervalSet(loop.min, _c.sub(_c.add(loop.min, loop.extent), 1))
                for loop in g.loops
            }
            for c in conds:
                r = _safe_range(v, c, inner, self.ana)
                if r is None:
                    continue
                found = True
                if r[0] is not None:
                    lo = max(lo, r[0])
                if r[1] is not None:
                    hi = min(hi, r[1])
        if not found or (lo <= start and hi >= end) or lo >= hi:
            with self.ana.scoped_bind(v, (s.min, s.extent)):
                return super().generic_visit(s)
        parts = []
        for a, b in ((start, lo), (lo, hi), (hi, end)):
            if b > a:
                part = For(v, const(a), const(b - a), s.kind, s.body, s.thread_tag,
                           s.annotations)
                with self.ana.scoped_bind(v, (const(a), const(b - a))):
                    parts.append(super().generic_visit(part))
        return seq(*parts)


    def _symbolic(self, s: For) -> Stmt:
        """A loop over a symbolic extent (`compiler.symbolic`): for guards `c*v + rest < 0`
        (c > 0) whose bound is symbolic, a main loop [0, M) with M the least of
        `floordiv(-max(rest) - 1, c) + 1` over the guards (clamped to [0, extent]), where the
        guards are dropped (they hold by construction: the analyzer cannot prove that
        symbolically), and a tail [M, extent) that keeps them."""
        v = s.loop_var
        g = _Guards()
        g.visit(s.body)
        inner = {loop.loop_var: IntervalSet(loop.min, _c.sub(_c.add(loop.min, loop.extent), 1))
                 for loop in g.loops}
        proven: list[PrimExpr] = []
        hi: PrimExpr | None = None
        for cond in g.conds:
            for c in _conjuncts(cond):
                if not uses_var(c, lambda x: x is v):
                    continue
                e = _as_lt_zero(c)
                lin = detect_linear_equation(e, [v], self.ana) if e is not None else None
                if lin is None or not isinstance(lin[0], IntImm) or lin[0].value <= 0:
                    continue
                top = eval_interval(lin[1], inner).max_value
                if top is None or uses_var(top, lambda x: x in inner):
                    continue
                bound = _c.add(_c.floordiv(_c.sub(_c.neg(top), 1), lin[0].value), 1)
                hi = bound if hi is None else _c.min_(hi, bound)
                proven.append(c)
        if hi is None:
            with self.ana.scoped_bind(v, (s.min, s.extent)):
                return super().generic_visit(s)
        main_ext = self.ana.simplify(_c.max_(_c.min_(hi, s.extent), 0))
        body = _DropProven(proven).visit(s.body)
        main = For(v, const(0), main_ext, s.kind, body, s.thread_tag, s.annotations)
        tail = For(v, main_ext, self.ana.simplify(_c.sub(s.extent, main_ext)), s.kind, s.body,
                   s.thread_tag, s.annotations)
        return seq(super().generic_visit(main), super().generic_visit(tail))


class _DropProven(ExprMutator):
    """`if likely(a && b ...)` without the conjuncts in `proven` (structurally equal)."""

    def __init__(self, proven: list[PrimExpr]):
        from ...expr.structural import structural_equal

        self.proven = proven
        self.eq = structural_equal

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        c = s.condition
        then = self.visit(s.then_case)
        other = self.visit(s.else_case) if s.else_case is not None else None
        if not (isinstance(c, Call) and c.op == "likely"):
            return IfThenElse(c, then, other)
        keep = [x for x in _conjuncts(c.args[0]) if not any(self.eq(x, p) for p in self.proven)]
        if not keep:
            return then
        return IfThenElse(Call(c.dtype, "likely", (functools.reduce(_c.logical_and, keep),)),
                          then, other)


def loop_partition(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Partition().visit(func.body))
