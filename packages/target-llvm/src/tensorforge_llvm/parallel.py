"""Parallel loops as OpenMP regions (libgomp).

The outermost `For(kind="parallel")` is outlined into `void body(ptr data)`: `data` points to a
struct in the parent's frame holding every value the loop uses from outside (buffer pointers,
scalars, enclosing loop variables, let bindings), the loop bounds, and the parent's status
slot. Each OpenMP thread runs a static chunk of the iterations; the parent calls
`GOMP_parallel(body, data, num_threads, 0)`, which returns when all threads are done. Parallel
loops nested inside a region run serially.

Small loop nests stay serial (`worth_parallel`): entering a region costs a wake-up and a
barrier (microseconds with spinning workers, tens of microseconds once they sleep, far more
when the machine is loaded and a worker is descheduled), more than a nest of fewer than
PARALLEL_MIN_FLOPS operations that touches fewer than PARALLEL_MIN_BYTES saves.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from tensorforge.expr import ExprVisitor, IntImm, Var
from tensorforge.expr import dtype as dt
from tensorforge.tir import Allocate, AttrStmt, BufferStore, For, IfThenElse, LetStmt, SeqStmt

from .codegen_expr import I32, PTR, STACK_ALIGN, ll_type
from .codegen_stmt import StmtEmitter

PARALLEL_MIN_FLOPS = 1_000_000  # element operations (vector lanes counted): ~10 us on a core
PARALLEL_MIN_BYTES = 512 * 1024  # bytes loaded and stored
_UNKNOWN_EXTENT = 1 << 20


class _Uses(ExprVisitor):
    """Every variable a statement mentions, including buffer data pointers."""

    def __init__(self) -> None:
        self.found: dict[Var, None] = {}  # ordered, for deterministic struct layouts

    def visit_Var(self, v: Var) -> None:
        self.found[v] = None

    def _buffer(self, buf: Any) -> None:
        self.found[buf.data] = None
        for d in buf.shape:
            self.visit(d)

    def visit_BufferLoad(self, e: Any) -> None:
        self._buffer(e.buffer)
        self.generic_visit(e)

    def visit_BufferStore(self, s: Any) -> None:
        self._buffer(s.buffer)
        self.generic_visit(s)

    def visit_Allocate(self, s: Any) -> None:
        self._buffer(s.buffer)
        self.generic_visit(s)


class _Ops(ExprVisitor):
    def __init__(self) -> None:
        self.ops = 0
        self.load_bytes = 0

    def generic_visit(self, node: Any) -> None:
        self.ops += 1
        super().generic_visit(node)

    def visit_BufferLoad(self, e: Any) -> None:
        self.load_bytes += dt.nbytes(e.dtype)
        self.generic_visit(e)


def estimate_work(s: Any) -> tuple[float, float]:
    """(element operations, bytes moved) of a statement, loops with constant extents
    multiplied out (a symbolic extent counts as large)."""
    if isinstance(s, For):
        ext = s.extent.value if isinstance(s.extent, IntImm) else _UNKNOWN_EXTENT
        f, b = estimate_work(s.body)
        return ext * f, ext * b
    if isinstance(s, SeqStmt):
        parts = [estimate_work(x) for x in s.seq]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(s, IfThenElse):
        a = estimate_work(s.then_case)
        b = estimate_work(s.else_case) if s.else_case is not None else (0.0, 0.0)
        return max(a[0], b[0]), max(a[1], b[1])
    if isinstance(s, (LetStmt, AttrStmt, Allocate)):
        return estimate_work(s.body)
    if isinstance(s, BufferStore):
        v = _Ops()
        v.visit(s.value)
        lanes = dt.lanes(s.value.dtype)
        return float(v.ops * lanes), float(v.load_bytes + dt.nbytes(s.value.dtype))
    return 0.0, 0.0


def worth_parallel(loop: For) -> bool:
    """Whether a parallel loop nest is large enough for an OpenMP region."""
    flops, nbytes = estimate_work(loop)
    return flops >= PARALLEL_MIN_FLOPS or nbytes >= PARALLEL_MIN_BYTES


def emit_parallel_for(em: StmtEmitter, loop: For) -> None:
    ctx = em.ctx
    b = em.b
    uses = _Uses()
    uses.visit(loop)
    captured = [(v, em.vars[v]) for v in uses.found if v in em.vars and v is not loop.loop_var]
    vt = ll_type(loop.loop_var.dtype)
    start = em.cast(em.index(loop.min), loop.min.dtype, loop.loop_var.dtype)
    extent = em.cast(em.index(loop.extent), loop.extent.dtype, loop.loop_var.dtype)

    status = em.alloca(I32)
    b.store(ir.Constant(I32, 0), status)
    fields = [val.type for _, val in captured] + [vt, vt, PTR]
    struct_t = ir.LiteralStructType(fields)
    data = em.alloca(struct_t)
    values = [val for _, val in captured] + [start, extent, status]
    for k, val in enumerate(values):
        b.store(val, _field(b, data, struct_t, k))

    body_fn = ir.Function(ctx.module, ir.FunctionType(ir.VoidType(), [PTR]),
                          name=ctx.unique(f"{em.func_name}_parallel"))
    body_fn.linkage = "internal"
    body_fn.attributes.add("nounwind")
    body_fn.attributes.alignstack = STACK_ALIGN
    body_fn.args[0].add_attribute("noalias")

    sub = StmtEmitter(ctx, em.state, body_fn, in_parallel=True)
    sb = sub.b
    arg = body_fn.args[0]
    loaded = [sb.load(_field(sb, arg, struct_t, k), typ=t) for k, t in enumerate(fields)]
    for (var, _), val in zip(captured, loaded):
        sub.vars[var] = val
    lo, ext, sub.status_ptr = loaded[-3], loaded[-2], loaded[-1]

    # static schedule: thread t of n runs [lo + t*chunk, min(lo + (t+1)*chunk, lo + ext))
    tid = sb.call(sub.declare("omp_get_thread_num", I32, []), [])
    nth = sb.call(sub.declare("omp_get_num_threads", I32, []), [])
    tid, nth = _to(sb, tid, vt), _to(sb, nth, vt)
    one = ir.Constant(vt, 1)
    chunk = sb.sdiv(sb.sub(sb.add(ext, nth), one), nth)
    my_lo = sb.add(lo, sb.mul(tid, chunk))
    my_hi = sb.add(my_lo, chunk)
    stop = sb.add(lo, ext)
    my_hi = sb.select(sb.icmp_signed("<", my_hi, stop), my_hi, stop)
    sub.loop(loop.loop_var, my_lo, my_hi, loop.body)
    if not sb.block.is_terminated:
        sb.ret_void()

    gomp = em.declare("GOMP_parallel", ir.VoidType(), [PTR, PTR, I32, I32])
    b.call(gomp, [body_fn, data, ir.Constant(I32, ctx.num_threads), ir.Constant(I32, 0)])
    code = b.load(status, typ=I32)
    em.branch_fail(b.icmp_signed("==", code, ir.Constant(I32, 0)), code, "parallel")


def _field(b: ir.IRBuilder, ptr: ir.Value, struct_t: ir.Type, k: int) -> ir.Value:
    addr = b.gep(ptr, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=struct_t)
    addr.type = PTR  # llvmlite types struct GEPs as typed pointers; LLVM's are opaque
    return addr


def _to(b: ir.IRBuilder, v: ir.Value, t: ir.Type) -> ir.Value:
    if v.type == t:
        return v
    return b.sext(v, t) if t.width > v.type.width else b.trunc(v, t)
