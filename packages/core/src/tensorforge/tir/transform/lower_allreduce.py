"""Cross-thread reduction: `tir.thread_allreduce` becomes a shared-memory tree or warp shuffles.

Lowering leaves, for a reduction axis bound to GPU threads,

    attr [combiner] reduce_scope = 0
      tir.thread_allreduce(acc[0], ..., threadIdx.x)

after every thread folded its share into its local accumulators `acc`. Afterwards every
thread of a group (the threads that differ only in the reduction's thread indices) holds the
combined value in `acc[0]`.

- Tree (any target): each thread writes its value to a shared buffer slot `g * n + r` (g: the
  group, from the other `threadIdx` indices; r: the linear index of the reduction threads, n
  their count), then `log2 n` halving steps `if r < s: red[i] = red[i] (+) red[i + s]`, each
  followed by a barrier (a count that is not a power of two first folds its tail onto the
  largest power of two below it), then every thread reads slot `g * n` and a last barrier
  lets the buffer be reused.
- Shuffles (a target with `thread-warp-size` > 1, reduction over `threadIdx.x` alone, n a
  power of two up to the warp size): `acc = acc (+) shuffle_down(acc, s, n)` for s = n/2 .. 1,
  then `shuffle_idx(acc, 0, n)` broadcasts lane 0: no shared memory, no barrier.
"""

from __future__ import annotations

from ...errors import TensorforgeError
from ...expr import (
    LT,
    Buffer,
    BufferLoad,
    Call,
    CommReducer,
    ExprMutator,
    PrimExpr,
    Var,
    const,
)
from ...expr import construct as _c
from ..stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    Evaluate,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
    seq,
)
from ..thread_scope import BLOCK_TAGS
from .lower_thread_binding import hoist_shared
from .thread_sync import sync_stmt


def _linear(vars_exts: list[tuple[Var, int]]) -> tuple[PrimExpr, int]:
    """(linear index with the first variable fastest, total count)."""
    idx: PrimExpr = const(0)
    n = 1
    for v, e in vars_exts:
        idx = _c.add(idx, _c.mul(v, n))
        n *= e
    return idx, n


def _combine_store(combiner: CommReducer, dsts: list[tuple[Buffer, PrimExpr]],
                   lhs: tuple[PrimExpr, ...], rhs: tuple[PrimExpr, ...]) -> Stmt:
    values = combiner.combine(lhs, rhs)
    if len(dsts) == 1:
        b, i = dsts[0]
        return BufferStore(b, values[0], (i,))
    tmps = [Var(f"{b.name}_t{k}", b.dtype) for k, (b, _) in enumerate(dsts)]
    out: Stmt = seq(*[BufferStore(b, t, (i,)) for (b, i), t in zip(dsts, tmps)])
    for t, v in reversed(list(zip(tmps, values))):
        out = LetStmt(t, v, out)
    return out


class _AllReduce(ExprMutator):
    def __init__(self, func: PrimFunc, warp_size: int):
        self.func = func
        self.warp_size = warp_size
        self.threads: dict[Var, tuple[str, int]] = {}
        self.count = 0

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.key == "thread_extent":
            var = s.node
            self.threads[var] = (var.name, s.value.value)  # type: ignore[union-attr]
            body = self.visit(s.body)
            del self.threads[var]
            out = s if body is s.body else AttrStmt(s.node, s.key, s.value, body)
            return out
        if s.key == "reduce_scope" and isinstance(s.body, Evaluate) and isinstance(
                s.body.value, Call) and s.body.value.op == "tir.thread_allreduce":
            return self._lower(s.node, s.body.value)
        return super().generic_visit(s)

    def _lower(self, combiner: CommReducer, call: Call) -> Stmt:
        accs = [a for a in call.args if isinstance(a, BufferLoad)]
        rvars = [a for a in call.args if isinstance(a, Var)]
        missing = [v.name for v in rvars if v not in self.threads]
        if missing:
            raise TensorforgeError(
                f"{self.func.name}: a reduction is bound to {', '.join(missing)}, which is "
                "not a thread index of its kernel (lower_thread_bindings must run first)")
        reduce = [(v, self.threads[v][1]) for v in rvars]
        group = [(v, e) for v, (tag, e) in self.threads.items()
                 if tag in BLOCK_TAGS and v not in rvars]
        group.sort(key=lambda ve: BLOCK_TAGS.index(ve[0].name))
        self.count += 1
        n = reduce[0][1] if len(reduce) == 1 else _linear(reduce)[1]
        if (self.warp_size > 1 and len(reduce) == 1 and reduce[0][0].name == "threadIdx.x"
                and n & (n - 1) == 0 and n <= self.warp_size):
            return self._shuffles(combiner, accs, n)
        return self._tree(combiner, accs, reduce, group)

    def _shuffles(self, combiner: CommReducer, accs: list[BufferLoad], n: int) -> Stmt:
        width = const(n)
        steps: list[Stmt] = []
        cur = tuple(accs)
        dsts = [(a.buffer, a.indices[0]) for a in accs]
        off = n // 2
        while off >= 1:
            other = tuple(Call(a.dtype, "tir.shuffle_down", (a, const(off), width)) for a in cur)
            steps.append(_combine_store(combiner, dsts, cur, other))
            off //= 2
        for a in accs:
            steps.append(BufferStore(a.buffer, Call(a.dtype, "tir.shuffle_idx",
                                                    (a, const(0), width)), a.indices))
        return seq(*steps)

    def _tree(self, combiner: CommReducer, accs: list[BufferLoad],
              reduce: list[tuple[Var, int]], group: list[tuple[Var, int]]) -> Stmt:
        rid, n = _linear(reduce)
        gid, gn = _linear(group)
        base = _c.mul(gid, n)
        slot = _c.add(base, rid)
        bufs = [Buffer(f"red_buf{self.count}_{k}", (n * gn,), a.dtype, "shared")
                for k, a in enumerate(accs)]
        steps: list[Stmt] = [BufferStore(b, a, (slot,)) for b, a in zip(bufs, accs)]
        steps.append(sync_stmt())

        def fold(s: int, cond_limit: int) -> None:
            here = tuple(BufferLoad(b, (slot,)) for b in bufs)
            there = tuple(BufferLoad(b, (_c.add(slot, s),)) for b in bufs)
            body = _combine_store(combiner, [(b, slot) for b in bufs], here, there)
            steps.append(IfThenElse(_c.cmp(LT, rid, cond_limit), body))
            steps.append(sync_stmt())

        p = 1
        while p * 2 <= n:
            p *= 2
        if p != n:
            fold(p, n - p)
        s = p // 2
        while s >= 1:
            fold(s, s)
            s //= 2
        for a, b in zip(accs, bufs):
            steps.append(BufferStore(a.buffer, BufferLoad(b, (base,)), a.indices))
        steps.append(sync_stmt())
        body = seq(*steps)
        for b in reversed(bufs):
            body = Allocate(b, body)
        return body


def lower_thread_allreduce(func: PrimFunc, warp_size: int = 1) -> PrimFunc:
    """The pass (see the module docstring); `warp_size` > 1 allows shuffles."""
    mut = _AllReduce(func, warp_size)
    body = mut.visit(func.body)
    if not mut.count:
        return func
    # the tree's shared buffers go to the top of their kernels
    body = _HoistKernels().visit(body)
    return func.with_body(body)


class _HoistKernels(ExprMutator):
    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.key == "thread_extent":
            return hoist_shared(s)
        return super().generic_visit(s)
