"""Virtual threads: a loop bound to `vthread` is woven into the statements below it.

Each virtual thread gets its own copy of every buffer allocated inside the loop (the buffer
grows by the thread count and each thread addresses its slice); the vthread loop is then
pushed down through loops that do not depend on it, and at the innermost statements the
threads are unrolled one after another. The interleaved instruction streams are what lets a
decoupled access-execute accelerator overlap loads with compute (the TVM paper, section 4.4).
Virtual threads must be independent, as data-parallel work is.

`vthread` interleaves statement by statement (instruction-level parallelism on a CPU or GPU).
`cthread` (a co-processor thread) interleaves runs: in a sequence, the consecutive statements
that hold no sequence themselves (one accelerator instruction, maybe inside host loops) are
emitted one thread's run after the other's, so each module of the accelerator sees thread 0's
loads, then thread 1's, and thread 1's loads can overlap thread 0's compute."""

from __future__ import annotations

from ...expr import (
    Buffer,
    BufferLoad,
    ExprMutator,
    IntImm,
    PrimExpr,
    Var,
    post_order_collect,
    substitute,
    uses_var,
)
from ...expr import construct as _c
from ..stmt import Allocate, BufferStore, For, PrimFunc, SeqStmt, Stmt, seq


def _is_vthread(s: For) -> bool:
    return s.kind == "thread_binding" and s.thread_tag.startswith(("vthread", "cthread"))


class _ExpandBuffers(ExprMutator):
    """Give each virtual thread a private slice of the buffers allocated inside the loop.
    Accesses are matched by the allocation's data pointer, so views of a buffer (a tensor
    intrinsic's operands, which share its `data`) are moved to the thread's slice too."""

    def __init__(self, var: Var, n: int):
        self.var = var
        self.n = n
        self.remap: dict[Var, tuple[Buffer, PrimExpr]] = {}

    def visit_Allocate(self, s: Allocate) -> Stmt:
        b = s.buffer
        if len(b.shape) != 1:
            raise ValueError("inject_virtual_thread runs after storage_flatten")
        size = b.shape[0]
        nb = Buffer(b.name, (_c.mul(size, self.n),), b.dtype, b.scope, data=b.data,
                    data_alignment=b.data_alignment)
        self.remap[b.data] = (nb, size)
        return Allocate(nb, self.visit(s.body))

    def _index(self, buf: Buffer, idx: PrimExpr) -> tuple[Buffer, PrimExpr]:
        hit = self.remap.get(buf.data)
        if hit is None:
            return buf, idx
        nb, size = hit
        return nb, _c.add(idx, _c.mul(self.var, size))

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        (i,) = (self.visit(x) for x in e.indices)
        nb, ni = self._index(e.buffer, i)
        return BufferLoad(nb, (ni,))

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        (i,) = (self.visit(x) for x in s.indices)
        nb, ni = self._index(s.buffer, i)
        return BufferStore(nb, self.visit(s.value), (ni,))


class _Weave(ExprMutator):
    """Push the vthread loop down; unroll it at the innermost statements (`coarse`: at runs
    of statements without a sequence inside)."""

    def __init__(self, var: Var, n: int, coarse: bool = False):
        self.var = var
        self.n = n
        self.coarse = coarse

    def _unrolled(self, s: Stmt) -> Stmt:
        if not uses_var(s, lambda v: v is self.var):
            return s
        return seq(*[substitute(s, {self.var: IntImm(k, self.var.dtype)})
                     for k in range(self.n)])

    def visit_For(self, s: For) -> Stmt:
        if uses_var(s.min, lambda v: v is self.var) or uses_var(
            s.extent, lambda v: v is self.var
        ) or s.kind == "parallel":
            return self._unrolled(s)
        return For(s.loop_var, s.min, s.extent, s.kind, self.visit(s.body), s.thread_tag,
                   s.annotations)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        if not self.coarse:
            return seq(*[self.visit(x) for x in s.seq])
        out: list[Stmt] = []
        run: list[Stmt] = []
        for x in s.seq:
            if post_order_collect(x, lambda n: isinstance(n, SeqStmt)):
                out.append(self._unrolled(seq(*run)))
                out.append(self.visit(x))
                run = []
            else:
                run.append(x)
        out.append(self._unrolled(seq(*run)))
        return seq(*out)

    def visit_Allocate(self, s: Allocate) -> Stmt:
        return Allocate(s.buffer, self.visit(s.body))

    def generic_visit(self, node: object) -> object:
        if isinstance(node, Stmt):
            return self._unrolled(node)
        return node


class _Inject(ExprMutator):
    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if not _is_vthread(s):
            if body is s.body:
                return s
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations)
        if not isinstance(s.extent, IntImm):
            raise ValueError(f"virtual thread {s.loop_var.name} needs a constant extent")
        n = s.extent.value
        var = s.loop_var
        if not (isinstance(s.min, IntImm) and s.min.value == 0):
            body = substitute(body, {var: _c.add(var, s.min)})
        body = _ExpandBuffers(var, n).visit(body)
        return _Weave(var, n, s.thread_tag.startswith("cthread")).visit(body)


def inject_virtual_thread(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Inject().visit(func.body))
