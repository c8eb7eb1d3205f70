"""The expression simplifier: integer index arithmetic goes through canonical sums
(`canonical.py`); everything else is a short list of bound-checked rewrite rules.

Every rule is an exact identity, or is guarded by a proof from constant bounds (or, with
symbolic loop extents, from interval bounds); floats are only constant-folded, never
reassociated. The mutator memoizes by node identity, so shared subtrees are simplified once.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ..expr import dtype as dt
from ..expr import nodes as n
from ..expr.construct import truncdiv_int, truncmod_int
from ..expr.functor import ExprMutator, ExprVisitor
from ..expr.numeric import fmax, fmin
from ..expr.structural import structural_equal
from .bound import Pair, b_intersect
from .canonical import Canon, Sum, expr_key, s_add, s_scale
from .fold import (
    CMP_FOLD,
    IMM,
    NEGATE,
    bool_const,
    cast_value,
    const_value,
    decide_bounds,
    fold_float,
    fold_int,
    is_index,
    lanes_of,
    wrap_int,
    zero_of,
)

if TYPE_CHECKING:
    from .analyzer import Analyzer


class _CountUses(ExprVisitor):
    def __init__(self, var: n.Var):
        self.var, self.count = var, 0

    def visit_Var(self, v: n.Var) -> None:
        if v is self.var:
            self.count += 1


class Simplifier(ExprMutator):
    """One simplification run; create a new one whenever the analyzer's knowledge changes."""

    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.canon = Canon(ana)
        self.memo: dict[int, tuple[n.PrimExpr, n.PrimExpr]] = {}
        self.sums: dict[int, tuple[n.PrimExpr, Sum]] = {}
        self.refined: dict[Hashable, Pair] = {}

    def visit(self, node: Any) -> Any:
        hit = self.memo.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        r = self._method(node)(self, node)
        self.memo[id(node)] = (node, r)
        if r is not node:
            self.memo[id(r)] = (r, r)
        return r

    def visit_Var(self, v: n.Var) -> n.PrimExpr:
        b = self.ana._var_bounds.get(v)
        if b is not None and b[0] == b[1] and not dt.is_float(v.dtype):
            return n.IntImm(int(b[0]), v.dtype)
        val = self.ana._var_values.get(v)
        if val is not None:
            return self.visit(val)
        return v

    visit_SizeVar = visit_Var

    # canonical sums --------------------------------------------------------------------
    def sum_of(self, e: n.PrimExpr) -> Sum:
        hit = self.sums.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        t = type(e)
        if t is n.IntImm:
            s = Sum.of_const(e.value, e.dtype)
        else:
            if t in (n.Add, n.Sub, n.Mul, n.FloorDiv, n.FloorMod):
                r = self.visit(e)
                hit = self.sums.get(id(r))
                if hit is not None and hit[0] is r:
                    return hit[1]
                e = r
            s = Sum.of_atom(e, e.dtype) if type(e) is not n.IntImm else Sum.of_const(
                e.value, e.dtype)
        self.sums[id(e)] = (e, s)
        return s

    def emit(self, s: Sum) -> n.PrimExpr:
        s = self.canon.merge(s)
        e = self.canon.to_expr(s)
        self.sums[id(e)] = (e, s)
        self.memo[id(e)] = (e, e)
        return e

    def bound(self, s: Sum) -> Pair:
        """Constant bounds of a sum, tightened by symbolic loop ranges when there are any."""
        b = self.canon.bound_sum(s)
        if self.ana._var_ranges and not self.ana._in_symbolic and s.terms:
            k = s.key()
            r = self.refined.get(k)
            if r is None:
                r = self.ana._symbolic_bound(self.canon.to_expr(s))
                self.refined[k] = r
            b = b_intersect(b, r)
        return b

    def _bin(self, t: type, x: n.PrimExpr, y: n.PrimExpr) -> n.PrimExpr:
        return self.visit(t(x, y))

    # arithmetic ------------------------------------------------------------------------
    def visit_Add(self, e: n.Add) -> n.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index(a.dtype):
            return self.emit(s_add(self.sum_of(a), self.sum_of(b)))
        return self._arith(e, a, b)

    def visit_Sub(self, e: n.Sub) -> n.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index(a.dtype):
            return self.emit(s_add(self.sum_of(a), self.sum_of(b), -1))
        return self._arith(e, a, b)

    def visit_Mul(self, e: n.Mul) -> n.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index(a.dtype):
            return self.emit(self.canon.mul(self.sum_of(a), self.sum_of(b)))
        return self._arith(e, a, b)

    def visit_FloorDiv(self, e: n.FloorDiv) -> n.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index(a.dtype):
            return self._floordivmod(e, a, b, True)
        return self._arith(e, a, b)

    def visit_FloorMod(self, e: n.FloorMod) -> n.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if is_index(a.dtype):
            return self._floordivmod(e, a, b, False)
        return self._arith(e, a, b)

    def _floordivmod(self, e: Any, a: n.PrimExpr, b: n.PrimExpr, div: bool) -> n.PrimExpr:
        canon = self.canon
        if type(b) is n.IntImm:
            c = b.value
            if c == 0:
                return self._rebuild(e, a, b)
            sa = self.sum_of(a)
            if div:
                return self.emit(canon.floordiv(sa if c > 0 else s_scale(sa, -1), abs(c)))
            if c > 0:
                return self.emit(canon.floormod(sa, c))
            return self.emit(s_scale(canon.floormod(s_scale(sa, -1), -c), -1))
        sa, sb = self.sum_of(a), self.sum_of(b)
        zero = n.IntImm(0, a.dtype)
        if sa.is_const() and sa.const == 0:
            return zero
        if sa.key() == sb.key():  # x // x == 1, x % x == 0 (x != 0 where defined)
            return n.IntImm(1, a.dtype) if div else zero
        ba, bb = canon.bound_sum(sa), canon.bound_sum(sb)
        if ba[0] >= 0 and bb[0] >= 1 and self.bound(s_add(sa, sb, -1))[1] < 0:
            return zero if div else a
        return self._rebuild(e, a, b)

    def visit_Div(self, e: n.Div) -> n.PrimExpr:
        return self._trunc(e, True)

    def visit_Mod(self, e: n.Mod) -> n.PrimExpr:
        return self._trunc(e, False)

    def _trunc(self, e: Any, div: bool) -> n.PrimExpr:
        """Truncating division: rewritten to floor division when signs are known."""
        a, b = self.visit(e.a), self.visit(e.b)
        if not is_index(a.dtype):
            return self._arith(e, a, b)
        if type(a) is n.IntImm and type(b) is n.IntImm and b.value != 0:
            f = truncdiv_int if div else truncmod_int
            return n.IntImm(f(a.value, b.value), a.dtype)
        sa = self.sum_of(a)
        ba = self.canon.bound_sum(sa)
        if type(b) is n.IntImm and b.value != 0:
            c = abs(b.value)
            canon = self.canon
            if ba[0] >= 0:
                r = canon.floordiv(sa, c) if div else canon.floormod(sa, c)
                return self.emit(s_scale(r, -1) if div and b.value < 0 else r)
            if ba[1] <= 0:
                neg = s_scale(sa, -1)
                r = canon.floordiv(neg, c) if div else canon.floormod(neg, c)
                return self.emit(r if div and b.value < 0 else s_scale(r, -1))
            return self._rebuild(e, a, b)
        bb = self.canon.bound_sum(self.sum_of(b))
        if ba[0] >= 0 and bb[0] >= 1:
            return self._floordivmod(n.FloorDiv(a, b) if div else n.FloorMod(a, b), a, b, div)
        return self._rebuild(e, a, b)

    def _rebuild(self, e: Any, a: n.PrimExpr, b: n.PrimExpr) -> n.PrimExpr:
        if a is e.a and b is e.b:
            return e
        return type(e)(a, b)

    def _arith(self, e: Any, a: n.PrimExpr, b: n.PrimExpr) -> n.PrimExpr:
        """Non-index arithmetic: vector forms, constant folding, otherwise structure kept."""
        t = type(e)
        if lanes_of(a.dtype) > 1:
            r = self._vector_arith(t, a, b)
            if r is not None:
                return r
        ta, tb = type(a), type(b)
        if ta is n.FloatImm and tb is n.FloatImm:
            v = fold_float(t, a.value, b.value, a.dtype)
            if v is not None:
                return n.FloatImm(v, a.dtype)
        elif ta is n.IntImm and tb is n.IntImm and not dt.is_bool(a.dtype):
            v = fold_int(t, a.value, b.value)
            if v is not None:
                return n.IntImm(wrap_int(v, a.dtype), a.dtype)
        return self._rebuild(e, a, b)

    def _ramp(self, base: n.PrimExpr, stride: n.PrimExpr, lanes: int) -> n.PrimExpr:
        if type(stride) is n.IntImm and stride.value == 0:
            return n.Broadcast(base, lanes)
        return n.Ramp(base, stride, lanes)

    def _vector_arith(self, t: type, a: n.PrimExpr, b: n.PrimExpr) -> n.PrimExpr | None:
        ta, tb = type(a), type(b)
        bin_ = self._bin
        if ta is n.Broadcast and tb is n.Broadcast:
            return n.Broadcast(bin_(t, a.value, b.value), a.lanes)
        if t is n.Add or t is n.Sub:
            if ta is n.Ramp and tb is n.Broadcast:
                return self._ramp(bin_(t, a.base, b.value), a.stride, a.lanes)
            if ta is n.Broadcast and tb is n.Ramp:
                stride = b.stride if t is n.Add else bin_(n.Sub, zero_of(b.stride.dtype), b.stride)
                return self._ramp(bin_(t, a.value, b.base), stride, a.lanes)
            if ta is n.Ramp and tb is n.Ramp:
                return self._ramp(bin_(t, a.base, b.base), bin_(t, a.stride, b.stride), a.lanes)
        if t is n.Mul:
            if ta is n.Broadcast and tb is n.Ramp:
                a, b, ta, tb = b, a, tb, ta
            if ta is n.Ramp and tb is n.Broadcast:
                return self._ramp(bin_(t, a.base, b.value), bin_(t, a.stride, b.value), a.lanes)
        if (t is n.FloorDiv or t is n.FloorMod) and ta is n.Ramp and tb is n.Broadcast:
            return self._ramp_divmod(t, a, b.value)
        return None

    def _ramp_divmod(self, t: type, r: n.Ramp, c: n.PrimExpr) -> n.PrimExpr | None:
        """`ramp(b, s, n) // c` and `% c` when every lane provably shares b's quotient
        (or the stride is a multiple of c)."""
        if type(c) is not n.IntImm or c.value <= 0 or type(r.stride) is not n.IntImm:
            return None
        if not is_index(r.base.dtype):
            return None
        cv, s, lanes = c.value, r.stride.value, r.lanes
        if s % cv == 0:
            if t is n.FloorDiv:
                return self._ramp(self._bin(n.FloorDiv, r.base, c),
                                  n.IntImm(s // cv, c.dtype), lanes)
            return n.Broadcast(self._bin(n.FloorMod, r.base, c), lanes)
        span = s * (lanes - 1)
        m = self._bin(n.FloorMod, r.base, c)
        lo, hi = self.canon.bound_sum(self.sum_of(m))
        if not (lo + min(0, span) >= 0 and hi + max(0, span) < cv):
            ms = self.ana.modular_set(r.base)
            if ms.coeff % cv != 0:
                return None
            m0 = ms.base % cv
            if not (m0 + min(0, span) >= 0 and m0 + max(0, span) < cv):
                return None
            m = n.IntImm(m0, c.dtype)
        if t is n.FloorDiv:
            return n.Broadcast(self._bin(n.FloorDiv, r.base, c), lanes)
        return self._ramp(m, r.stride, lanes)

    # min / max ------------------------------------------------------------------------
    def visit_Min(self, e: n.Min) -> n.PrimExpr:
        return self._minmax(n.Min, e, self.visit(e.a), self.visit(e.b))

    def visit_Max(self, e: n.Max) -> n.PrimExpr:
        return self._minmax(n.Max, e, self.visit(e.a), self.visit(e.b))

    def _minmax(self, t: type, e: Any, a: n.PrimExpr, b: n.PrimExpr) -> n.PrimExpr:
        is_min = t is n.Min
        if type(a) in IMM and type(b) in IMM:
            pick = fmin if is_min else fmax  # NaN-propagating for floats (expr.numeric)
            return a if pick(a.value, b.value) is a.value else b
        if structural_equal(a, b):
            return a
        if not is_index(a.dtype):
            if type(a) is n.Broadcast and type(b) is n.Broadcast:
                return n.Broadcast(self._minmax(t, None, a.value, b.value), a.lanes)
            return t(a, b) if e is None or a is not e.a or b is not e.b else e
        sa, sb = self.sum_of(a), self.sum_of(b)
        lo, hi = self.bound(s_add(sa, sb, -1))
        if hi <= 0:
            return a if is_min else b
        if lo >= 0:
            return b if is_min else a
        other = n.Max if is_min else n.Min
        # min(x, max(x, y)) -> x ; max(x, min(x, y)) -> x (and mirrored)
        for x, y in ((a, b), (b, a)):
            if type(y) is other and (structural_equal(y.a, x) or structural_equal(y.b, x)):
                return x
        # min(min(x, c1), c2) -> min(x, min(c1, c2))
        if type(a) is t and type(a.b) is n.IntImm and type(b) is n.IntImm:
            return self._minmax(t, None, a.a, self._minmax(t, None, a.b, b))
        # min(x + c, y + c) -> min(x, y) + c for the common terms c
        common = {k: v for k, v in sa.terms.items() if sb.terms.get(k, (None, 0))[1] == v[1]}
        cconst = sa.const if sa.const == sb.const else 0
        if common or cconst:
            cs = Sum(common, cconst, sa.dtype)
            inner = self._minmax(t, None, self.emit(s_add(sa, cs, -1)),
                                 self.emit(s_add(sb, cs, -1)))
            return self.emit(s_add(self.sum_of(inner), cs))
        if e is not None and a is e.a and b is e.b:
            return e
        return t(a, b)

    # comparisons and logic ---------------------------------------------------------------
    def visit_LT(self, e: n.LT) -> n.PrimExpr:
        return self._cmp(e)

    visit_LE = visit_GT = visit_GE = visit_EQ = visit_NE = visit_LT

    def _cmp(self, e: Any, t: type | None = None) -> n.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        return self._cmp_ab(t or type(e), a, b, e)

    def _cmp_ab(self, t: type, a: n.PrimExpr, b: n.PrimExpr, e: Any = None) -> n.PrimExpr:
        ta, tb = type(a), type(b)
        if ta in IMM and tb in IMM:
            return bool_const(CMP_FOLD[t](a.value, b.value))
        lanes = lanes_of(a.dtype)
        if lanes > 1:
            return self._vec_cmp(t, a, b, e)
        if is_index(a.dtype):
            sa, sb = self.sum_of(a), self.sum_of(b)
            d = s_add(sa, sb, -1)
            if not d.terms:
                return bool_const(CMP_FOLD[t](d.const, 0))
            v = self._decide(t, d)
            if v is not None:
                return bool_const(v)
            common = {k: x for k, x in sa.terms.items() if sb.terms.get(k, (None, 0))[1] == x[1]}
            cconst = sa.const if sa.const and sb.const and len(common) < len(sa.terms) else 0
            if common or cconst:
                cs = Sum(common, cconst, sa.dtype)
                a, b = self.emit(s_add(sa, cs, -1)), self.emit(s_add(sb, cs, -1))
        if e is None or a is not e.a or b is not e.b or type(e) is not t:
            e = t(a, b)
        facts = self.ana._facts
        if facts:
            v = facts.get(expr_key(e))
            if v is not None:
                return bool_const(v)
        return e

    def _decide(self, t: type, d: Sum) -> bool | None:
        """Truth of `d <op> 0` when the bounds (or divisibility) of d decide it."""
        lo, hi = self.bound(d)
        v = decide_bounds(t, lo, hi)
        if v is None and (t is n.EQ or t is n.NE):
            g = 0
            for _, c in d.terms.values():
                g = math.gcd(g, c)
            if g and d.const % g != 0:
                return t is n.NE
        return v

    def _lane_range(self, v: n.PrimExpr) -> tuple[n.PrimExpr, int] | None:
        if type(v) is n.Broadcast:
            return v.value, 0
        if type(v) is n.Ramp and type(v.stride) is n.IntImm:
            return v.base, v.stride.value
        return None

    def _vec_cmp(self, t: type, a: n.PrimExpr, b: n.PrimExpr, e: Any) -> n.PrimExpr:
        lanes = lanes_of(a.dtype)
        if type(a) is n.Broadcast and type(b) is n.Broadcast:
            return n.Broadcast(self._cmp_ab(t, a.value, b.value), lanes)
        ra, rb = self._lane_range(a), self._lane_range(b)
        if ra is not None and rb is not None and is_index(ra[0].dtype):
            d0 = s_add(self.sum_of(ra[0]), self.sum_of(rb[0]), -1)
            span = (ra[1] - rb[1]) * (lanes - 1)
            lo, hi = self.bound(d0)
            v = decide_bounds(t, lo + min(0, span), hi + max(0, span))
            if v is not None:
                return bool_const(v, lanes)
        if e is not None and a is e.a and b is e.b and type(e) is t:
            return e
        return t(a, b)

    def visit_And(self, e: n.And) -> n.PrimExpr:
        return self._logic(e, True)

    def visit_Or(self, e: n.Or) -> n.PrimExpr:
        return self._logic(e, False)

    def _logic(self, e: Any, is_and: bool) -> n.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        lanes = lanes_of(a.dtype)
        for x, y in ((a, b), (b, a)):
            v = const_value(x)
            if v is not None:
                # and: True is neutral, False absorbs; or: the reverse
                return y if bool(v) == is_and else bool_const(not is_and, lanes)
        if structural_equal(a, b):
            return a
        if (type(a) is n.Not and structural_equal(a.a, b)) or (
                type(b) is n.Not and structural_equal(b.a, a)):
            return bool_const(not is_and, lanes)
        if self._negations(a, b):
            return bool_const(not is_and, lanes)
        return self._rebuild(e, a, b)

    def _negations(self, a: n.PrimExpr, b: n.PrimExpr) -> bool:
        if type(a) in NEGATE and NEGATE[type(a)] is type(b) and not dt.is_float(a.a.dtype):
            return structural_equal(a.a, b.a) and structural_equal(a.b, b.b)
        return False

    def visit_Not(self, e: n.Not) -> n.PrimExpr:
        a = self.visit(e.a)
        v = const_value(a)
        if v is not None:
            return bool_const(not v, lanes_of(a.dtype))
        if type(a) is n.Not:
            return a.a
        if type(a) in NEGATE and not dt.is_float(a.a.dtype):
            return self._cmp_ab(NEGATE[type(a)], a.a, a.b)
        return e if a is e.a else n.Not(a)

    # other nodes --------------------------------------------------------------------------
    def visit_Select(self, e: n.Select) -> n.PrimExpr:
        c = self.visit(e.condition)
        v = const_value(c)
        if v is not None:
            return self.visit(e.true_value if v else e.false_value)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        if structural_equal(t, f):
            return t
        if type(c) is n.Broadcast and type(t) is n.Broadcast and type(f) is n.Broadcast:
            return n.Broadcast(n.Select(c.value, t.value, f.value), t.lanes)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return n.Select(c, t, f)

    def visit_Cast(self, e: n.Cast) -> n.PrimExpr:
        v = self.visit(e.value)
        if v.dtype == e.dtype:
            return v
        if type(v) in IMM and lanes_of(e.dtype) == 1:
            try:
                r = cast_value(v.value, e.dtype)
            except (ValueError, OverflowError):
                return n.Cast(e.dtype, v)
            if dt.is_float(e.dtype):
                return n.FloatImm(r, e.dtype)
            return n.IntImm(int(r), e.dtype)
        if type(v) is n.Broadcast:
            return n.Broadcast(self.visit(n.Cast(dt.element(e.dtype), v.value)), v.lanes)
        return e if v is e.value else n.Cast(e.dtype, v)

    def visit_Ramp(self, e: n.Ramp) -> n.PrimExpr:
        base, stride = self.visit(e.base), self.visit(e.stride)
        if type(stride) is n.IntImm and stride.value == 0:
            return n.Broadcast(base, e.lanes)
        if base is e.base and stride is e.stride:
            return e
        return n.Ramp(base, stride, e.lanes)

    def visit_Broadcast(self, e: n.Broadcast) -> n.PrimExpr:
        v = self.visit(e.value)
        if e.lanes == 1:
            return v
        return e if v is e.value else n.Broadcast(v, e.lanes)

    def visit_Let(self, e: n.Let) -> n.PrimExpr:
        value = self.visit(e.value)
        cheap = type(value) in (n.IntImm, n.FloatImm, n.Var, n.SizeVar)
        if not cheap:
            cu = _CountUses(e.var)
            cu.visit(e.body)
            cheap = cu.count <= 1
        if cheap:
            from ..expr.functor import substitute

            return self.visit(substitute(e.body, {e.var: value}))
        with self.ana._scoped_bound(e.var, self.ana._bound_expr(value)):
            body = Simplifier(self.ana).visit(e.body)
        cu = _CountUses(e.var)
        cu.visit(body)
        if cu.count <= 1:  # simplification removed the other uses
            from ..expr.functor import substitute

            return self.visit(substitute(body, {e.var: value}))
        if value is e.value and body is e.body:
            return e
        return n.Let(e.var, value, body)

    def visit_Call(self, e: n.Call) -> n.PrimExpr:
        args = tuple(self.visit(a) for a in e.args)
        if e.op == "likely" and len(args) == 1 and const_value(args[0]) is not None:
            return args[0]
        if e.op == "runtime_check" and len(args) == 3 and const_value(args[1]) in (1, True):
            return args[0]  # proven to hold
        if e.op == "if_then_else" and len(args) == 3:
            v = const_value(args[0])
            if v is not None:
                return args[1] if v else args[2]
            if structural_equal(args[1], args[2]):
                return args[1]
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return n.Call(e.dtype, e.op, args)

