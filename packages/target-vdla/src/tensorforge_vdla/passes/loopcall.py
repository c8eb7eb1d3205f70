"""The folded form of a micro-coded instruction in the loop IR, and its parser.

`vdla.gemm_loop(reset, lp0, lp1, <f0, f1 per operand>, <address per operand>, n_uops,
<one offset per operand, per micro-op>)` and `vdla.alu_loop(op, use_imm, imm, lp0, lp1, ...)`:
operands are (acc, inp, wgt) for GEMM and (dst, src) for the ALU; factors and micro-op offsets
are in elements relative to the operand addresses (code generation turns them into tiles)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tensorforge.expr import Call, IntImm, PrimExpr
from tensorforge.expr import construct as _c

from ..errors import VDLACompileError

HEAD = {"vdla.gemm_loop": ("reset",), "vdla.alu_loop": ("op", "use_imm", "imm")}
OPERANDS = {"vdla.gemm_loop": ("acc", "inp", "wgt"), "vdla.alu_loop": ("dst", "src")}


@dataclass(frozen=True)
class LoopCall:
    kind: str
    head: tuple[int, ...]
    lp: tuple[int, int]
    factors: tuple[tuple[int, int], ...]  # per operand
    addrs: tuple[PrimExpr, ...]  # address_of(...) per operand
    uops: tuple[tuple[int, ...], ...]  # per micro-op, one offset per operand

    def to_call(self) -> PrimExpr:
        args: list[object] = [*self.head, *self.lp]
        for f0, f1 in self.factors:
            args += [f0, f1]
        args += [*self.addrs, len(self.uops)]
        for u in self.uops:
            args += list(u)
        return _c.call("int32", self.kind, *args)


def parse(call: Call) -> LoopCall:
    names = OPERANDS.get(call.op)
    if names is None:
        raise VDLACompileError(f"not a folded VDLA instruction: {call}")
    nh, no = len(HEAD[call.op]), len(names)
    a = list(call.args)

    def ints(xs: Sequence[PrimExpr]) -> tuple[int, ...]:
        if not all(isinstance(x, IntImm) for x in xs):
            raise VDLACompileError(f"{call.op}: expected constants, got {list(map(str, xs))}")
        return tuple(x.value for x in xs)  # type: ignore[union-attr]

    head = ints(a[:nh])
    lp = ints(a[nh:nh + 2])
    pos = nh + 2
    fl = ints(a[pos:pos + 2 * no])
    pos += 2 * no
    addrs = tuple(a[pos:pos + no])
    pos += no
    (n,) = ints(a[pos:pos + 1])
    flat = ints(a[pos + 1:])
    if len(flat) != n * no:
        raise VDLACompileError(f"{call.op}: {n} micro-ops need {n * no} offsets, got {len(flat)}")
    uops = tuple(flat[i * no:(i + 1) * no] for i in range(n))
    factors = tuple((fl[2 * i], fl[2 * i + 1]) for i in range(no))
    return LoopCall(call.op, head, (lp[0], lp[1]), factors, addrs, uops)
