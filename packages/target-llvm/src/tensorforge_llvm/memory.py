"""Buffer loads and stores: scalar, contiguous vector (Ramp with stride 1), strided/gathered
(per lane), and masked variants used under a vector `if_then_else`.

Alignment: accesses assume only the element's alignment, because parameter arrays come from
numpy (which does not promise more); internal allocations are 64-byte aligned at allocation.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from tensorforge.expr import IntImm, PrimExpr, Ramp
from tensorforge.expr import dtype as dt

from .codegen_expr import I1, I32, PTR, ExprEmitter, _mangle, ll_type
from .lane_gather import emit_window_load


def _elem(buffer: Any) -> tuple[ir.Type, int]:
    t = ll_type(buffer.dtype, memory=True)
    return t, dt.nbytes(dt.element(buffer.dtype))


def _is_contiguous(idx: PrimExpr) -> bool:
    return isinstance(idx, Ramp) and isinstance(idx.stride, IntImm) and idx.stride.value == 1


def _to_reg(em: ExprEmitter, v: ir.Value, dtype: str) -> ir.Value:
    """Memory form -> register form (bool bytes -> i1)."""
    if dt.is_bool(dtype):
        return em.b.icmp_unsigned("!=", v, em.zero(v.type))
    return v


def emit_prefetch(em: ExprEmitter, buffer: Any, ptr: ir.Value, etype: ir.Type,
                  base: PrimExpr, lanes: int) -> None:
    """`llvm.prefetch` (read, into L2: `prefetcht1` on x86) of the cache lines of `lanes`
    elements from `base + distance` of a global buffer, once per distinct address expression
    in the pragma's body (an unrolled tile loads one weight vector many times; LLVM merges the
    loads, not the prefetches). A hint: an address past the buffer does not fault."""
    if em.prefetch is None or getattr(buffer, "scope", "global") not in ("global", ""):
        return
    distance, done = em.prefetch
    key = (buffer.name, str(base))
    if key in done:
        return
    done.add(key)
    b = em.b
    i = em.index(base)
    fn = em.declare("llvm.prefetch.p0", ir.VoidType(), [PTR, I32, I32, I32])
    per_line = max(1, CACHE_LINE // max(1, dt.nbytes(dt.element(buffer.dtype))))
    for off in range(0, lanes, per_line):
        at = b.gep(ptr, [b.add(i, ir.Constant(i.type, distance + off))], source_etype=etype)
        b.call(fn, [at, ir.Constant(I32, 0), ir.Constant(I32, 2), ir.Constant(I32, 1)])


CACHE_LINE = 64  # bytes


def emit_load(em: ExprEmitter, buffer: Any, ptr: ir.Value, idx: PrimExpr) -> ir.Value:
    etype, align = _elem(buffer)
    b = em.b
    lanes = dt.lanes(idx.dtype)
    if lanes == 1:
        if em.mask is not None:
            return _to_reg(em, _guarded_scalar_load(em, etype, align, ptr, idx), buffer.dtype)
        addr = b.gep(ptr, [em.index(idx)], source_etype=etype)
        return _to_reg(em, b.load(addr, typ=etype, align=align), buffer.dtype)
    vt = ir.VectorType(etype, lanes)
    if _is_contiguous(idx):
        addr = b.gep(ptr, [em.index(idx.base)], source_etype=etype)
        if em.prefetch is not None and em.mask is None:
            emit_prefetch(em, buffer, ptr, etype, idx.base, lanes)
        if em.mask is not None:
            fn = em.declare(f"llvm.masked.load.v{lanes}{_mangle(etype)}.p0", vt,
                            [PTR, I32, em.mask.type, vt])
            v = b.call(fn, [addr, ir.Constant(I32, align), em.mask, em.zero(vt)])
        else:
            v = b.load(addr, typ=vt, align=align)
        return _to_reg(em, v, buffer.dtype)
    if em.mask is None:  # lanes at constant offsets from one address: window loads
        v = emit_window_load(em, etype, align, ptr, idx, lanes)
        if v is not None:
            return _to_reg(em, v, buffer.dtype)
    addrs = _lane_addresses(em, etype, ptr, idx)
    if em.mask is not None:
        pvt = ir.VectorType(PTR, lanes)
        vec_ptrs = em.gather_lanes(addrs)
        fn = em.declare(f"llvm.masked.gather.v{lanes}{_mangle(etype)}.v{lanes}p0", vt,
                        [pvt, I32, em.mask.type, vt])
        v = b.call(fn, [vec_ptrs, ir.Constant(I32, align), em.mask, em.zero(vt)])
        return _to_reg(em, v, buffer.dtype)
    v = em.gather_lanes([b.load(a, typ=etype, align=align) for a in addrs])
    return _to_reg(em, v, buffer.dtype)


def _lane_addresses(em: ExprEmitter, etype: ir.Type, ptr: ir.Value, idx: PrimExpr) -> list:
    b = em.b
    if isinstance(idx, Ramp) and dt.lanes(idx.base.dtype) == 1:
        base = em.index(idx.base)
        stride = em.index(idx.stride)
        first = b.gep(ptr, [base], source_etype=etype)
        if isinstance(idx.stride, IntImm):
            return [b.gep(first, [ir.Constant(base.type, k * idx.stride.value)],
                          source_etype=etype) for k in range(idx.lanes)]
        return [b.gep(first, [b.mul(stride, ir.Constant(stride.type, k))], source_etype=etype)
                for k in range(idx.lanes)]
    lanes = em.lanes_of(em.index(idx))
    return [b.gep(ptr, [i], source_etype=etype) for i in lanes]


def _guarded_scalar_load(em: ExprEmitter, etype: ir.Type, align: int, ptr: ir.Value,
                         idx: PrimExpr) -> ir.Value:
    """A scalar load under a vector mask: performed only if some lane is active."""
    b = em.b
    mask = em.mask
    assert mask is not None
    fn = em.declare(f"llvm.vector.reduce.or.v{mask.type.count}i1", I1, [mask.type])
    any_active = b.call(fn, [mask])
    before = b.block
    then = em.fn.append_basic_block("masked_load")
    merge = em.fn.append_basic_block("masked_load_end")
    b.cbranch(any_active, then, merge)
    b.position_at_end(then)
    old, em.mask = em.mask, None
    try:
        v = b.load(b.gep(ptr, [em.index(idx)], source_etype=etype), typ=etype, align=align)
    finally:
        em.mask = old
    then_end = b.block
    b.branch(merge)
    b.position_at_end(merge)
    phi = b.phi(etype)
    phi.add_incoming(v, then_end)
    phi.add_incoming(em.zero(etype), before)
    return phi


def emit_store(em: ExprEmitter, buffer: Any, ptr: ir.Value, idx: PrimExpr,
               value: ir.Value, value_dtype: str) -> None:
    etype, align = _elem(buffer)
    b = em.b
    if dt.is_bool(buffer.dtype):
        value = b.zext(value, ir.VectorType(etype, value.type.count)
                       if isinstance(value.type, ir.VectorType) else etype)
    lanes = dt.lanes(idx.dtype)
    if lanes == 1:
        b.store(value, b.gep(ptr, [em.index(idx)], source_etype=etype), align=align)
        return
    if dt.lanes(value_dtype) == 1:
        value = em.splat(value, lanes)
    if _is_contiguous(idx):
        addr = b.gep(ptr, [em.index(idx.base)], source_etype=etype)
        if not getattr(addr.type, "is_opaque", True):
            # allocas are typed pointers in llvmlite; a vector store needs a vector pointer
            addr = b.bitcast(addr, value.type.as_pointer())
        b.store(value, addr, align=align)
        return
    addrs = _lane_addresses(em, etype, ptr, idx)
    for a, v in zip(addrs, em.lanes_of(value)):
        b.store(v, a, align=align)
