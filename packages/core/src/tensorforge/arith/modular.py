"""Modular sets: every value of an expression is `coeff * k + base` for some integer k.

Used to prove alignment (a vector load at `i*8 + 4` is 4-aligned) and divisibility.
`coeff == 0` means the expression is exactly `base`; `ModularSet(1, 0)` knows nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..expr import dtype as dt
from ..expr import nodes as n
from ..expr.construct import truncdiv_int, truncmod_int

if TYPE_CHECKING:
    from .analyzer import Analyzer


@dataclass(frozen=True, slots=True)
class ModularSet:
    """{coeff * k + base}; normalized so that 0 <= base < coeff when coeff > 0."""

    coeff: int
    base: int

    def __post_init__(self) -> None:
        c = abs(self.coeff)
        object.__setattr__(self, "coeff", c)
        if c:
            object.__setattr__(self, "base", self.base % c)

    @staticmethod
    def everything() -> ModularSet:
        return ModularSet(1, 0)

    def is_exact(self) -> bool:
        return self.coeff == 0

    def contains(self, v: int) -> bool:
        return v == self.base if self.coeff == 0 else (v - self.base) % self.coeff == 0


_ALL = ModularSet(1, 0)


def _union(x: ModularSet, y: ModularSet) -> ModularSet:
    return ModularSet(math.gcd(x.coeff, y.coeff, abs(x.base - y.base)), x.base)


class ModularEvaluator:
    """Bottom-up modular-set analysis, memoized per call."""

    __slots__ = ("ana", "memo", "lets")

    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.memo: dict[int, tuple[n.PrimExpr, ModularSet]] = {}
        self.lets: dict[n.Var, ModularSet] = {}

    def __call__(self, e: n.PrimExpr) -> ModularSet:
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = self._eval(e)
        self.memo[id(e)] = (e, r)
        return r

    def _eval(self, e: n.PrimExpr) -> ModularSet:
        t = type(e)
        if t is n.IntImm:
            return ModularSet(0, e.value)
        if dt.is_float(e.dtype):
            return _ALL
        if t is n.Var or t is n.SizeVar:
            if e in self.lets:
                return self.lets[e]
            b = self.ana._var_bound(e)
            if b is not None and b[0] == b[1]:
                return ModularSet(0, int(b[0]))
            return self.ana._var_modular.get(e, _ALL)
        if t is n.Add:
            x, y = self(e.a), self(e.b)
            return ModularSet(math.gcd(x.coeff, y.coeff), x.base + y.base)
        if t is n.Sub:
            x, y = self(e.a), self(e.b)
            return ModularSet(math.gcd(x.coeff, y.coeff), x.base - y.base)
        if t is n.Mul:
            x, y = self(e.a), self(e.b)
            c = math.gcd(x.coeff * y.coeff, x.coeff * y.base, y.coeff * x.base)
            return ModularSet(c, x.base * y.base)
        if t in (n.FloorDiv, n.FloorMod, n.Div, n.Mod):
            return self._divmod(e)
        if t is n.Min or t is n.Max:
            return _union(self(e.a), self(e.b))
        if t is n.Select:
            return _union(self(e.true_value), self(e.false_value))
        if t is n.Cast:
            if dt.is_int(e.dtype) and dt.is_int(e.value.dtype) and dt.bits(e.dtype) >= 32 and (
                    dt.bits(e.dtype) >= dt.bits(e.value.dtype)):
                return self(e.value)
            return _ALL
        if t is n.Broadcast:
            return self(e.value)
        if t is n.Ramp:
            x, s = self(e.base), self(e.stride)
            if e.lanes == 1:
                return x
            # lanes base + stride * i, i in [0, lanes): i contributes gcd with stride's set
            return ModularSet(math.gcd(x.coeff, s.coeff, s.base), x.base)
        if t is n.Let:
            old = self.lets.get(e.var)
            self.lets[e.var] = self(e.value)
            try:
                return self(e.body)
            finally:
                if old is None:
                    self.lets.pop(e.var, None)
                else:
                    self.lets[e.var] = old
        return _ALL

    def _divmod(self, e: n.PrimExpr) -> ModularSet:
        x, y = self(e.a), self(e.b)
        if y.coeff != 0 or y.base == 0:
            return _ALL
        c, t = y.base, type(e)
        if t is n.Div or t is n.Mod:
            if x.coeff == 0:
                f = truncdiv_int if t is n.Div else truncmod_int
                return ModularSet(0, f(x.base, c))
            if c < 0 or self.ana._bound_expr(e.a)[0] < 0:
                return _ALL
            t = n.FloorDiv if t is n.Div else n.FloorMod
        if x.coeff == 0:
            return ModularSet(0, x.base // c if t is n.FloorDiv else x.base % c)
        if t is n.FloorDiv:
            if x.coeff % c == 0:  # (C*k + b) // c == (C/c)*k + b // c
                return ModularSet(x.coeff // c, x.base // c)
            return _ALL
        if x.coeff % c == 0:
            return ModularSet(0, x.base % c)
        return ModularSet(math.gcd(x.coeff, abs(c)), x.base)  # x % c == x - c*q
