"""Statement simplification: simplify every expression knowing the enclosing loop ranges and
branch conditions, and drop the statements that cannot run or do nothing.

- `for v in range(m, m + e)`: v is bound to [m, m + e) inside the body; e == 1 substitutes m
  for v and removes the loop; e <= 0 (or an empty body) removes it.
- `if c`: provably true keeps the then-branch, provably false the else-branch (or nothing);
  otherwise each branch is simplified assuming c (resp. not c). `likely(c)` is kept around c.
- `let v = x`: constants and variables are substituted; otherwise v gets x's bounds.
- nested SeqStmts are flattened and `Evaluate(constant)` no-ops removed.
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...arith.fold import const_value
from ...expr import IntImm, Not, PrimExpr, Range, Var
from ...expr import dtype as dt
from ...expr.functor import ExprMutator, substitute
from ..stmt import (
    NOOP,
    AssertStmt,
    AttrStmt,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)


def _is_noop(s: Stmt | None) -> bool:
    return s is None or (isinstance(s, Evaluate) and isinstance(s.value, IntImm))


def _strip_likely(c: PrimExpr) -> PrimExpr:
    from ...expr import Call

    while isinstance(c, Call) and c.op == "likely" and len(c.args) == 1:
        c = c.args[0]
    return c


class StmtSimplifier(ExprMutator):
    """Walks statements; every expression goes through the analyzer's simplifier."""

    def __init__(self, analyzer: Analyzer | None = None):
        self.ana = analyzer or Analyzer()

    def visit(self, node: Any) -> Any:
        if isinstance(node, PrimExpr):
            return self.ana.simplify(node)
        return super().visit(node)

    def visit_For(self, s: For) -> Stmt:
        mn, ext = self.ana.simplify(s.min), self.ana.simplify(s.extent)
        if isinstance(ext, IntImm):
            if ext.value <= 0:
                return NOOP
            if ext.value == 1 and s.kind != "thread_binding":
                return self.visit(substitute(s.body, {s.loop_var: mn}))
        elif self.ana.can_prove(ext <= 0):
            return NOOP
        with self.ana.scoped_bind(s.loop_var, Range(mn, ext)):
            body = self.visit(s.body)
        if _is_noop(body):
            return NOOP
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return For(s.loop_var, mn, ext, s.kind, body, s.thread_tag, s.annotations)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.ana.simplify(s.condition)
        v = const_value(cond)
        if v is not None:
            if v:
                return self.visit(s.then_case)
            return NOOP if s.else_case is None else self.visit(s.else_case)
        plain = _strip_likely(cond)
        with self.ana.with_constraint(plain):
            then = self.visit(s.then_case)
        els = None
        if s.else_case is not None:
            with self.ana.with_constraint(Not(plain)):
                els = self.visit(s.else_case)
            if _is_noop(els):
                els = None
        if _is_noop(then):
            if els is None:
                return NOOP
            return IfThenElse(self.ana.simplify(Not(plain)), els, None)
        if cond is s.condition and then is s.then_case and els is s.else_case:
            return s
        return IfThenElse(cond, then, els)

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.ana.simplify(s.value)
        if isinstance(value, (IntImm, Var)):
            return self.visit(substitute(s.body, {s.var: value}))
        if dt.is_int(value.dtype) and dt.lanes(value.dtype) == 1:
            with self.ana.scoped_bind(s.var, self._bounds_of(value)):
                body = self.visit(s.body)
        else:
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return LetStmt(s.var, value, body)

    def _bounds_of(self, value: PrimExpr) -> Any:
        from ...arith import IntervalSet
        from ...expr import const

        lo, hi = self.ana.const_int_bound(value)
        return IntervalSet(None if lo == -float("inf") else const(int(lo), value.dtype),
                           None if hi == float("inf") else const(int(hi), value.dtype))

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        value = self.ana.simplify(s.value)
        var = getattr(s.node, "var", s.node)
        if s.key in ("thread_extent", "virtual_thread") and isinstance(var, Var):
            with self.ana.scoped_bind(var, Range(IntImm(0, value.dtype), value)):
                body = self.visit(s.body)
        else:
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return AttrStmt(s.node, s.key, value, body)

    def visit_AssertStmt(self, s: AssertStmt) -> Stmt:
        cond = self.ana.simplify(s.condition)
        if const_value(cond):
            return self.visit(s.body)
        with self.ana.with_constraint(cond):
            body = self.visit(s.body)
        if cond is s.condition and body is s.body:
            return s
        return AssertStmt(cond, s.message, body)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        parts = [self.visit(x) for x in s.seq]
        if all(a is b for a, b in zip(parts, s.seq)) and not any(
                isinstance(p, SeqStmt) or _is_noop(p) for p in parts):
            return s
        return seq(*parts)

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        v = self.ana.simplify(s.value)
        if const_value(v) is not None:
            return NOOP
        return s if v is s.value else Evaluate(v)


def simplify_stmt(stmt: Stmt, analyzer: Analyzer | None = None) -> Stmt:
    """Simplify a statement tree (see the module docstring)."""
    return StmtSimplifier(analyzer).visit(stmt)


def simplify(func: PrimFunc) -> PrimFunc:
    """The pass: simplify a PrimFunc's body (SizeVar parameters are known non-negative)."""
    body = simplify_stmt(func.body, Analyzer())
    return func if body is func.body else func.with_body(body)
