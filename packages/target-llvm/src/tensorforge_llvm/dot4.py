"""`dot4_u8s8(a, b)` (graph/ops/qconv.py): per 32-bit lane, the int32 sum of the products of
a's 4 unsigned bytes with b's 4 signed bytes, added to an accumulator.

With AVX-512 VNNI (16 lanes a chunk) or AVX-VNNI / AVX-512 VNNI+VL (8 or 4 lanes) in the
target's features this is one `vpdpbusd` per chunk, the accumulator folded in (the
reduction's `acc + dot4(a, b)` is matched by `ExprEmitter._add`). Otherwise the bytes are
widened to int32, multiplied and summed in plain vector IR (LLVM selects pmaddwd-style code
for it), so a CPU without VNNI never sees the instruction."""

from __future__ import annotations

from llvmlite import ir

from tensorforge.expr import Call
from tensorforge.expr import dtype as dt

from .codegen_expr import I32, ExprEmitter

DOT4 = "dot4_u8s8"


def _vnni_chunk(features: frozenset[str], lanes: int) -> int:
    """Lanes per vpdpbusd (0: none): 16 with AVX-512 VNNI, 8 or 4 (ymm, xmm) with AVX-VNNI or
    AVX-512 VNNI + VL."""
    if lanes % 16 == 0 and "avx512vnni" in features:
        return 16
    if "avxvnni" in features or {"avx512vnni", "avx512vl"} <= features:
        return next((n for n in (8, 4) if lanes % n == 0), 0)
    return 0


def _slice(b: ir.IRBuilder, v: ir.Value, start: int, n: int) -> ir.Value:
    if v.type.count == n:
        return v
    mask = ir.Constant(ir.VectorType(I32, n), [ir.Constant(I32, start + i) for i in range(n)])
    return b.shuffle_vector(v, ir.Constant(v.type, None), mask)


def _concat(b: ir.IRBuilder, parts: list[ir.Value]) -> ir.Value:
    while len(parts) > 1:
        nxt = []
        for i in range(0, len(parts), 2):
            lo, hi = parts[i], parts[i + 1]
            n = lo.type.count * 2
            mask = ir.Constant(ir.VectorType(I32, n), [ir.Constant(I32, k) for k in range(n)])
            nxt.append(b.shuffle_vector(lo, hi, mask))
        parts = nxt
    return parts[0]


def emit_dot4(em: ExprEmitter, e: Call, acc: ir.Value | None = None) -> ir.Value:
    """acc + dot4_u8s8(a, b) (acc None: 0)."""
    lanes = dt.lanes(e.dtype)
    a, c = (em.expr(x) for x in e.args)
    b = em.b
    if lanes > 1:
        a, c = (v if isinstance(v.type, ir.VectorType) else em.splat(v, lanes) for v in (a, c))
        if acc is not None and not isinstance(acc.type, ir.VectorType):
            acc = em.splat(acc, lanes)
    chunk = _vnni_chunk(getattr(em.ctx, "features", frozenset()), lanes)
    if lanes > 1 and chunk:
        vt = ir.VectorType(I32, chunk)
        fn = em.declare(f"llvm.x86.avx512.vpdpbusd.{chunk * 32}", vt, [vt, vt, vt])
        zero = ir.Constant(vt, [ir.Constant(I32, 0)] * chunk)
        parts = []
        for s in range(0, lanes, chunk):
            ac = zero if acc is None else _slice(b, acc, s, chunk)
            parts.append(b.call(fn, [ac, _slice(b, a, s, chunk), _slice(b, c, s, chunk)]))
        return _concat(b, parts)
    return _widened(em, a, c, lanes, acc)


def _widened(em: ExprEmitter, a: ir.Value, c: ir.Value, lanes: int,
             acc: ir.Value | None) -> ir.Value:
    b = em.b
    n = 4 * lanes
    bytes_t = ir.VectorType(ir.IntType(8), n)
    wide_t = ir.VectorType(I32, n)
    prod = b.mul(b.zext(b.bitcast(a, bytes_t), wide_t), b.sext(b.bitcast(c, bytes_t), wide_t))
    total = acc
    for j in range(4):
        if lanes == 1:
            term = b.extract_element(prod, ir.Constant(I32, j))
        else:
            mask = ir.Constant(ir.VectorType(I32, lanes),
                               [ir.Constant(I32, 4 * k + j) for k in range(lanes)])
            term = b.shuffle_vector(prod, ir.Constant(wide_t, None), mask)
        total = term if total is None else b.add(total, term)
    return total
