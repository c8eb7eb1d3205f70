"""Unroll: an `unrolled` loop of constant extent is replaced by copies of its body."""

from __future__ import annotations

from ...expr import ExprMutator, IntImm, substitute
from ...expr import construct as _c
from ..stmt import For, PrimFunc, Stmt, seq

MAX_UNROLL = 512  # beyond this many copies, keep a loop and let LLVM decide


class _Unroll(ExprMutator):
    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if s.kind != "unrolled" or not isinstance(s.extent, IntImm) or (
            s.extent.value > MAX_UNROLL
        ):
            if body is s.body:
                return s
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations)
        return seq(*[
            substitute(body, {s.loop_var: _c.add(s.min, i)}) for i in range(s.extent.value)
        ])


def unroll(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Unroll().visit(func.body))
