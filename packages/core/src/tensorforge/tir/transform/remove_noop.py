"""Remove statements with no effect: empty loops, empty branches, evaluated constants."""

from __future__ import annotations

from ...expr import ExprMutator
from ..stmt import NOOP, AttrStmt, For, IfThenElse, PrimFunc, SeqStmt, Stmt, is_noop, seq


class _RemoveNoop(ExprMutator):
    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if is_noop(body):
            return NOOP
        return s if body is s.body else For(s.loop_var, s.min, s.extent, s.kind, body,
                                            s.thread_tag, s.annotations)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        then = self.visit(s.then_case)
        other = self.visit(s.else_case) if s.else_case is not None else None
        if other is not None and is_noop(other):
            other = None
        if is_noop(then) and other is None:
            return NOOP
        return IfThenElse(s.condition, then, other)

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        body = self.visit(s.body)
        if is_noop(body) and s.key.startswith("pragma_"):
            return NOOP
        return s if body is s.body else AttrStmt(s.node, s.key, s.value, body)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        return seq(*[self.visit(x) for x in s.seq])


def remove_noop(func: PrimFunc) -> PrimFunc:
    return func.with_body(_RemoveNoop().visit(func.body))
