"""Thread synchronization: barriers between writes and reads of shared memory.

Threads of a block communicate through `shared` buffers. A statement that reads what an
earlier statement of the same sequence wrote needs a barrier in between (read after write);
a loop whose body reads a shared buffer and then overwrites it in the next iteration needs a
barrier at the end of its body (write after read). The barrier is the call
`storage_sync("shared")`, which GPU code generators print as `__syncthreads()` / `barrier()`.
"""

from __future__ import annotations

from ...expr import BufferLoad, Call, ExprMutator, StringImm, post_order_collect
from ..stmt import Allocate, BufferStore, Evaluate, For, PrimFunc, SeqStmt, Stmt, seq

SCOPE = "shared"


def sync_stmt(scope: str = SCOPE) -> Stmt:
    return Evaluate(Call("int32", "storage_sync", (StringImm(scope),)))


def _reads(s: Stmt) -> set[int]:
    return {id(n.buffer.data) for n in post_order_collect(s, lambda n: isinstance(n, BufferLoad))
            if n.buffer.scope == SCOPE}


def _writes(s: Stmt) -> set[int]:
    return {id(n.buffer.data) for n in post_order_collect(s, lambda n: isinstance(n, BufferStore))
            if n.buffer.scope == SCOPE}


def _is_sync(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == "storage_sync"


class _Sync(ExprMutator):
    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        out: list[Stmt] = []
        pending: set[int] = set()  # shared buffers written since the last barrier
        for x in s.seq:
            x = self.visit(x)
            if pending & _reads(x):
                out.append(sync_stmt())
                pending = set()
            if _is_sync(x):
                pending = set()
            pending |= _writes(x)
            out.append(x)
        return seq(*out)

    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if s.kind != "thread_binding" and _reads(body) & _writes(body):
            items = list(body.seq) if isinstance(body, SeqStmt) else [body]
            if not _is_sync(items[-1]):
                body = seq(*items, sync_stmt())
        return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations)


def _has_shared(func: PrimFunc) -> bool:
    return any(a.buffer.scope == SCOPE
               for a in post_order_collect(func.body, lambda n: isinstance(n, Allocate)))


def thread_sync(func: PrimFunc) -> PrimFunc:
    if not _has_shared(func):
        return func
    return func.with_body(_Sync().visit(func.body))
