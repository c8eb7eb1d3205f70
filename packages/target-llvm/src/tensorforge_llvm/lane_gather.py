"""Vector loads whose lanes sit at compile-time offsets from one address: a few masked vector
loads and a shuffle instead of a load per lane.

A vectorized read of permuted channels (the channel shuffle of NCHW[x]c, `shuffle.py`, with
its channel blocks unrolled) indexes `x16(base) + f(ramp(c0, 1, 16))`: every term is either
a broadcast scalar (the pixel's address, the same for all lanes) or built from constants and
ramps with constant bases only, so each lane's offset from `base` is known here. The lanes
are covered by windows of `lanes` consecutive elements (at most `MAX_WINDOWS`), each one
`llvm.masked.load` of the elements used (the other lanes are not read: no access beyond the
buffer), then one `shufflevector` per extra window puts the lanes in order. A ramp with a
variable base and a constant stride (a strided read) has the same form. Anything else
(a loop variable inside the per-lane part, a masked load under `if_then_else`, lanes too
scattered) keeps the load per lane of `memory.py`."""

from __future__ import annotations

from llvmlite import ir

from tensorforge.expr import (
    Add,
    Broadcast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Ramp,
    Sub,
)

from .codegen_expr import I1, I32, PTR, ExprEmitter, _mangle

__all__ = ["MAX_WINDOWS", "constant_lane_offsets", "emit_window_load"]

#: windows of consecutive elements a lane gather may use (each one masked vector load)
MAX_WINDOWS = 4


def _terms(e: PrimExpr) -> list[tuple[int, PrimExpr]]:
    """(sign, term) of a sum of sums and differences."""
    if isinstance(e, Add):
        return _terms(e.a) + _terms(e.b)
    if isinstance(e, Sub):
        return _terms(e.a) + [(-s, t) for s, t in _terms(e.b)]
    return [(1, e)]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY = {Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
           FloorDiv: lambda a, b: a // b, FloorMod: lambda a, b: a % b,
           Div: _trunc_div, Mod: lambda a, b: a - _trunc_div(a, b) * b,
           Min: min, Max: max}


def _const_lanes(e: PrimExpr, lanes: int) -> list[int] | None:
    """Every lane of an integer expression of constants, ramps and broadcasts of constants,
    or None when it reads anything else (or divides by zero)."""
    if isinstance(e, IntImm):
        return [int(e.value)] * lanes
    if isinstance(e, Broadcast):
        v = _const_lanes(e.value, 1)
        return None if v is None else v * lanes
    if isinstance(e, Ramp):
        base, stride = _const_lanes(e.base, 1), _const_lanes(e.stride, 1)
        if base is None or stride is None:
            return None
        return [base[0] + k * stride[0] for k in range(e.lanes)]
    op = _BINARY.get(type(e))
    if op is None:
        return None
    a, b = _const_lanes(e.a, lanes), _const_lanes(e.b, lanes)
    if a is None or b is None or len(a) != len(b):
        return None
    try:
        return [op(x, y) for x, y in zip(a, b)]
    except ZeroDivisionError:
        return None


def constant_lane_offsets(idx: PrimExpr, lanes: int) -> tuple[list[PrimExpr], list[int]] | None:
    """(the scalar terms of the common base, each lane's constant offset) of a vector index
    `sum of broadcast scalars + constant lane pattern`, else None."""
    base: list[PrimExpr] = []
    offsets = [0] * lanes
    for sign, t in _terms(idx):
        if isinstance(t, Broadcast) and _const_lanes(t, lanes) is None:
            if sign < 0:
                return None
            base.append(t.value)
            continue
        if isinstance(t, Ramp) and _const_lanes(t.base, 1) is None and sign > 0:
            stride = _const_lanes(t.stride, 1)  # a strided ramp from a variable base
            if stride is None:
                return None
            base.append(t.base)
            offsets = [o + k * stride[0] for k, o in enumerate(offsets)]
            continue
        vals = _const_lanes(t, lanes)
        if vals is None:
            return None
        offsets = [o + sign * v for o, v in zip(offsets, vals)]
    return base, offsets


def _windows(offsets: list[int], lanes: int) -> list[int] | None:
    """Start offsets of windows of `lanes` consecutive elements covering every offset."""
    starts: list[int] = []
    for o in sorted(set(offsets)):
        if not starts or o >= starts[-1] + lanes:
            starts.append(o)
    return starts if len(starts) <= MAX_WINDOWS else None


def emit_window_load(em: ExprEmitter, etype: ir.Type, align: int, ptr: ir.Value,
                     idx: PrimExpr, lanes: int) -> ir.Value | None:
    """The vector load of `idx` as masked window loads + shuffles (module doc), or None when
    the index has no such form."""
    found = constant_lane_offsets(idx, lanes)
    if found is None:
        return None
    base_terms, offsets = found
    starts = _windows(offsets, lanes)
    if starts is None or len(starts) == lanes:
        return None
    b = em.b
    first = ptr
    if base_terms:
        base = base_terms[0]
        for t in base_terms[1:]:
            base = base + t
        first = b.gep(ptr, [em.index(base)], source_etype=etype)
    vt = ir.VectorType(etype, lanes)
    fn = em.declare(f"llvm.masked.load.v{lanes}{_mangle(etype)}.p0", vt,
                    [PTR, I32, ir.VectorType(I1, lanes), vt])
    # (window, position in it) of every lane
    where = [next((w, o - s) for w, s in enumerate(starts) if s <= o < s + lanes)
             for o in offsets]
    loaded = []
    for w, s in enumerate(starts):
        used = {p for ww, p in where if ww == w}
        mask = ir.Constant(ir.VectorType(I1, lanes), [int(k in used) for k in range(lanes)])
        at = b.gep(first, [ir.Constant(I32, s)], source_etype=etype) if s else first
        loaded.append(b.call(fn, [at, ir.Constant(I32, align), mask, ir.Constant(vt, None)]))

    def shuffle(x: ir.Value, y: ir.Value, sel: list[int]) -> ir.Value:
        return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, lanes), sel))

    if len(loaded) == 1:
        sel = [p for _, p in where]
        return loaded[0] if sel == list(range(lanes)) else shuffle(
            loaded[0], ir.Constant(vt, ir.Undefined), sel)
    acc = shuffle(loaded[0], loaded[1],
                  [p if w == 0 else lanes + p if w == 1 else 0 for w, p in where])
    for w in range(2, len(loaded)):  # acc holds lane k at k; window w's lanes come in
        acc = shuffle(acc, loaded[w], [lanes + p if ww == w else k
                                       for k, (ww, p) in enumerate(where)])
    return acc
