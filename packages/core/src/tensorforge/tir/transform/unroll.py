"""Unroll: an `unrolled` loop of constant extent is replaced by copies of its body.

A `select` whose condition becomes constant in a copy keeps only the branch taken, without
copying the other (tables of expressions selected by a loop position, as the Winograd
transforms are, would otherwise grow with the square of the extent)."""

from __future__ import annotations

from typing import Any

from ...expr import ExprMutator, IntImm, PrimExpr, Var
from ...expr import construct as _c
from ...expr import dtype as dt
from ...expr import nodes as _n
from ..stmt import For, PrimFunc, Stmt, seq

MAX_UNROLL = 512  # beyond this many copies, keep a loop and let LLVM decide


class _SubstituteFold(ExprMutator):
    """Substitute variables; prune selects whose condition the substitution makes constant."""

    def __init__(self, vmap: dict[Var, PrimExpr], ana: Any):
        self.vmap = vmap
        self.ana = ana

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vmap.get(v, v)

    def visit_Select(self, e: Any) -> Any:
        from ...arith.fold import const_value

        cond = self.visit(e.condition)
        if cond is not e.condition:
            val = const_value(cond)
            if val is None and dt.lanes(cond.dtype) == 1:
                val = const_value(self.ana.simplify(cond))
            if val is not None:
                return self.visit(e.true_value if val else e.false_value)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        if cond is e.condition and t is e.true_value and f is e.false_value:
            return e
        return _n.Select(cond, t, f)


class _Unroll(ExprMutator):
    def __init__(self) -> None:
        from ...arith import Analyzer

        self.ana = Analyzer()  # one for every copy: its caches serve them all

    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if s.kind != "unrolled" or not isinstance(s.extent, IntImm) or (
            s.extent.value > MAX_UNROLL
        ):
            if body is s.body:
                return s
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations)
        return seq(*[
            _SubstituteFold({s.loop_var: _c.add(s.min, i)}, self.ana).visit(body)
            for i in range(s.extent.value)
        ])


def unroll(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Unroll().visit(func.body))
