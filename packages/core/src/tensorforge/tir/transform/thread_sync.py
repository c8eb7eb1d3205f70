"""Thread synchronization: barriers between shared-memory accesses of different threads.

Threads of a block communicate through `shared` buffers. Within a sequence of statements, a
statement that reads a buffer an earlier statement wrote since the last barrier needs a barrier
before it (read after write), and so does one that overwrites a buffer an earlier statement
read (write after read: slower threads may still be reading). A loop whose body reads and
writes a shared buffer needs a barrier at the end of its body, so that the next iteration's
writes wait for this iteration's reads. The barrier is the call `storage_sync("shared")`,
which each GPU dialect spells (`__syncthreads()`, `barrier(CLK_LOCAL_MEM_FENCE)` ...).

`shared_hazards` runs the same analysis without inserting anything: the GPU verifier uses it
to name the buffers that race when barriers are missing.
"""

from __future__ import annotations

from ...expr import BufferLoad, Call, ExprMutator, StringImm, post_order_collect
from ..stmt import Allocate, BufferStore, Evaluate, For, PrimFunc, SeqStmt, Stmt, seq

SCOPE = "shared"


def sync_stmt(scope: str = SCOPE) -> Stmt:
    return Evaluate(Call("int32", "storage_sync", (StringImm(scope),)))


def _accesses(s: Stmt, kind: type) -> dict[int, str]:
    return {id(n.buffer.data): n.buffer.name
            for n in post_order_collect(s, lambda n: isinstance(n, kind))
            if n.buffer.scope == SCOPE}


def _reads(s: Stmt) -> dict[int, str]:
    return _accesses(s, BufferLoad)


def _writes(s: Stmt) -> dict[int, str]:
    return _accesses(s, BufferStore)


def is_sync(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == "storage_sync"


class _Sync(ExprMutator):
    """Inserts barriers; with `check_only`, records the hazards instead."""

    def __init__(self, check_only: bool = False):
        self.check_only = check_only
        self.hazards: list[str] = []

    def _need(self, what: str, names: dict[int, str], keys: set[int]) -> None:
        if self.check_only:
            for k in sorted(keys, key=lambda k: names[k]):
                self.hazards.append(f"{names[k]} ({what})")

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        out: list[Stmt] = []
        written: dict[int, str] = {}  # shared buffers written since the last barrier
        read: dict[int, str] = {}  # ... and read since the last barrier
        for x in s.seq:
            x = self.visit(x)
            if is_sync(x):
                written, read = {}, {}
                out.append(x)
                continue
            r, w = _reads(x), _writes(x)
            raw, war = set(written) & set(r), set(read) & set(w)
            if raw or war:
                self._need("read after write with no barrier between", written, raw)
                self._need("written while other threads may still read it", read, war)
                if not self.check_only:
                    out.append(sync_stmt())
                written, read = {}, {}
            written.update(w)
            read.update(r)
            out.append(x)
        return seq(*out)

    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if s.kind != "thread_binding":
            r, w = _reads(body), _writes(body)
            both = set(r) & set(w)
            items = list(body.seq) if isinstance(body, SeqStmt) else [body]
            if both and not is_sync(items[-1]):
                self._need(f"read and rewritten in loop {s.loop_var.name} with no barrier at "
                           "the end of its body", w, both)
                if not self.check_only:
                    body = seq(*items, sync_stmt())
        if body is s.body:
            return s
        return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations)


def _has_shared(func: PrimFunc) -> bool:
    return any(a.buffer.scope == SCOPE
               for a in post_order_collect(func.body, lambda n: isinstance(n, Allocate)))


def thread_sync(func: PrimFunc) -> PrimFunc:
    """The pass: insert the barriers (see the module docstring)."""
    if not _has_shared(func):
        return func
    return func.with_body(_Sync().visit(func.body))


def shared_hazards(stmt: Stmt) -> list[str]:
    """The shared buffers that race for want of a barrier, with why (empty when none)."""
    sync = _Sync(check_only=True)
    sync.visit(stmt)
    return list(dict.fromkeys(sync.hazards))
