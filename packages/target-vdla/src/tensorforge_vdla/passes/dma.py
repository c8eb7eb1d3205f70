"""inject_dma: a copy nest marked `pragma(axis, "dma_copy")` becomes a 2-D strided DMA.

Runs right after `storage_flatten`, so every access has one index. The nest's innermost loops
must walk one tile (contiguous in SRAM and in DRAM); the loops above, in tiles, are merged where
they are contiguous in both memories; the innermost remaining loop with unit strides becomes
the row (`x`), the next one whose SRAM stride is the row length becomes `y`, and any loops
left stay as host loops around the instruction. A guard `if_then_else(cond, src[..], 0)` (the
inlined padding of a convolution) becomes the four pads: each conjunct of `cond` is linear in
`y` or `x` with coefficient +-1, and says how many leading or trailing rows or columns read
zeros; the DRAM address then points at the first element that is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensorforge.arith import Analyzer
from tensorforge.expr import (
    GE,
    GT,
    LE,
    LT,
    And,
    BufferLoad,
    Call,
    Cast,
    ExprMutator,
    IntImm,
    PrimExpr,
    Var,
    substitute,
    uses_var,
)
from tensorforge.expr import construct as _c
from tensorforge.tir.stmt import AttrStmt, BufferStore, Evaluate, For, PrimFunc, Stmt

from ..config import VDLAConfig
from ..errors import VDLACompileError
from ..isa import MemId
from .common import SCOPE_MEM, const_extent, linear, perfect_nest


@dataclass
class _Dim:
    vars: list[Var]
    extent: int
    sram: int  # stride in tiles
    dram: int


def config_of(func: PrimFunc) -> VDLAConfig:
    target = func.attrs.get("target")
    if target is None:
        raise VDLACompileError(f"{func.name}: VDLA passes need the target (lower with target=)")
    return VDLAConfig.from_target(target)


def inject_dma(func: PrimFunc) -> PrimFunc:
    return func.with_body(_InjectDMA(config_of(func), func.name).visit(func.body))


class _InjectDMA(ExprMutator):
    def __init__(self, config: VDLAConfig, name: str):
        self.config = config
        self.name = name

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.key == "pragma_dma_copy":
            return lower_copy(s.body, self.config, f"{self.name}: dma_copy")
        return AttrStmt(s.node, s.key, s.value, self.visit(s.body))


def _split_value(value: PrimExpr, what: str) -> tuple[BufferLoad, PrimExpr | None, str | None]:
    """(source load, guard, cast dtype) of a copy's stored value."""
    cast = guard = None
    if isinstance(value, Cast):
        cast, value = value.dtype, value.value
    if isinstance(value, Call) and value.op == "if_then_else":
        guard, value, other = value.args
        if not (isinstance(other, IntImm) and other.value == 0):
            raise VDLACompileError(f"{what}: padding must be zeros, got {other}")
    if isinstance(value, Cast) and cast is None:
        cast, value = value.dtype, value.value
    if not isinstance(value, BufferLoad):
        raise VDLACompileError(f"{what}: a DMA copies a buffer, but the nest stores {value}")
    return value, guard, cast


def lower_copy(nest: Stmt, config: VDLAConfig, what: str) -> Stmt:
    """The DMA instruction (inside any host loops left) for one copy nest."""
    loops, body = perfect_nest(nest)
    if not isinstance(body, BufferStore):
        raise VDLACompileError(f"{what}: expected a loop nest around one store, got {body}")
    load, guard, cast = _split_value(body.value, what)
    dst, src = body.buffer, load.buffer
    if dst.scope in SCOPE_MEM and src.scope == "global":
        mem, sram, dram = SCOPE_MEM[dst.scope], (dst, body.indices[0]), (src, load.indices[0])
        if src.dtype != dst.dtype:
            raise VDLACompileError(f"{what}: loads copy bytes as they are; {src.name} is "
                                   f"{src.dtype} but {dst.name} is {dst.dtype}")
        store = False
    elif dst.scope == "global" and src.scope == "acc_buffer":
        if guard is not None:
            raise VDLACompileError(f"{what}: a store cannot pad")
        mem = MemId.ACC if dst.dtype == "int32" else MemId.OUT
        if dst.dtype not in ("int32", "int8") or (dst.dtype == "int8" and cast != "int8"):
            raise VDLACompileError(f"{what}: stores write int32 accumulators or their int8 "
                                   f"narrowing, not {dst.dtype}")
        sram, dram, store = (src, load.indices[0]), (dst, body.indices[0]), True
    else:
        raise VDLACompileError(
            f"{what}: copies {src.name} ({src.scope}) to {dst.name} ({dst.scope}); VDLA DMA "
            "moves DRAM (global) to inp/wgt/acc_buffer, or acc_buffer to DRAM")
    tile = config.tile_elems("acc" if mem == MemId.OUT else mem.key)
    ana = Analyzer()
    for lp in loops:
        ana.bind(lp.loop_var, (0, const_extent(lp, what)))
    vars_ = [lp.loop_var for lp in loops]
    exts = [lp.extent.value for lp in loops]  # type: ignore[union-attr]
    sc, _ = linear(sram[1], vars_, what, ana)
    dc, _ = linear(dram[1], vars_, what, ana)
    k, covered = len(loops) - 1, 1
    straddle: _Dim | None = None  # a contiguous loop longer than what completes the tile
    while covered < tile and k >= 0:
        if exts[k] > 1:
            whole = covered * exts[k]
            if sc[k] != covered or dc[k] != covered or (whole > tile and whole % tile):
                raise VDLACompileError(
                    f"{what}: the innermost loops must walk whole {tile}-element tiles, "
                    f"contiguous in both memories; loop {vars_[k].name} (extent {exts[k]}) "
                    f"steps {sc[k]} in SRAM and {dc[k]} in DRAM after {covered} elements")
            if whole > tile:
                straddle = _Dim([vars_[k]], whole // tile, 1, 1)
                whole = tile
            covered = whole
        k -= 1
    if covered != tile:
        raise VDLACompileError(f"{what}: the copy moves {covered}-element pieces, not whole "
                               f"{tile}-element tiles")
    dims = []
    for i in range(k + 1):
        if exts[i] == 1:
            continue
        if sc[i] % tile or dc[i] % tile:
            raise VDLACompileError(f"{what}: loop {vars_[i].name} does not step whole tiles "
                                   f"({sc[i]} / {dc[i]} elements)")
        dims.append(_Dim([vars_[i]], exts[i], sc[i] // tile, dc[i] // tile))
    if straddle is not None:
        dims.append(straddle)
    guard_vars = {v for v in vars_ if guard is not None and uses_var(guard, lambda x, v=v: x is v)}
    dims = _merge(dims, guard_vars)
    x = dims.pop() if dims and dims[-1].sram == 1 and dims[-1].dram == 1 else None
    cols = x.extent if x else 1
    y = dims.pop() if dims and dims[-1].sram == cols else None
    host = {v for d in dims for v in d.vars}
    if straddle is not None and (straddle.vars[0] in host or straddle.vars[0] in guard_vars):
        raise VDLACompileError(f"{what}: loop {straddle.vars[0].name} walks several tiles but "
                               "is neither the DMA's row nor its column, or is padded")
    inner = [v for v in vars_ if v not in host]
    bad = guard_vars - {v for d in (x, y) if d for v in d.vars}
    if bad:
        raise VDLACompileError(f"{what}: the padding condition depends on loop(s) "
                               f"{', '.join(v.name for v in bad)}, which are not the DMA's rows "
                               "or columns")
    pads = _pads(guard, y, x, ana, what)
    zero = {v: _c.const(0, v.dtype) for v in inner}
    sram_base = ana.simplify(substitute(sram[1], zero))
    first = {**zero}
    if y:
        first[y.vars[0]] = pads[0]
    if x:
        first[x.vars[0]] = pads[2]
    dram_base = ana.simplify(substitute(dram[1], first))
    ysz = _c.sub(_c.sub(y.extent if y else 1, pads[0]), pads[1])
    xsz = _c.sub(_c.sub(cols, pads[2]), pads[3])
    stride = y.dram if y else cols
    sram_addr = _c.call("handle", "address_of", BufferLoad(sram[0], (sram_base,)))
    dram_addr = _c.call("handle", "address_of", BufferLoad(dram[0], (dram_base,)))
    if store:
        call = _c.call("int32", "vdla.store", int(mem), sram_addr, dram_addr, ysz, xsz, stride)
    else:
        call = _c.call("int32", "vdla.load", int(mem), sram_addr, dram_addr, ysz, xsz, stride,
                       *pads)
    out: Stmt = Evaluate(call)
    for lp in reversed(loops):
        if lp.loop_var in host:
            out = For(lp.loop_var, lp.min, lp.extent, "serial", out)
    return out


def _merge(dims: list[_Dim], guard_vars: set[Var]) -> list[_Dim]:
    """Merge a loop into the one inside it where both memories see one contiguous run."""
    out: list[_Dim] = []
    for d in reversed(dims):  # innermost first
        if out:
            cur = out[-1]
            free = not (set(d.vars) | set(cur.vars)) & guard_vars
            if free and d.sram == cur.extent * cur.sram and d.dram == cur.extent * cur.dram:
                out[-1] = _Dim(d.vars + cur.vars, d.extent * cur.extent, cur.sram, cur.dram)
                continue
        out.append(d)
    return out[::-1]


def _conjuncts(cond: PrimExpr, what: str) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a, what) + _conjuncts(cond.b, what)
    if isinstance(cond, Call) and cond.op == "likely":
        return _conjuncts(cond.args[0], what)
    if isinstance(cond, (LT, LE, GT, GE)):
        return [cond]
    raise VDLACompileError(f"{what}: cannot turn the guard {cond} into DMA padding")


def _nonneg(c: Any) -> PrimExpr:
    """An expression e with `c` equivalent to e >= 0."""
    if isinstance(c, LT):
        return _c.sub(_c.sub(c.b, c.a), 1)
    if isinstance(c, LE):
        return _c.sub(c.b, c.a)
    if isinstance(c, GT):
        return _c.sub(_c.sub(c.a, c.b), 1)
    return _c.sub(c.a, c.b)


def _pads(guard: PrimExpr | None, y: _Dim | None, x: _Dim | None, ana: Analyzer, what: str
          ) -> list[PrimExpr]:
    """[y_pad0, y_pad1, x_pad0, x_pad1] as expressions of the host loops."""
    pads: list[PrimExpr] = [_c.const(0)] * 4
    if guard is None:
        return pads
    walked = [v for dd in (x, y) if dd for v in dd.vars]
    for conj in _conjuncts(guard, what):
        g = _nonneg(conj)
        for slot, d in ((0, y), (2, x)):
            if d is None:
                continue
            (a,), rest = linear(g, d.vars, what, ana)
            if a == 0:
                continue
            if uses_var(rest, lambda u: any(u is w for w in walked)):
                raise VDLACompileError(f"{what}: guard {conj} mixes rows and columns")
            if a not in (1, -1):
                raise VDLACompileError(f"{what}: guard {conj} steps {a} per row; padding needs "
                                       "+-1")
            n = d.extent
            if a == 1:  # v >= -rest: the first -rest rows are padding
                pads[slot] = _c.max_(pads[slot], _clamp(_c.sub(0, rest), n))
            else:  # v <= rest: rows past rest are padding
                pads[slot + 1] = _c.max_(pads[slot + 1], _clamp(_c.sub(n - 1, rest), n))
            break
        else:
            raise VDLACompileError(f"{what}: guard {conj} does not depend on the DMA's rows or "
                                   "columns")
    return [ana.simplify(p) for p in pads]


def _clamp(e: PrimExpr, n: int) -> PrimExpr:
    return _c.min_(_c.max_(e, 0), n)


__all__ = ["inject_dma", "lower_copy", "config_of"]
