"""Double buffering: a buffer filled and consumed in every iteration of a loop gets two
slots, so iteration k+1's fill can overlap iteration k's use (on hardware with asynchronous
copies: GPU shared memory, accelerator on-chip buffers).

Recognised shape (what lowering makes of `s[X].double_buffer()` with X computed at a loop):

    for k: attr [buf] double_buffer_scope; buf = allocate(S); {fill buf; use buf}

becomes

    buf = allocate(2 * S); fill slot 0 (k = min)
    for k: {if k + 1 < end: fill slot (k + 1 - min) % 2 (for k + 1); use slot (k - min) % 2}
"""

from __future__ import annotations

from ...expr import (
    LT,
    Buffer,
    BufferLoad,
    ExprMutator,
    IntImm,
    PrimExpr,
    post_order_collect,
    substitute,
)
from ...expr import construct as _c
from ..stmt import Allocate, AttrStmt, BufferStore, For, IfThenElse, PrimFunc, SeqStmt, Stmt, seq


class _Slot(ExprMutator):
    def __init__(self, old: Buffer, new: Buffer, offset: PrimExpr):
        self.old, self.new, self.offset = old, new, offset

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        (i,) = (self.visit(x) for x in e.indices)
        if e.buffer is self.old:
            return BufferLoad(self.new, (_c.add(i, self.offset),))
        return BufferLoad(e.buffer, (i,))

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        (i,) = (self.visit(x) for x in s.indices)
        v = self.visit(s.value)
        if s.buffer is self.old:
            return BufferStore(self.new, v, (_c.add(i, self.offset),))
        return BufferStore(s.buffer, v, (i,))


def _writes(s: Stmt, buf: Buffer) -> bool:
    return any(st.buffer is buf for st in post_order_collect(
        s, lambda n: isinstance(n, BufferStore)))


class _DoubleBuffer(ExprMutator):
    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        body = self.visit(s.body)
        if s.key == "double_buffer_scope":
            return body  # not in the recognised shape: drop the hint, keep the semantics
        return s if body is s.body else AttrStmt(s.node, s.key, s.value, body)

    def visit_For(self, s: For) -> Stmt:
        b = s.body
        if not (isinstance(b, AttrStmt) and b.key == "double_buffer_scope"
                and isinstance(b.body, Allocate) and isinstance(s.extent, IntImm)
                and s.extent.value >= 2):
            return super().generic_visit(s)
        alloc = b.body
        buf = alloc.buffer
        stmts = list(alloc.body.seq) if isinstance(alloc.body, SeqStmt) else [alloc.body]
        last_fill = max((i for i, x in enumerate(stmts) if _writes(x, buf)), default=-1)
        fill, use = stmts[: last_fill + 1], stmts[last_fill + 1 :]
        if not fill or not use or any(_writes(x, buf) for x in use) or len(buf.shape) != 1:
            return super().generic_visit(s)
        size = buf.shape[0]
        new = Buffer(buf.name, (_c.mul(size, 2),), buf.dtype, buf.scope, data=buf.data,
                     data_alignment=buf.data_alignment)
        k = s.loop_var
        end = _c.add(s.min, s.extent)
        fill_s = seq(*fill)
        use_s = seq(*use)
        prologue = _Slot(buf, new, IntImm(0, k.dtype)).visit(substitute(fill_s, {k: s.min}))
        nxt = _c.add(k, 1)
        slot_next = _c.mul(_c.floormod(_c.sub(nxt, s.min), 2), size)
        slot_now = _c.mul(_c.floormod(_c.sub(k, s.min), 2), size)
        fill_next = _Slot(buf, new, slot_next).visit(substitute(fill_s, {k: nxt}))
        body = seq(
            IfThenElse(_c.cmp(LT, nxt, end), self.visit(fill_next)),
            self.visit(_Slot(buf, new, slot_now).visit(use_s)),
        )
        loop = For(k, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations)
        return Allocate(new, seq(self.visit(prologue), loop))


def inject_double_buffer(func: PrimFunc) -> PrimFunc:
    return func.with_body(_DoubleBuffer().visit(func.body))
