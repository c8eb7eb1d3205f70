"""Constant integer bounds: the interval [min_value, max_value] every value of an integer
expression lies in, given the ranges of bound variables.

Bounds are exact Python ints, with `math.inf` / `-math.inf` for "unbounded"; the helpers below
implement interval arithmetic on such pairs (0 * inf is 0, never nan). The analysis is sound:
every value the expression takes (with bound variables inside their ranges) lies inside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..expr import dtype as dt
from ..expr import nodes as n

if TYPE_CHECKING:
    from .analyzer import Analyzer

Num = int | float  # an int, or +/- math.inf
Pair = tuple[Num, Num]

POS_INF: float = math.inf
NEG_INF: float = -math.inf
EVERYTHING: Pair = (NEG_INF, POS_INF)


@dataclass(frozen=True, slots=True)
class ConstIntBound:
    """Inclusive constant bounds; `POS_INF` / `NEG_INF` (math.inf) mean unbounded."""

    min_value: Num
    max_value: Num

    POS_INF = POS_INF
    NEG_INF = NEG_INF

    def is_const(self) -> bool:
        return self.min_value == self.max_value

    def contains(self, v: Num) -> bool:
        return self.min_value <= v <= self.max_value

    def __iter__(self):  # allows `lo, hi = bound`
        yield self.min_value
        yield self.max_value


# interval arithmetic on (lo, hi) pairs -----------------------------------------------------
def _mul1(a: Num, b: Num) -> Num:
    if a == 0 or b == 0:
        return 0
    return a * b


def b_add(x: Pair, y: Pair) -> Pair:
    return (x[0] + y[0], x[1] + y[1])


def b_neg(x: Pair) -> Pair:
    return (-x[1], -x[0])


def b_sub(x: Pair, y: Pair) -> Pair:
    return (x[0] - y[1], x[1] - y[0])


def b_mul(x: Pair, y: Pair) -> Pair:
    c = (_mul1(x[0], y[0]), _mul1(x[0], y[1]), _mul1(x[1], y[0]), _mul1(x[1], y[1]))
    return (min(c), max(c))


def b_scale(x: Pair, k: int) -> Pair:
    if k >= 0:
        return (_mul1(x[0], k), _mul1(x[1], k))
    return (_mul1(x[1], k), _mul1(x[0], k))


def b_union(x: Pair, y: Pair) -> Pair:
    return (min(x[0], y[0]), max(x[1], y[1]))


def b_intersect(x: Pair, y: Pair) -> Pair:
    return (max(x[0], y[0]), min(x[1], y[1]))


def _both_inf(a: Num, b: Num) -> list[Num]:
    """inf / inf: any value of the sign of the quotient, so offer both extremes."""
    return [a if (a > 0) == (b > 0) else -abs(a), 0, -1]


def _floordiv1(a: Num, b: Num) -> list[Num]:
    """Candidate extremes of floor(a / b) at a corner (b != 0), infinities included."""
    if math.isinf(b):
        if math.isinf(a):
            return _both_inf(a, b)
        return [0 if a == 0 or (a > 0) == (b > 0) else -1]
    if math.isinf(a):
        return [a if b > 0 else -a]
    return [a // b]


def _truncdiv1(a: Num, b: Num) -> list[Num]:
    if math.isinf(b):
        if math.isinf(a):
            return _both_inf(a, b)
        return [0]
    if math.isinf(a):
        return [a if b > 0 else -a]
    q = abs(a) // abs(b)
    return [q if (a < 0) == (b < 0) else -q]


def _div_pos_neg(x: Pair, y: Pair, fn) -> Pair:
    """Division by a divisor interval, excluding zero (dividing by zero is undefined)."""
    parts = []
    if y[1] >= 1:
        parts.append((max(y[0], 1), y[1]))
    if y[0] <= -1:
        parts.append((y[0], min(y[1], -1)))
    if not parts:
        return EVERYTHING
    lo: Num = POS_INF
    hi: Num = NEG_INF
    for p in parts:
        c = [q for a in x for b in p for q in fn(a, b)]
        lo, hi = min(lo, *c), max(hi, *c)
    return (lo, hi)


def b_floordiv(x: Pair, y: Pair) -> Pair:
    return _div_pos_neg(x, y, _floordiv1)


def b_truncdiv(x: Pair, y: Pair) -> Pair:
    return _div_pos_neg(x, y, _truncdiv1)


def b_floormod(x: Pair, y: Pair) -> Pair:
    if y[0] >= 1:
        if x[0] >= 0 and x[1] < y[0]:
            return x
        if x[0] >= 0:
            return (0, min(x[1], y[1] - 1))
        return (0, y[1] - 1)
    if y[1] <= -1:
        if x[1] <= 0 and x[0] > y[1]:
            return x
        return (y[0] + 1, 0)
    return (min(y[0] + 1, 0), max(y[1] - 1, 0))


def b_truncmod(x: Pair, y: Pair) -> Pair:
    m = max(abs(y[0]), abs(y[1])) - 1
    if x[0] >= 0:
        return (0, min(x[1], m))
    if x[1] <= 0:
        return (max(x[0], -m), 0)
    return (max(x[0], -m), min(x[1], m))


def dtype_range(dtype: str) -> Pair:
    """Values an integer dtype can hold; 32/64-bit ints are treated as unbounded."""
    d = dt.parse(dtype)
    if d.code == "bool":
        return (0, 1)
    if d.code == "uint":
        return (0, POS_INF if d.bits >= 32 else 2**d.bits - 1)
    if d.code == "int" and d.bits < 32:
        return (-(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1)
    return EVERYTHING


# the analysis ------------------------------------------------------------------------------
class BoundEvaluator:
    """Computes constant bounds of an expression bottom-up, memoized per call."""

    __slots__ = ("ana", "memo", "lets")

    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.memo: dict[int, tuple[n.PrimExpr, Pair]] = {}
        self.lets: dict[n.Var, Pair] = {}

    def __call__(self, e: n.PrimExpr) -> Pair:
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = self._eval(e)
        extra = self.ana._atom_bound_of(e)
        if extra is not None:
            r = b_intersect(r, extra)
        self.memo[id(e)] = (e, r)
        return r

    def _eval(self, e: n.PrimExpr) -> Pair:
        t = type(e)
        if t is n.IntImm:
            return (e.value, e.value)
        if t is n.FloatImm:
            v = e.value
            if math.isfinite(v):
                return (math.floor(v), math.ceil(v))
            return EVERYTHING
        if t is n.Var or t is n.SizeVar:
            b = self.lets.get(e)
            if b is not None:
                return b
            b = self.ana._var_bound(e)
            if b is not None:
                return b
            if t is n.SizeVar:
                return (0, POS_INF)
            return dtype_range(e.dtype) if not dt.is_float(e.dtype) else EVERYTHING
        if dt.is_float(e.dtype):
            if t in (n.Min, n.Max, n.Add, n.Sub, n.Mul, n.Select, n.Broadcast):
                pass  # fall through: the same interval rules hold for reals
            else:
                return EVERYTHING
        f = _RULES.get(t)
        if f is None:
            if t is n.Call and e.op == "likely":
                return (0, 1)
            return dtype_range(e.dtype) if not dt.is_float(e.dtype) else EVERYTHING
        return f(self, e)


def _r_add(s: BoundEvaluator, e) -> Pair:
    return b_add(s(e.a), s(e.b))


def _r_sub(s: BoundEvaluator, e) -> Pair:
    return b_sub(s(e.a), s(e.b))


def _r_mul(s: BoundEvaluator, e) -> Pair:
    return b_mul(s(e.a), s(e.b))


def _r_floordiv(s: BoundEvaluator, e) -> Pair:
    return b_floordiv(s(e.a), s(e.b))


def _r_floormod(s: BoundEvaluator, e) -> Pair:
    return b_floormod(s(e.a), s(e.b))


def _r_div(s: BoundEvaluator, e) -> Pair:
    return b_truncdiv(s(e.a), s(e.b))


def _r_mod(s: BoundEvaluator, e) -> Pair:
    return b_truncmod(s(e.a), s(e.b))


def _r_min(s: BoundEvaluator, e) -> Pair:
    a, b = s(e.a), s(e.b)
    return (min(a[0], b[0]), min(a[1], b[1]))


def _r_max(s: BoundEvaluator, e) -> Pair:
    a, b = s(e.a), s(e.b)
    return (max(a[0], b[0]), max(a[1], b[1]))


def _r_select(s: BoundEvaluator, e) -> Pair:
    c = s(e.condition)
    if c[0] >= 1:
        return s(e.true_value)
    if c[1] <= 0:
        return s(e.false_value)
    return b_union(s(e.true_value), s(e.false_value))


def _r_cast(s: BoundEvaluator, e: n.Cast) -> Pair:
    target = dtype_range(e.dtype)
    if dt.is_bool(e.dtype):
        return (0, 1)
    src = s(e.value)  # float bounds are integers around the value; truncation stays inside
    if target[0] <= src[0] and src[1] <= target[1]:
        return src
    return target


def _r_ramp(s: BoundEvaluator, e: n.Ramp) -> Pair:
    return b_add(s(e.base), b_mul(s(e.stride), (0, e.lanes - 1)))


def _r_broadcast(s: BoundEvaluator, e: n.Broadcast) -> Pair:
    return s(e.value)


def _r_let(s: BoundEvaluator, e: n.Let) -> Pair:
    old = s.lets.get(e.var)
    s.lets[e.var] = s(e.value)
    try:
        return s(e.body)
    finally:
        if old is None:
            s.lets.pop(e.var, None)
        else:
            s.lets[e.var] = old


def _r_bool(s: BoundEvaluator, e) -> Pair:
    return (0, 1)


def _r_call(s: BoundEvaluator, e: n.Call) -> Pair:
    if e.op == "if_then_else" and len(e.args) == 3:
        return b_union(s(e.args[1]), s(e.args[2]))
    if e.op in ("likely",) and e.args:
        return s(e.args[0])
    return dtype_range(e.dtype) if not dt.is_float(e.dtype) else EVERYTHING


_RULES = {
    n.Add: _r_add,
    n.Sub: _r_sub,
    n.Mul: _r_mul,
    n.FloorDiv: _r_floordiv,
    n.FloorMod: _r_floormod,
    n.Div: _r_div,
    n.Mod: _r_mod,
    n.Min: _r_min,
    n.Max: _r_max,
    n.Select: _r_select,
    n.Cast: _r_cast,
    n.Ramp: _r_ramp,
    n.Broadcast: _r_broadcast,
    n.Let: _r_let,
    n.Call: _r_call,
    n.EQ: _r_bool,
    n.NE: _r_bool,
    n.LT: _r_bool,
    n.LE: _r_bool,
    n.GT: _r_bool,
    n.GE: _r_bool,
    n.And: _r_bool,
    n.Or: _r_bool,
    n.Not: _r_bool,
}
