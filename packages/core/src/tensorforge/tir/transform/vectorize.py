"""Vectorize: a `vectorized` loop of constant extent N becomes one N-lane body.

The loop variable becomes `Ramp(0, 1, N)`; affine index arithmetic keeps ramps (so contiguous
accesses turn into vector loads/stores), other scalars are broadcast. A body that cannot be
widened safely (a condition that differs per lane, a store of a vector into one element, an
allocation, a loop bound that depends on the lane) stays a scalar loop: correctness first."""

from __future__ import annotations

from typing import Any

from ...expr import (
    Add,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    ExprMutator,
    IntImm,
    Let,
    Mul,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
    uses_var,
)
from ...expr import dtype as dt
from ...expr.nodes import BinaryOp
from ..stmt import Allocate, BufferStore, For, IfThenElse, LetStmt, PrimFunc, Stmt


class _CannotVectorize(Exception):
    pass


def _lanes(e: PrimExpr) -> int:
    return dt.lanes(e.dtype)


def _bcast(e: PrimExpr, n: int) -> PrimExpr:
    return e if _lanes(e) == n else Broadcast(e, n)


class _Vectorizer(ExprMutator):
    def __init__(self, var: Var, lanes: int, base: PrimExpr):
        self.var = var
        self.n = lanes
        self.ramp = Ramp(base, IntImm(1, var.dtype), lanes)
        self.let_map: dict[Var, Var] = {}

    def visit_Var(self, v: Var) -> PrimExpr:
        if v is self.var:
            return self.ramp
        return self.let_map.get(v, v)

    def _binary(self, e: Any, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        la, lb = _lanes(a), _lanes(b)
        if la == 1 and lb == 1:
            return e if a is e.a and b is e.b else type(e)(a, b)
        t = type(e)
        if t is Add or t is Sub:
            if isinstance(a, Ramp) and lb == 1:
                return Ramp(t(a.base, b), a.stride, a.lanes)
            if isinstance(b, Ramp) and la == 1:
                if t is Add:
                    return Ramp(Add(a, b.base), b.stride, b.lanes)
                return Ramp(Sub(a, b.base), Sub(IntImm(0, b.stride.dtype), b.stride), b.lanes)
        if t is Mul and not dt.is_float(a.dtype):
            if isinstance(a, Ramp) and lb == 1:
                return Ramp(Mul(a.base, b), Mul(a.stride, b), a.lanes)
            if isinstance(b, Ramp) and la == 1:
                return Ramp(Mul(b.base, a), Mul(b.stride, a), b.lanes)
        return t(_bcast(a, self.n), _bcast(b, self.n))

    def generic_visit(self, node: Any) -> Any:
        if isinstance(node, (BinaryOp, CmpOp)):
            return self._binary(node, self.visit(node.a), self.visit(node.b))
        return super().generic_visit(node)

    def visit_Not(self, e: Not) -> PrimExpr:
        return Not(self.visit(e.a))

    def visit_Select(self, e: Select) -> PrimExpr:
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if max(_lanes(c), _lanes(t), _lanes(f)) == 1:
            return Select(c, t, f)
        return Select(_bcast(c, self.n), _bcast(t, self.n), _bcast(f, self.n))

    def visit_Cast(self, e: Cast) -> PrimExpr:
        v = self.visit(e.value)
        return Cast(dt.with_lanes(e.dtype, _lanes(v)), v)

    def visit_Call(self, e: Call) -> PrimExpr:
        if e.op == "runtime_check":  # (value, condition, description): widen the first two
            v, ok = self.visit(e.args[0]), self.visit(e.args[1])
            n = max(_lanes(v), _lanes(ok))
            if n == 1:
                return Call(e.dtype, e.op, (v, ok, e.args[2]))
            return Call(dt.with_lanes(e.dtype, n), e.op, (_bcast(v, n), _bcast(ok, n), e.args[2]))
        args = [self.visit(a) for a in e.args]
        n = max(_lanes(a) for a in args) if args else 1
        if n == 1:
            return Call(e.dtype, e.op, tuple(args))
        return Call(dt.with_lanes(e.dtype, n), e.op, tuple(_bcast(a, n) for a in args))

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        return BufferLoad(e.buffer, idx)

    def visit_Let(self, e: Let) -> PrimExpr:
        v = self.visit(e.value)
        if _lanes(v) > 1:
            nv = Var(e.var.name, v.dtype)
            self.let_map[e.var] = nv
            return Let(nv, v, self.visit(e.body))
        return Let(e.var, v, self.visit(e.body))

    def visit_Ramp(self, e: Ramp) -> PrimExpr:
        raise _CannotVectorize

    def visit_Broadcast(self, e: Broadcast) -> PrimExpr:
        raise _CannotVectorize

    # statements -------------------------------------------------------------------------
    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        idx = tuple(self.visit(i) for i in s.indices)
        val = self.visit(s.value)
        il = max(_lanes(i) for i in idx) if idx else 1
        if il == 1:
            if _lanes(val) > 1 or uses_var(s, lambda v: v is self.var):
                raise _CannotVectorize  # every lane would write the same element
            return BufferStore(s.buffer, val, idx)
        return BufferStore(s.buffer, _bcast(val, il), idx)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        if uses_var(s.condition, lambda v: v is self.var):
            raise _CannotVectorize
        return super().generic_visit(s)

    def visit_For(self, s: For) -> Stmt:
        if uses_var(s.min, lambda v: v is self.var) or uses_var(
            s.extent, lambda v: v is self.var
        ):
            raise _CannotVectorize
        return For(s.loop_var, s.min, s.extent, s.kind, self.visit(s.body), s.thread_tag,
                   s.annotations)

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        v = self.visit(s.value)
        if _lanes(v) > 1:
            nv = Var(s.var.name, v.dtype)
            self.let_map[s.var] = nv
            return LetStmt(nv, v, self.visit(s.body))
        return LetStmt(s.var, v, self.visit(s.body))

    def visit_Allocate(self, s: Allocate) -> Stmt:
        raise _CannotVectorize


class _VectorizeLoops(ExprMutator):
    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if s.kind != "vectorized":
            if body is s.body:
                return s
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.thread_tag, s.annotations)
        if not isinstance(s.extent, IntImm) or s.extent.value <= 1:
            return For(s.loop_var, s.min, s.extent, "serial", body, s.thread_tag)
        n = s.extent.value
        try:
            return _Vectorizer(s.loop_var, n, s.min).visit(body)
        except _CannotVectorize:
            return For(s.loop_var, s.min, s.extent, "serial", body, s.thread_tag)


def vectorize(func: PrimFunc) -> PrimFunc:
    return func.with_body(_VectorizeLoops().visit(func.body))
