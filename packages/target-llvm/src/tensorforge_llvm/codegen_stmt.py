"""Statements of the flattened loop IR -> LLVM IR, one LLVM function at a time.

Every function's entry block holds only the allocas (so they are static and SROA/mem2reg can
promote them) and branches to the body. Kernels return an int32 status (0 = ok, k = assertion k
failed, -1 = out of memory); an outlined parallel body instead records its failure in the
parent's status slot and returns.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from tensorforge.expr import IntImm, Var
from tensorforge.expr import dtype as dt
from tensorforge.tir import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
)

from .codegen_expr import I32, I64, PTR, ExprEmitter, ll_type
from .memory import emit_store

STACK_LIMIT = 64 * 1024  # bytes; larger (or symbolic) allocations use the heap
ALLOC_ALIGN = 64
UNROLL_LIMIT = 128  # "unrolled" loops with a constant extent up to this are unrolled here


class FunctionState:
    """What the kernel and its outlined parallel bodies share: the assertion messages."""

    def __init__(self, name: str):
        self.name = name
        self.asserts: list[str] = []


class StmtEmitter(ExprEmitter):
    """Emits the body of one LLVM function (a kernel or an outlined parallel region)."""

    def __init__(self, ctx: Any, state: FunctionState, fn: ir.Function,
                 status_ptr: ir.Value | None = None, in_parallel: bool = False):
        super().__init__(ctx, state.name, fn)
        self.state = state
        self.status_ptr = status_ptr  # set in outlined bodies: where a failure is recorded
        self.in_parallel = in_parallel
        self.heap: list[ir.Value] = []  # live malloc'd buffers, freed on early exits
        entry = fn.append_basic_block("entry")
        body = fn.append_basic_block("body")
        self.entry_builder = ir.IRBuilder(entry)
        self.entry_builder.branch(body)
        self.entry_builder.position_before(entry.terminator)
        self.b.position_at_end(body)
        self._dispatch_stmt = {
            SeqStmt: self._seq, For: self._for, BufferStore: self._store,
            LetStmt: self._letstmt, AttrStmt: self._attr, IfThenElse: self._if,
            Allocate: self._allocate, AssertStmt: self._assert, Evaluate: self._evaluate,
        }

    # helpers ---------------------------------------------------------------------------------
    def stmt(self, s: Any) -> None:
        if self.b.block.is_terminated:  # code after an unconditional early exit
            self.b.position_at_end(self.fn.append_basic_block("dead"))
        fn = self._dispatch_stmt.get(type(s))
        if fn is None:
            raise self.bug(f"unsupported statement {type(s).__name__}:\n{s}")
        fn(s)

    def alloca(self, t: ir.Type, count: int | None = None, align: int = 0) -> ir.Value:
        size = None if count is None else ir.Constant(I64, count)
        slot = self.entry_builder.alloca(t, size=size)
        if align:
            slot.align = align
        return slot

    def bind(self, var: Var, value: ir.Value) -> ir.Value | None:
        old = self.vars.get(var)
        self.vars[var] = value
        return old

    def unbind(self, var: Var, old: ir.Value | None) -> None:
        if old is None:
            self.vars.pop(var, None)
        else:
            self.vars[var] = old

    def fail(self, code: ir.Value) -> None:
        """Leave the function reporting `code` (i32), freeing live heap buffers."""
        b = self.b
        if self.status_ptr is not None:
            b.atomic_rmw("xchg", self.status_ptr, code, "monotonic")
        free = self.declare("free", ir.VoidType(), [PTR])
        for p in reversed(self.heap):
            b.call(free, [p])
        if self.status_ptr is not None:
            b.ret_void()
        else:
            b.ret(code)

    def branch_fail(self, ok: ir.Value, code: ir.Value, name: str) -> None:
        good = self.fn.append_basic_block(f"{name}_ok")
        bad = self.fn.append_basic_block(f"{name}_fail")
        self.b.cbranch(ok, good, bad)
        self.b.position_at_end(bad)
        self.fail(code)
        self.b.position_at_end(good)

    # statements --------------------------------------------------------------------------
    def _seq(self, s: SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def _evaluate(self, s: Evaluate) -> None:
        if not isinstance(s.value, IntImm):
            self.expr(s.value)

    def _attr(self, s: AttrStmt) -> None:
        if s.key == "pragma_prefetch" and isinstance(s.value, IntImm) and s.value.value:
            # software prefetch (`memory.emit_prefetch`): each distinct contiguous vector load
            # of a global buffer in the body also prefetches `value` elements ahead into L2
            old, self.prefetch = self.prefetch, (s.value.value, set())
            try:
                self.stmt(s.body)
            finally:
                self.prefetch = old
            return
        self.stmt(s.body)  # annotations (pragmas, storage hints) carry no code on CPU

    def _letstmt(self, s: LetStmt) -> None:
        old = self.bind(s.var, self.expr(s.value))
        self.stmt(s.body)
        self.unbind(s.var, old)

    def status_code(self, message: str) -> ir.Constant:
        """The status (1-based) that reports `message`: one per distinct message, so a
        check repeated by unrolling or loop partitioning keeps one code."""
        asserts = self.state.asserts
        if message not in asserts:
            asserts.append(message)
        return ir.Constant(I32, asserts.index(message) + 1)

    def _assert(self, s: AssertStmt) -> None:
        code = self.status_code(s.message)
        self.branch_fail(self.expr(s.condition), code, "assert")
        self.stmt(s.body)

    def _store(self, s: BufferStore) -> None:
        ptr, idx = self._access(s.buffer, s.indices)
        emit_store(self, s.buffer, ptr, idx, self.expr(s.value), s.value.dtype)

    def _if(self, s: IfThenElse) -> None:
        if dt.lanes(s.condition.dtype) != 1:
            raise self.bug(f"IfThenElse with a vector condition {s.condition}")
        cond = self.expr(s.condition)
        then = self.fn.append_basic_block("if_then")
        merge = self.fn.append_basic_block("if_end")
        other = self.fn.append_basic_block("if_else") if s.else_case is not None else merge
        self.b.cbranch(cond, then, other)
        self.b.position_at_end(then)
        self.stmt(s.then_case)
        if not self.b.block.is_terminated:
            self.b.branch(merge)
        if s.else_case is not None:
            self.b.position_at_end(other)
            self.stmt(s.else_case)
            if not self.b.block.is_terminated:
                self.b.branch(merge)
        self.b.position_at_end(merge)

    def _for(self, s: For) -> None:
        if s.kind == "thread_binding":
            raise self.bug(f"loop {s.loop_var.name!r} is bound to GPU thread "
                           f"{s.thread_tag!r}, which a CPU target cannot run")
        if s.kind == "parallel" and not self.in_parallel:
            from .parallel import emit_parallel_for, worth_parallel

            if worth_parallel(s):
                emit_parallel_for(self, s)
                return
        lo, ext = s.min, s.extent
        if (s.kind == "unrolled" and isinstance(lo, IntImm) and isinstance(ext, IntImm)
                and ext.value <= UNROLL_LIMIT):
            t = ll_type(s.loop_var.dtype)
            for k in range(ext.value):
                old = self.bind(s.loop_var, ir.Constant(t, lo.value + k))
                self.stmt(s.body)
                self.unbind(s.loop_var, old)
            return
        vt = s.loop_var.dtype
        start = self.cast(self.index(lo), lo.dtype, vt)
        end = self.b.add(start, self.cast(self.index(ext), ext.dtype, vt), flags=("nsw",))
        self.loop(s.loop_var, start, end, s.body)

    def loop(self, var: Var, start: ir.Value, end: ir.Value, body: Any) -> None:
        """`for var in [start, end)`: a header with the induction phi, the body, a latch."""
        b = self.b
        pre = b.block
        header = self.fn.append_basic_block(f"for_{var.name}")
        body_bb = self.fn.append_basic_block(f"for_{var.name}_body")
        exit_bb = self.fn.append_basic_block(f"for_{var.name}_end")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(start.type, name=var.name)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, end), body_bb, exit_bb)
        b.position_at_end(body_bb)
        old = self.bind(var, i)
        self.stmt(body)
        self.unbind(var, old)
        if not b.block.is_terminated:
            nxt = b.add(i, ir.Constant(start.type, 1), flags=("nsw",))
            i.add_incoming(nxt, b.block)
            b.branch(header)
        b.position_at_end(exit_bb)

    def _allocate(self, s: Allocate) -> None:
        buf = s.buffer
        etype = ll_type(buf.dtype, memory=True)
        esize = dt.nbytes(buf.dtype)
        shape = buf.const_shape()
        count = 1
        for d in shape or ():
            count *= d
        if shape is not None and count * esize <= STACK_LIMIT:
            old = self.bind(buf.data, self.alloca(etype, max(count, 1), ALLOC_ALIGN))
            self.stmt(s.body)
            self.unbind(buf.data, old)
            return
        b = self.b
        nbytes: ir.Value = ir.Constant(I64, esize)
        for d in buf.shape:
            nbytes = b.mul(nbytes, self.cast(self.expr(d), d.dtype, "int64"))
        # aligned_alloc wants a multiple of the alignment; never ask for 0 bytes
        nbytes = b.and_(b.add(nbytes, ir.Constant(I64, 2 * ALLOC_ALIGN - 1)),
                        ir.Constant(I64, -ALLOC_ALIGN))
        alloc = self.declare("aligned_alloc", PTR, [I64, I64])
        ptr = b.call(alloc, [ir.Constant(I64, ALLOC_ALIGN), nbytes])
        self.branch_fail(b.icmp_unsigned("!=", ptr, ir.Constant(PTR, None)),
                         ir.Constant(I32, -1), "alloc")
        self.heap.append(ptr)
        old = self.bind(buf.data, ptr)
        self.stmt(s.body)
        self.unbind(buf.data, old)
        self.heap.pop()
        if not b.block.is_terminated:
            b.call(self.declare("free", ir.VoidType(), [PTR]), [ptr])
