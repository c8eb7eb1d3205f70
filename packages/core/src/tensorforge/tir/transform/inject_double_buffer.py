"""Double buffering: a buffer filled and consumed in every iteration of a loop gets two
slots, so iteration k+1's fill can overlap iteration k's use (on hardware with asynchronous
copies: GPU shared memory, accelerator on-chip buffers).

Recognised shape (what lowering makes of `s[X].double_buffer()` with X computed at a loop):

    for k: attr [buf] double_buffer_scope; buf = allocate(S); {fill buf; use buf}

becomes

    buf = allocate(2 * S); fill slot 0 (k = min)
    for k: {if k + 1 < end: fill slot (k + 1 - min) % 2 (for k + 1); use slot (k - min) % 2}

Several buffers attached at the same loop and filled together (a matmul's two tiles) are
doubled together: the fill is the statements up to the last one writing any of them.
On a GPU, `thread_sync` then puts one barrier between the fill of the next slot and the use of
the current one, and one at the end of the iteration.
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


def _chain(s: Stmt) -> tuple[list[Allocate], Stmt]:
    """The double-buffered allocations at the top of a loop body, and what they enclose:
    `attr [a] double_buffer_scope; a = allocate(..)` repeated (several tiles filled together,
    like a matmul's A and B tiles)."""
    allocs: list[Allocate] = []
    while isinstance(s, AttrStmt) and s.key == "double_buffer_scope" and isinstance(
            s.body, Allocate):
        allocs.append(s.body)
        s = s.body.body
    return allocs, s


class _DoubleBuffer(ExprMutator):
    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        body = self.visit(s.body)
        if s.key == "double_buffer_scope":
            return body  # not in the recognised shape: drop the hint, keep the semantics
        return s if body is s.body else AttrStmt(s.node, s.key, s.value, body)

    def visit_For(self, s: For) -> Stmt:
        allocs, inner = _chain(s.body)
        if not allocs or not isinstance(s.extent, IntImm) or s.extent.value < 2:
            return super().generic_visit(s)
        bufs = [a.buffer for a in allocs]
        stmts = list(inner.seq) if isinstance(inner, SeqStmt) else [inner]
        last_fill = max((i for i, x in enumerate(stmts) if any(_writes(x, b) for b in bufs)),
                        default=-1)
        fill, use = stmts[: last_fill + 1], stmts[last_fill + 1 :]
        if (not fill or not use or any(_writes(x, b) for x in use for b in bufs)
                or any(len(b.shape) != 1 for b in bufs)):
            return super().generic_visit(s)
        k = s.loop_var
        end = _c.add(s.min, s.extent)
        nxt = _c.add(k, 1)
        fill_s, use_s = seq(*fill), seq(*use)
        prologue = substitute(fill_s, {k: s.min})
        fill_next = substitute(fill_s, {k: nxt})
        news = []
        for b in bufs:
            size = b.shape[0]
            new = Buffer(b.name, (_c.mul(size, 2),), b.dtype, b.scope, data=b.data,
                         data_alignment=b.data_alignment)
            news.append(new)
            prologue = _Slot(b, new, IntImm(0, k.dtype)).visit(prologue)
            fill_next = _Slot(b, new, _c.mul(_c.floormod(_c.sub(nxt, s.min), 2), size)
                              ).visit(fill_next)
            use_s = _Slot(b, new, _c.mul(_c.floormod(_c.sub(k, s.min), 2), size)).visit(use_s)
        body = seq(IfThenElse(_c.cmp(LT, nxt, end), self.visit(fill_next)), self.visit(use_s))
        out: Stmt = seq(self.visit(prologue),
                        For(k, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations))
        for new in reversed(news):
            out = Allocate(new, out)
        return out


def inject_double_buffer(func: PrimFunc) -> PrimFunc:
    return func.with_body(_DoubleBuffer().visit(func.body))
