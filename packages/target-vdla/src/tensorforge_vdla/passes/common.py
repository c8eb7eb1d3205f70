"""What the VDLA loop-IR passes share: perfect loop nests, constant linear coefficients,
operand addresses (`address_of(buffer[index])`) and the on-chip scopes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorforge.arith import Analyzer, detect_linear_equation
from tensorforge.expr import BufferLoad, Call, IntImm, PrimExpr, Var
from tensorforge.expr import construct as _c
from tensorforge.tir.stmt import AttrStmt, For, Stmt

from ..errors import VDLACompileError
from ..isa import MemId

#: on-chip scopes and the memory each one is
SCOPE_MEM = {"inp_buffer": MemId.INP, "wgt_buffer": MemId.WGT, "acc_buffer": MemId.ACC}


def perfect_nest(s: Stmt) -> tuple[list[For], Stmt]:
    """The chain of loops each directly holding the next, and the statement inside them."""
    loops: list[For] = []
    while isinstance(s, For):
        loops.append(s)
        s = s.body
    return loops, s


def const_extent(loop: For, what: str) -> int:
    if not isinstance(loop.extent, IntImm) or not isinstance(loop.min, IntImm):
        raise VDLACompileError(f"{what}: loop {loop.loop_var.name} needs constant bounds, has "
                               f"min {loop.min} extent {loop.extent}")
    if loop.min.value != 0:
        raise VDLACompileError(f"{what}: loop {loop.loop_var.name} must start at 0")
    return loop.extent.value


def linear(expr: PrimExpr, vars: Sequence[Var], what: str, ana: Analyzer | None = None
           ) -> tuple[list[int], PrimExpr]:
    """(constant coefficient of each var, the rest) of `expr`, or a VDLACompileError."""
    got = detect_linear_equation(expr, list(vars), ana)
    if got is None:
        raise VDLACompileError(f"{what}: index {expr} is not linear in the loops "
                               f"{', '.join(v.name for v in vars)}")
    coeffs = []
    for v, c in zip(vars, got[:-1]):
        if not isinstance(c, IntImm):
            raise VDLACompileError(f"{what}: index {expr} moves by {c} per step of {v.name}; "
                                   "VDLA needs constant strides")
        coeffs.append(c.value)
    return coeffs, got[-1]


def address(arg: PrimExpr, what: str) -> BufferLoad:
    """The `buffer[index]` of an `address_of(...)` operand."""
    if isinstance(arg, Call) and arg.op == "address_of" and isinstance(arg.args[0], BufferLoad):
        return arg.args[0]
    raise VDLACompileError(f"{what}: operand {arg} is not address_of(buffer[index])")


def address_of(load: BufferLoad, index: PrimExpr) -> PrimExpr:
    return _c.call("handle", "address_of", BufferLoad(load.buffer, (index,)))


def is_call(s: Stmt, *names: str) -> Any:
    """The call of an `Evaluate(vdla.<name>(...))` statement, else None."""
    from tensorforge.tir.stmt import Evaluate

    if isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op in names:
        return s.value
    return None


def strip_attrs(s: Stmt, key: str) -> Stmt:
    while isinstance(s, AttrStmt) and s.key == key:
        s = s.body
    return s


def substitute_zero(expr: PrimExpr, vars: Sequence[Var], ana: Analyzer) -> PrimExpr:
    from tensorforge.expr import substitute

    return ana.simplify(substitute(expr, {v: _c.const(0, v.dtype) for v in vars}))
