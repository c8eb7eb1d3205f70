"""Storage rewrite: buffers whose lifetimes do not overlap share memory.

Within one scope (a chain of allocations around a sequence of statements) each buffer lives
from the first to the last statement that touches it. Buffers of one dtype and memory scope
with constant sizes are packed greedily into pools: a buffer reuses a pool whose previous
occupant is dead, and the pool grows to the largest occupant. `attrs["storage_rewrite"]`
records the bytes before and after."""

from __future__ import annotations

from ...expr import Buffer, BufferLoad, ExprMutator, IntImm, PrimExpr, const, post_order_collect
from ...expr import dtype as dt
from ..stmt import Allocate, BufferStore, PrimFunc, SeqStmt, Stmt


def _touched(s: Stmt) -> set[int]:
    nodes = post_order_collect(s, lambda n: isinstance(n, (BufferLoad, BufferStore)))
    return {id(n.buffer.data) for n in nodes}


class _Rename(ExprMutator):
    """Point accesses of the remapped buffers at their pool (unchanged nodes are kept)."""

    def __init__(self, remap: dict[Buffer, Buffer]):
        self.remap = remap

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        new = self.remap.get(e.buffer)
        if new is None and all(a is b for a, b in zip(idx, e.indices)):
            return e
        return BufferLoad(new or e.buffer, idx)

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        idx = tuple(self.visit(i) for i in s.indices)
        value = self.visit(s.value)
        new = self.remap.get(s.buffer)
        if new is None and value is s.value and all(a is b for a, b in zip(idx, s.indices)):
            return s
        return BufferStore(new or s.buffer, value, idx)


class _Rewrite(ExprMutator):
    def __init__(self) -> None:
        self.before = 0
        self.after = 0

    def visit_Allocate(self, s: Allocate) -> Stmt:
        chain: list[Buffer] = []
        cur: Stmt = s
        while isinstance(cur, Allocate):
            chain.append(cur.buffer)
            cur = cur.body
        body = self.visit(cur)
        stmts = list(body.seq) if isinstance(body, SeqStmt) else [body]
        uses = [_touched(x) for x in stmts]
        plan: list[tuple[Buffer, int, int]] = []
        keep: list[Buffer] = []
        for b in chain:
            idx = [i for i, u in enumerate(uses) if id(b.data) in u]
            size = b.shape[0] if len(b.shape) == 1 else None
            if not idx or not isinstance(size, IntImm):
                keep.append(b)
                continue
            plan.append((b, idx[0], idx[-1]))
        plan.sort(key=lambda t: t[1])
        pools: list[dict] = []  # {"buf", "size", "free_after", "key"}
        remap: dict[Buffer, Buffer] = {}
        for b, first, last in plan:
            key = (dt.element(b.dtype), b.scope)
            n = b.shape[0].value  # type: ignore[union-attr]
            self.before += n * dt.nbytes(b.dtype)
            pool = next((p for p in pools if p["key"] == key and p["free_after"] < first), None)
            if pool is None:
                pool = {"buf": b, "size": n, "free_after": last, "key": key}
                pools.append(pool)
            else:
                pool["size"] = max(pool["size"], n)
                pool["free_after"] = last
                remap[b] = Buffer(b.name, b.shape, b.dtype, b.scope, data=pool["buf"].data,
                                  data_alignment=b.data_alignment)
        if remap:
            body = _Rename(remap).visit(body)
        for p in pools:
            self.after += p["size"] * dt.nbytes(p["buf"].dtype)
        out = body
        for b in reversed(keep):
            out = Allocate(b, out)
        for p in reversed(pools):
            pb = p["buf"]
            if p["size"] != pb.shape[0].value:
                # a grown pool: only its allocation changes; accesses go through the data
                # pointer, which the first occupant's buffer already shares
                pb = Buffer(pb.name, (const(p["size"]),), pb.dtype, pb.scope, data=pb.data,
                            data_alignment=pb.data_alignment)
            out = Allocate(pb, out)
        return out


def storage_rewrite(func: PrimFunc) -> PrimFunc:
    rw = _Rewrite()
    out = func.with_body(rw.visit(func.body))
    out.attrs["storage_rewrite"] = {"bytes_before": rw.before, "bytes_after": rw.after}
    return out
