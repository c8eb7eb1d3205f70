"""inject_alu: an element-wise stage on accumulators, marked `pragma(axis, "alu")`, becomes a
sequence of ALU instructions, one loop nest each (fold_uops then micro-codes them).

The stored value is a chain of operations on one accumulator read: `min`, `max`, `+`, `-`
(by a constant), `*` and floor division by a power of two (an arithmetic right shift), each
with an integer immediate or another accumulator tile walked by the same loops (a bias tile
may stay in place across pixels: stride 0). When the destination is another buffer than the
first read, the chain starts with a copy (`MUL #0`, then `ADD`). The innermost loops must walk
whole accumulator tiles; splitting the nest per operation keeps each tile's order of
operations, which is all an element-wise chain needs."""

from __future__ import annotations

from tensorforge.arith import Analyzer
from tensorforge.expr import (
    Add,
    BufferLoad,
    ExprMutator,
    FloorDiv,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    substitute,
)
from tensorforge.expr import construct as _c
from tensorforge.tir.stmt import AttrStmt, BufferStore, Evaluate, For, PrimFunc, Stmt, seq

from ..config import VDLAConfig
from ..errors import VDLACompileError
from ..isa import AluOp
from .common import const_extent, linear, perfect_nest
from .dma import config_of

_IMM_BITS = 16


def inject_alu(func: PrimFunc) -> PrimFunc:
    return func.with_body(_InjectALU(config_of(func), func.name).visit(func.body))


class _InjectALU(ExprMutator):
    def __init__(self, config: VDLAConfig, name: str):
        self.config = config
        self.name = name

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.key == "pragma_alu":
            return lower_alu(s.body, self.config, f"{self.name}: alu")
        return AttrStmt(s.node, s.key, s.value, self.visit(s.body))


def _chain(e: PrimExpr, what: str) -> tuple[BufferLoad, list[tuple[AluOp, BufferLoad | int]]]:
    """(first read, [(op, operand)]) with value == fold(op, operand) over the first read."""
    if isinstance(e, BufferLoad):
        return e, []
    ops = {Min: AluOp.MIN, Max: AluOp.MAX, Add: AluOp.ADD, Mul: AluOp.MUL}
    t = type(e)
    if t in ops or t is Sub:
        a, b = e.a, e.b  # type: ignore[attr-defined]
        if t is not Sub and _operand(a) is not None and _operand(b) is None:
            a, b = b, a  # commutative: the chain on the left
        opnd = _operand(b)
        if opnd is None:
            raise VDLACompileError(f"{what}: {e} combines two computed values; the ALU takes "
                                   "one accumulator tile or an immediate per operation")
        first, steps = _chain(a, what)
        if t is Sub:
            if not isinstance(opnd, int):
                raise VDLACompileError(f"{what}: {e}: the ALU subtracts immediates only")
            return first, [*steps, (AluOp.ADD, -opnd)]
        return first, [*steps, (ops[t], opnd)]
    if t is FloorDiv and isinstance(e.b, IntImm):  # type: ignore[attr-defined]
        d = e.b.value  # type: ignore[attr-defined]
        if d > 0 and d & (d - 1) == 0:
            first, steps = _chain(e.a, what)  # type: ignore[attr-defined]
            return first, [*steps, (AluOp.SHR, d.bit_length() - 1)]
    raise VDLACompileError(f"{what}: the ALU cannot compute {e} (it has min, max, add, mul and "
                           "shift right by a constant)")


def _operand(e: PrimExpr) -> BufferLoad | int | None:
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, BufferLoad):
        return e
    return None


def lower_alu(nest: Stmt, config: VDLAConfig, what: str) -> Stmt:
    loops, body = perfect_nest(nest)
    if not isinstance(body, BufferStore) or body.buffer.scope != "acc_buffer":
        raise VDLACompileError(f"{what}: expected a loop nest storing into acc_buffer, got "
                               f"{body}")
    first, steps = _chain(body.value, what)
    loads = [first] + [o for _, o in steps if isinstance(o, BufferLoad)]
    for ld in loads:
        if ld.buffer.scope != "acc_buffer" or ld.buffer.dtype != "int32":
            raise VDLACompileError(f"{what}: the ALU reads int32 accumulators, not "
                                   f"{ld.buffer.name} ({ld.buffer.scope}, {ld.buffer.dtype})")
    ana = Analyzer()
    for lp in loops:
        ana.bind(lp.loop_var, (0, const_extent(lp, what)))
    vars_ = [lp.loop_var for lp in loops]
    exts = [lp.extent.value for lp in loops]  # type: ignore[union-attr]
    tile = config.tile_elems("acc")
    dc, _ = linear(body.indices[0], vars_, what, ana)
    k, covered = len(loops) - 1, 1
    while covered < tile and k >= 0:
        if exts[k] > 1:
            if dc[k] != covered:
                raise VDLACompileError(f"{what}: the innermost loops must walk whole "
                                       f"{tile}-lane accumulator tiles")
            covered *= exts[k]
        k -= 1
    if covered != tile:
        raise VDLACompileError(f"{what}: the nest walks {covered}-lane pieces, not {tile}-lane "
                               "tiles")
    lanes = vars_[k + 1:]
    for ld in loads:
        lc, _ = linear(ld.indices[0], vars_, what, ana)
        if lc[k + 1:] != dc[k + 1:]:
            raise VDLACompileError(f"{what}: {ld.buffer.name} is not read lane for lane with "
                                   f"{body.buffer.name}")
    zero = {v: _c.const(0, v.dtype) for v in lanes}

    def tile_of(ld: BufferLoad | BufferStore) -> BufferLoad:
        return BufferLoad(ld.buffer, (ana.simplify(substitute(ld.indices[0], zero)),))

    from ..intrin import alu_call

    def tile_view(ld: BufferLoad) -> PrimExpr:
        return _c.call("handle", "address_of", ld)

    dst = tile_view(tile_of(body))
    calls = []
    first_t = tile_of(first)
    if first.buffer.data is not body.buffer.data or not _same(first_t, tile_of(body), ana):
        calls.append(alu_call(AluOp.MUL, dst, None, 0))
        calls.append(alu_call(AluOp.ADD, dst, tile_view(first_t), 0))
    for op, opnd in steps:
        if isinstance(opnd, int):
            lim = 1 << (_IMM_BITS - 1)
            if not -lim <= opnd < lim:
                raise VDLACompileError(f"{what}: immediate {opnd} does not fit {_IMM_BITS} "
                                       "signed bits")
            calls.append(alu_call(op, dst, None, opnd))
        else:
            calls.append(alu_call(op, dst, tile_view(tile_of(opnd)), 0))
    outer = [lp for lp in loops if lp.loop_var not in lanes]
    nests = []
    for c in calls:
        s: Stmt = Evaluate(c)
        for lp in reversed(outer):
            s = For(lp.loop_var, lp.min, lp.extent, "serial", s)
        nests.append(s)
    return seq(*nests)


def _same(a: BufferLoad, b: BufferLoad, ana: Analyzer) -> bool:
    return isinstance(ana.simplify(_c.sub(a.indices[0], b.indices[0])), IntImm) and \
        ana.simplify(_c.sub(a.indices[0], b.indices[0])).value == 0  # type: ignore[union-attr]
