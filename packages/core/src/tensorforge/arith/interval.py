"""Interval sets with symbolic endpoints, for bound inference.

`IntervalSet(min_value, max_value)` is the inclusive range [min, max] of expressions; None
stands for -inf / +inf. `eval_interval(expr, dom_map)` returns a superset of the values `expr`
takes while each variable in `dom_map` ranges over its interval (other variables are fixed,
symbolic). The expression is simplified first, so linear index expressions have every
variable once and the interval is exact for them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..expr import dtype as dt
from ..expr import nodes as n
from ..expr.construct import convert
from .bound import BoundEvaluator

if TYPE_CHECKING:
    from .analyzer import Analyzer

Bound = n.PrimExpr | None  # None: unbounded on that side


@dataclass(frozen=True, slots=True, eq=False)
class IntervalSet:
    """The inclusive interval [min_value, max_value]; None marks an infinite end."""

    min_value: Bound
    max_value: Bound

    @staticmethod
    def everything() -> IntervalSet:
        return IntervalSet(None, None)

    @staticmethod
    def single_point(e: Any) -> IntervalSet:
        e = convert(e)
        return IntervalSet(e, e)

    @staticmethod
    def from_range(rng: Any) -> IntervalSet:
        """From a `Range` (or a (min, extent) pair): [min, min + extent - 1]."""
        if isinstance(rng, tuple):
            rng = n.Range.from_min_extent(*rng)
        from .analyzer import Analyzer

        ana = Analyzer()
        return IntervalSet(rng.min, ana.simplify(rng.min + rng.extent - 1))

    @staticmethod
    def interval(lo: Any, hi: Any) -> IntervalSet:
        return IntervalSet(None if lo is None else convert(lo), None if hi is None else convert(hi))

    def is_everything(self) -> bool:
        return self.min_value is None and self.max_value is None

    def has_lower_bound(self) -> bool:
        return self.min_value is not None

    def has_upper_bound(self) -> bool:
        return self.max_value is not None

    def is_single_point(self) -> bool:
        from ..expr.structural import structural_equal

        return self.min_value is not None and self.max_value is not None and structural_equal(
            self.min_value, self.max_value)

    def extent(self, analyzer: Analyzer | None = None) -> n.PrimExpr | None:
        """max - min + 1, simplified; None when unbounded."""
        if self.min_value is None or self.max_value is None:
            return None
        ana = analyzer or _default()
        return ana.simplify(self.max_value - self.min_value + 1)

    def to_range(self, analyzer: Analyzer | None = None) -> n.Range:
        ext = self.extent(analyzer)
        if ext is None:
            raise ValueError(f"cannot make a Range of the unbounded interval {self}")
        assert self.min_value is not None
        return n.Range(self.min_value, ext)

    def union(self, other: IntervalSet, analyzer: Analyzer | None = None) -> IntervalSet:
        ana = analyzer or _default()
        lo = _combine(self.min_value, other.min_value, n.Min, ana)
        hi = _combine(self.max_value, other.max_value, n.Max, ana)
        return IntervalSet(lo, hi)

    def intersect(self, other: IntervalSet, analyzer: Analyzer | None = None) -> IntervalSet:
        ana = analyzer or _default()
        lo = _pick(self.min_value, other.min_value, n.Max, ana)
        hi = _pick(self.max_value, other.max_value, n.Min, ana)
        return IntervalSet(lo, hi)

    def __str__(self) -> str:
        lo = "-inf" if self.min_value is None else str(self.min_value)
        hi = "+inf" if self.max_value is None else str(self.max_value)
        return f"[{lo}, {hi}]"

    __repr__ = __str__


def _default() -> Analyzer:
    from .analyzer import Analyzer

    return Analyzer()


def _combine(a: Bound, b: Bound, op: type, ana: Analyzer) -> Bound:
    """Union end: any infinite side stays infinite."""
    if a is None or b is None:
        return None
    return ana.simplify(op(a, b))


def _pick(a: Bound, b: Bound, op: type, ana: Analyzer) -> Bound:
    """Intersection end: an infinite side yields to the finite one."""
    if a is None:
        return b
    if b is None:
        return a
    return ana.simplify(op(a, b))


def _num(v: Any, dtype: str) -> Bound:
    if isinstance(v, float) and math.isinf(v):
        return None
    return n.IntImm(int(v), dtype)


class _IntervalEval:
    """Interval arithmetic over an expression tree; a result of None means "the point e"."""

    def __init__(self, dom: Mapping[n.Var, IntervalSet], ana: Analyzer):
        self.dom, self.ana = dom, ana
        self.memo: dict[int, tuple[Any, tuple[Bound, Bound] | None]] = {}

    def __call__(self, e: n.PrimExpr) -> tuple[Bound, Bound] | None:
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = self._eval(e)
        self.memo[id(e)] = (e, r)
        return r

    def ends(self, e: n.PrimExpr) -> tuple[Bound, Bound]:
        r = self(e)
        return (e, e) if r is None else r

    def const_fallback(self, e: n.PrimExpr) -> tuple[Bound, Bound]:
        """Constant bounds with the domain variables ranging over their constant hulls."""
        ev = BoundEvaluator(self.ana)
        for v, iv in self.dom.items():
            lo = ev(iv.min_value)[0] if iv.min_value is not None else -math.inf
            hi = ev(iv.max_value)[1] if iv.max_value is not None else math.inf
            ev.lets[v] = (lo, hi)
        if dt.is_float(e.dtype):
            return None, None
        lo, hi = ev(e)
        d = dt.element(e.dtype)
        return _num(lo, d), _num(hi, d)

    def _eval(self, e: n.PrimExpr) -> tuple[Bound, Bound] | None:
        t = type(e)
        if t is n.Var or t is n.SizeVar:
            iv = self.dom.get(e)
            return None if iv is None else (iv.min_value, iv.max_value)
        if t in (n.IntImm, n.FloatImm, n.StringImm):
            return None
        if t is n.Ramp:
            return _r_ramp(self, e) or self.const_fallback(e)
        kids = [self(c) for c in _children(e)]
        if all(k is None for k in kids):
            return None
        f = _RULES.get(t)
        if f is not None:
            r = f(self, e)
            if r is not None:
                return r
        return self.const_fallback(e)


def _children(e: n.PrimExpr) -> list[n.PrimExpr]:
    from ..expr.functor import child_table

    out: list[n.PrimExpr] = []
    for name, kind in child_table(type(e)):
        v = getattr(e, name)
        if kind == "e" and isinstance(v, n.PrimExpr):
            out.append(v)
        elif kind == "t":
            out.extend(x for x in v if isinstance(x, n.PrimExpr))
    return out


def _add(x: Bound, y: Bound) -> Bound:
    return None if x is None or y is None else n.Add(x, y)


def _sub(x: Bound, y: Bound) -> Bound:
    return None if x is None or y is None else n.Sub(x, y)


def _r_add(s: _IntervalEval, e: n.Add) -> tuple[Bound, Bound]:
    (al, ah), (bl, bh) = s.ends(e.a), s.ends(e.b)
    return _add(al, bl), _add(ah, bh)


def _r_sub(s: _IntervalEval, e: n.Sub) -> tuple[Bound, Bound]:
    (al, ah), (bl, bh) = s.ends(e.a), s.ends(e.b)
    return _sub(al, bh), _sub(ah, bl)


def _sign(s: _IntervalEval, e: n.PrimExpr) -> int:
    """1 if provably >= 0, -1 if provably <= 0, else 0."""
    lo, hi = BoundEvaluator(s.ana)(e)
    return 1 if lo >= 0 else -1 if hi <= 0 else 0


def _scale(s: _IntervalEval, lo: Bound, hi: Bound, k: n.PrimExpr, op: type) -> Any:
    sg = _sign(s, k)
    if sg == 0:
        return None
    if sg < 0:
        lo, hi = hi, lo
    return (None if lo is None else op(lo, k)), (None if hi is None else op(hi, k))


def _r_mul(s: _IntervalEval, e: n.Mul) -> Any:
    ra, rb = s(e.a), s(e.b)
    if rb is None:
        return _scale(s, *s.ends(e.a), e.b, n.Mul)
    if ra is None:
        return _scale(s, *s.ends(e.b), e.a, n.Mul)
    return None


def _r_floordiv(s: _IntervalEval, e: n.FloorDiv) -> Any:
    if s(e.b) is not None or dt.is_float(e.dtype):
        return None
    lo, hi = s.ends(e.a)
    if _sign(s, e.b) > 0 and BoundEvaluator(s.ana)(e.b)[0] >= 1:
        return (None if lo is None else n.FloorDiv(lo, e.b),
                None if hi is None else n.FloorDiv(hi, e.b))
    if BoundEvaluator(s.ana)(e.b)[1] <= -1:
        return (None if hi is None else n.FloorDiv(hi, e.b),
                None if lo is None else n.FloorDiv(lo, e.b))
    return None


def _r_floormod(s: _IntervalEval, e: n.FloorMod) -> Any:
    if s(e.b) is not None or dt.is_float(e.dtype):
        return None
    lo, hi = s.ends(e.a)
    blo, bhi = BoundEvaluator(s.ana)(e.b)
    if blo < 1:
        return None
    zero = n.IntImm(0, e.dtype)
    top = n.Sub(e.b, n.IntImm(1, e.dtype))
    if lo is not None and hi is not None and type(e.b) is n.IntImm:
        ana = s.ana
        ext = ana.simplify(hi - lo)
        if type(ext) is n.IntImm:
            m = ana.simplify(n.FloorMod(lo, e.b))
            mlo, mhi = BoundEvaluator(ana)(m)
            if mlo >= 0 and mhi + ext.value < e.b.value:
                return m, n.Add(m, ext)
    return zero, top


def _r_min(s: _IntervalEval, e: n.Min) -> Any:
    (al, ah), (bl, bh) = s.ends(e.a), s.ends(e.b)
    lo = None if al is None or bl is None else n.Min(al, bl)
    hi = ah if bh is None else bh if ah is None else n.Min(ah, bh)
    return lo, hi


def _r_max(s: _IntervalEval, e: n.Max) -> Any:
    (al, ah), (bl, bh) = s.ends(e.a), s.ends(e.b)
    lo = al if bl is None else bl if al is None else n.Max(al, bl)
    hi = None if ah is None or bh is None else n.Max(ah, bh)
    return lo, hi


def _r_select(s: _IntervalEval, e: n.Select) -> Any:
    (al, ah), (bl, bh) = s.ends(e.true_value), s.ends(e.false_value)
    lo = None if al is None or bl is None else n.Min(al, bl)
    hi = None if ah is None or bh is None else n.Max(ah, bh)
    return lo, hi


def _r_cast(s: _IntervalEval, e: n.Cast) -> Any:
    src = e.value.dtype
    if dt.is_int(e.dtype) and dt.is_int(src) and dt.bits(e.dtype) >= dt.bits(src) >= 32:
        lo, hi = s.ends(e.value)
        return (None if lo is None else n.Cast(e.dtype, lo),
                None if hi is None else n.Cast(e.dtype, hi))
    return None


def _r_ramp(s: _IntervalEval, e: n.Ramp) -> Any:
    """All lanes: base + stride * i for i in [0, lanes)."""
    if type(e.stride) is not n.IntImm:
        return None
    span = e.stride.value * (e.lanes - 1)
    lo, hi = s.ends(e.base)
    dtype = e.stride.dtype
    return _add(lo, n.IntImm(min(0, span), dtype)), _add(hi, n.IntImm(max(0, span), dtype))


def _r_broadcast(s: _IntervalEval, e: n.Broadcast) -> Any:
    return s.ends(e.value)


def _r_let(s: _IntervalEval, e: n.Let) -> Any:
    lo, hi = s.ends(e.value)
    inner = _IntervalEval({**s.dom, e.var: IntervalSet(lo, hi)}, s.ana)
    return inner.ends(e.body)


_RULES: dict[type, Any] = {
    n.Add: _r_add,
    n.Sub: _r_sub,
    n.Mul: _r_mul,
    n.FloorDiv: _r_floordiv,
    n.FloorMod: _r_floormod,
    n.Min: _r_min,
    n.Max: _r_max,
    n.Select: _r_select,
    n.Cast: _r_cast,
    n.Ramp: _r_ramp,
    n.Broadcast: _r_broadcast,
    n.Let: _r_let,
}


def eval_interval(expr: Any, dom_map: Mapping[n.Var, Any] | None = None,
                  analyzer: Analyzer | None = None) -> IntervalSet:
    """A sound interval of `expr` while each var of `dom_map` (IntervalSet or Range) ranges
    over its set; endpoints are simplified expressions of the remaining variables."""
    ana = analyzer or _default()
    dom: dict[n.Var, IntervalSet] = {}
    for v, r in (dom_map or {}).items():
        dom[v] = r if isinstance(r, IntervalSet) else IntervalSet.from_range(r)
    e = ana.simplify(convert(expr))
    ev = _IntervalEval(dom, ana)
    r = ev(e)
    if r is None:
        return IntervalSet(e, e)
    lo, hi = r
    return IntervalSet(None if lo is None else ana.simplify(lo),
                       None if hi is None else ana.simplify(hi))
