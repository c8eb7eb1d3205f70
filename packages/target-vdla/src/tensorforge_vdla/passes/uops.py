"""fold_uops: a loop nest around one GEMM or ALU call becomes one micro-coded instruction.

The two loops with the largest extents become the instruction's two hardware loops (their
strides become the factors); the remaining loops are enumerated into the micro-op kernel, one
micro-op per iteration (offsets relative to the operand addresses). The order is free: GEMM
accumulation and element-wise ALU steps commute across the nest's iterations. A kernel larger
than `MAX_UOPS` keeps its outermost loops as host loops, one instruction per iteration."""

from __future__ import annotations

import itertools

from tensorforge.arith import Analyzer
from tensorforge.expr import Call, ExprMutator, PrimExpr, substitute
from tensorforge.expr import construct as _c
from tensorforge.tir.stmt import Evaluate, For, PrimFunc, Stmt

from .common import address, address_of, const_extent, is_call, linear, perfect_nest
from .loopcall import LoopCall

MAX_UOPS = 1024
_FOLDABLE = ("vdla.gemm", "vdla.gemm_reset", "vdla.alu")


def fold_uops(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Fold(func.name).visit(func.body))


class _Fold(ExprMutator):
    def __init__(self, name: str):
        self.name = name

    def visit_For(self, s: For) -> Stmt:
        loops, leaf = perfect_nest(s)
        call = is_call(leaf, *_FOLDABLE)
        if call is None:
            return For(s.loop_var, s.min, s.extent, s.kind, self.visit(s.body), s.thread_tag,
                       s.annotations)
        return fold(loops, call, f"{self.name}: {call.op}")

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        call = is_call(s, *_FOLDABLE)
        return fold([], call, f"{self.name}: {call.op}") if call is not None else s


def _operands(call: Call) -> tuple[str, tuple[int, ...], list[PrimExpr]]:
    if call.op == "vdla.gemm":
        return "vdla.gemm_loop", (0,), list(call.args)
    if call.op == "vdla.gemm_reset":
        return "vdla.gemm_loop", (1,), [call.args[0]] * 3
    op, use_imm, imm, dst, src = call.args
    return "vdla.alu_loop", tuple(x.value for x in (op, use_imm, imm)), [dst, src]  # type: ignore[attr-defined]


def fold(loops: list[For], call: Call, what: str) -> Stmt:
    kind, head, addrs = _operands(call)
    loads = [address(a, what) for a in addrs]
    ana = Analyzer()
    for lp in loops:
        ana.bind(lp.loop_var, (0, const_extent(lp, what)))
    vars_ = [lp.loop_var for lp in loops]
    exts = [lp.extent.value for lp in loops]  # type: ignore[union-attr]
    coefs = [linear(ld.indices[0], vars_, what, ana)[0] for ld in loads]
    live = [i for i, e in enumerate(exts) if e > 1]
    hw = sorted(sorted(live, key=lambda i: -exts[i])[:2])
    rest = [i for i in live if i not in hw]
    host: list[int] = []
    while rest and _prod(exts[i] for i in rest) > MAX_UOPS:
        host.append(rest.pop(0))
    zero = {vars_[i]: _c.const(0, vars_[i].dtype) for i in range(len(loops)) if i not in host}
    bases = [address_of(ld, ana.simplify(substitute(ld.indices[0], zero))) for ld in loads]
    lp = [exts[i] for i in hw] + [1] * (2 - len(hw))
    factors = tuple(
        tuple([c[i] for i in hw] + [0] * (2 - len(hw))) for c in coefs)  # type: ignore[misc]
    uops = []
    for point in itertools.product(*(range(exts[i]) for i in rest)):
        uops.append(tuple(sum(c[i] * p for i, p in zip(rest, point)) for c in coefs))
    out: Stmt = Evaluate(LoopCall(kind, head, (lp[0], lp[1]), factors,  # type: ignore[arg-type]
                                  tuple(bases), tuple(uops)).to_call())
    for i in reversed(host):
        lpn = loops[i]
        out = For(lpn.loop_var, lpn.min, lpn.extent, "serial", out)
    return out


def _prod(xs: object) -> int:
    n = 1
    for x in xs:  # type: ignore[attr-defined]
        n *= x
    return n
