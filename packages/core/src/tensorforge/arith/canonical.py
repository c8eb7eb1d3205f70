"""Canonical forms of integer index expressions.

An index expression is held as a `Sum`: `sum(coeff * atom) + const`, like terms combined.
An atom is either an opaque expression (a variable, a nonlinear product, a min, a load ...) or
a `Split`: `(e % upper) // lower` of a canonical sum `e` (upper None: no modulo). Splits are
what make split/fused loop indices cancel: `(x // 4) * 4 + x % 4` is the sum
`4 * Split(x, 4, None) + Split(x, 1, 4)`, and adjacent splits of one sum merge back into `x`.

Division and modulo by a positive constant pull out the part of the sum divisible by the
divisor, reduce by common factors, and use constant bounds to drop what is provably zero.
All rewrites here are exact identities on mathematical integers.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ..expr import nodes as n
from ..expr.functor import child_table
from .bound import Pair, b_add, b_floordiv, b_floormod, b_scale

if TYPE_CHECKING:
    from .analyzer import Analyzer


def expr_key(e: Any) -> Hashable:
    """A hashable structural key: equal keys <=> structurally equal expressions."""
    t = type(e)
    if t is n.Var or t is n.SizeVar:
        return id(e)
    if t is n.IntImm or t is n.FloatImm:
        return (t.__name__, e.value, e.dtype)
    if isinstance(e, n.PrimExpr):
        parts: list[Any] = [t.__name__]
        for name, kind in child_table(t):
            v = getattr(e, name)
            if kind == "e":
                parts.append(expr_key(v))
            elif kind == "t":
                parts.append(tuple(expr_key(x) for x in v))
            else:
                parts.append(_data_key(v))
        return tuple(parts)
    return _data_key(e)


def _data_key(v: Any) -> Hashable:
    if isinstance(v, n.PrimExpr):
        return expr_key(v)
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if isinstance(v, tuple):
        return tuple(_data_key(x) for x in v)
    return ("id", id(v))


class Split:
    """The atom `(e % upper) // lower` (no modulo when upper is None); `e` is a Sum."""

    __slots__ = ("e", "lower", "upper", "_key")

    def __init__(self, e: Sum, lower: int, upper: int | None):
        self.e, self.lower, self.upper = e, lower, upper
        self._key: Hashable = ("split", e.key(), lower, upper)

    def key(self) -> Hashable:
        return self._key


Atom = n.PrimExpr | Split


def atom_key(a: Atom) -> Hashable:
    return a.key() if type(a) is Split else expr_key(a)


class Sum:
    """`sum(coeff * atom) + const`: `terms` maps an atom key to (atom, nonzero coeff); dict
    order is the order of first appearance."""

    __slots__ = ("terms", "const", "dtype", "_key")

    def __init__(self, terms: dict[Hashable, tuple[Atom, int]], const: int, dtype: str):
        self.terms, self.const, self.dtype = terms, const, dtype
        self._key: Hashable | None = None

    @staticmethod
    def of_const(v: int, dtype: str) -> Sum:
        return Sum({}, v, dtype)

    @staticmethod
    def of_atom(a: Atom, dtype: str, coeff: int = 1, key: Hashable | None = None) -> Sum:
        return Sum({atom_key(a) if key is None else key: (a, coeff)}, 0, dtype)

    def key(self) -> Hashable:
        if self._key is None:
            self._key = (frozenset((k, c) for k, (_, c) in self.terms.items()), self.const)
        return self._key

    def is_const(self) -> bool:
        return not self.terms

    def single_atom(self) -> Atom | None:
        """The atom when the sum is exactly `1 * atom`."""
        if self.const == 0 and len(self.terms) == 1:
            a, c = next(iter(self.terms.values()))
            if c == 1:
                return a
        return None

    def content(self) -> int:
        """gcd of all coefficients and the constant (0 for the zero sum)."""
        g = abs(self.const)
        for _, c in self.terms.values():
            g = math.gcd(g, c)
            if g == 1:
                break
        return g


# linear algebra on sums --------------------------------------------------------------------
def s_add(x: Sum, y: Sum, ky: int = 1) -> Sum:
    """x + ky * y."""
    if not y.terms:
        return x if y.const == 0 else Sum(x.terms, x.const + ky * y.const, x.dtype)
    terms = dict(x.terms)
    for k, (a, c) in y.terms.items():
        old = terms.get(k)
        c2 = (old[1] if old is not None else 0) + ky * c
        if c2 == 0:
            terms.pop(k, None)
        else:
            terms[k] = (a if old is None else old[0], c2)
    return Sum(terms, x.const + ky * y.const, x.dtype)


def s_scale(x: Sum, k: int) -> Sum:
    if k == 1:
        return x
    if k == 0:
        return Sum({}, 0, x.dtype)
    return Sum({key: (a, c * k) for key, (a, c) in x.terms.items()}, x.const * k, x.dtype)


def s_divexact(x: Sum, g: int) -> Sum:
    return Sum({key: (a, c // g) for key, (a, c) in x.terms.items()}, x.const // g, x.dtype)


def s_add_const(x: Sum, v: int) -> Sum:
    return x if v == 0 else Sum(x.terms, x.const + v, x.dtype)


def _weight(ac: tuple[Atom, int]) -> float:
    """Print order: larger strides first; a product with a symbolic factor (`i * n`) counts
    as a huge stride, like an outer loop over a symbolic shape."""
    a, c = ac
    big = type(a) is n.Mul and not (type(a.a) is n.IntImm or type(a.b) is n.IntImm)
    return -abs(c) * (1e9 if big else 1)


def _split_coeff(co: int, c: int) -> tuple[int, int]:
    """co == q*c + r, with r the coefficient left inside a division or modulo by c.
    Positive coefficients reduce modulo c; negative ones stay unless divisible (floordiv
    and floormod must agree on r so that their splits of one sum can merge again)."""
    if co % c == 0:
        return co // c, 0
    if co > 0:
        return divmod(co, c)
    return 0, co


def _finite(b: Pair) -> bool:
    return not (math.isinf(b[0]) or math.isinf(b[1]))


class Canon:
    """Canonical-form operations that need bounds (from an Analyzer) to decide rewrites."""

    __slots__ = ("ana", "bound_memo")

    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.bound_memo: dict[Hashable, Pair] = {}

    # bounds --------------------------------------------------------------------------------
    def bound_atom(self, a: Atom, key: Hashable) -> Pair:
        b = self.bound_memo.get(key)
        if b is not None:
            return b
        if type(a) is Split:
            b = self.bound_sum(a.e)
            if a.upper is not None:
                b = b_floormod(b, (a.upper, a.upper))
            if a.lower != 1:
                b = b_floordiv(b, (a.lower, a.lower))
            extra = self.ana._expr_bounds.get(key) if self.ana._expr_bounds else None
            if extra is not None:
                b = (max(b[0], extra[0]), min(b[1], extra[1]))
        else:
            b = self.ana._bound_expr(a)
        self.bound_memo[key] = b
        return b

    def bound_sum(self, s: Sum, depth: int = 0) -> Pair:
        b: Pair = (s.const, s.const)
        for k, (a, c) in s.terms.items():
            b = b_add(b, b_scale(self.bound_atom(a, k), c))
        if depth < 2 and len(s.terms) > 1 and not (b[0] == b[1]):
            # k*u*(e // u) == k*e - k*(e % u): tighter when e's terms cancel with others
            for k, (a, c) in s.terms.items():
                if type(a) is Split and a.upper is None and c % a.lower == 0 and any(
                        kk in s.terms for kk in a.e.terms):
                    q = c // a.lower
                    alt = s_add(s_add(s, Sum({k: (a, c)}, 0, s.dtype), -1), a.e, q)
                    alt = s_add(alt, Sum.of_atom(Split(a.e, 1, a.lower), s.dtype), -q)
                    b2 = self.bound_sum(alt, depth + 1)
                    b = (max(b[0], b2[0]), min(b[1], b2[1]))
        return b

    # conversion back to expressions -------------------------------------------------------
    def atom_expr(self, a: Atom) -> n.PrimExpr:
        if type(a) is not Split:
            return a
        e = self.to_expr(a.e)
        dtype = a.e.dtype
        if a.upper is not None:
            e = n.FloorMod(e, n.IntImm(a.upper, dtype))
        if a.lower != 1:
            e = n.FloorDiv(e, n.IntImm(a.lower, dtype))
        return e

    def to_expr(self, s: Sum) -> n.PrimExpr:
        """Readable form: larger coefficients first (outer loops), ties in order of first
        appearance, a positive term leading when there is one, the constant last."""
        dtype = s.dtype
        if not s.terms:
            return n.IntImm(s.const, dtype)
        items = sorted(s.terms.values(), key=_weight)
        if items[0][1] < 0:
            for i, (_, c) in enumerate(items):
                if c > 0:
                    items.insert(0, items.pop(i))
                    break
        acc: n.PrimExpr | None = None
        if items[0][1] < 0 and s.const > 0:
            acc = n.IntImm(s.const, dtype)
        for a, c in items:
            ae = self.atom_expr(a)
            if acc is None:
                acc = ae if c == 1 else n.Mul(ae, n.IntImm(c, dtype))
            elif c > 0:
                acc = n.Add(acc, ae if c == 1 else n.Mul(ae, n.IntImm(c, dtype)))
            else:
                acc = n.Sub(acc, ae if c == -1 else n.Mul(ae, n.IntImm(-c, dtype)))
        assert acc is not None
        if items[0][1] < 0 and s.const > 0:
            return acc
        if s.const > 0:
            return n.Add(acc, n.IntImm(s.const, dtype))
        if s.const < 0:
            return n.Sub(acc, n.IntImm(-s.const, dtype))
        return acc

    # products ------------------------------------------------------------------------------
    def mul(self, x: Sum, y: Sum) -> Sum:
        if not x.terms:
            return s_scale(y, x.const)
        if not y.terms:
            return s_scale(x, y.const)
        gx, gy = x.content(), y.content()
        xe = self.to_expr(s_divexact(x, gx) if gx > 1 else x)
        ye = self.to_expr(s_divexact(y, gy) if gy > 1 else y)
        return Sum.of_atom(n.Mul(xe, ye), x.dtype, gx * gy)

    # division and modulo by a positive constant -------------------------------------------
    def floordiv(self, s: Sum, c: int) -> Sum:
        """s // c for c > 0: the part divisible by c moves out exactly."""
        if c == 1:
            return s
        q: dict[Hashable, tuple[Atom, int]] = {}
        r: dict[Hashable, tuple[Atom, int]] = {}
        for k, (a, co) in s.terms.items():
            qd, rm = _split_coeff(co, c)
            if qd:
                q[k] = (a, qd)
            if rm:
                r[k] = (a, rm)
        qc, rc = divmod(s.const, c)
        quot = Sum(q, qc, s.dtype)
        if not r:
            return quot
        rest = Sum(r, rc, s.dtype)
        g = math.gcd(c, rest.content())
        if g > 1:
            rest, c = s_divexact(rest, g), c // g
            if c == 1:
                return s_add(quot, rest)
        b = self.bound_sum(rest)
        if _finite(b) and b[0] // c == b[1] // c:
            return s_add_const(quot, int(b[0] // c))
        one = rest.single_atom()
        if type(one) is Split and one.upper is None:
            return s_add(quot, self.make_split(one.e, one.lower * c, None))
        if type(one) is Split and one.upper is not None:
            return s_add(quot, self.make_split(one.e, one.lower * c, one.upper))
        return s_add(quot, self._split_atom(rest, c, None))

    def floormod(self, s: Sum, c: int) -> Sum:
        """s % c for c > 0: terms divisible by c vanish, coefficients reduce modulo c."""
        if c == 1:
            return Sum.of_const(0, s.dtype)
        r: dict[Hashable, tuple[Atom, int]] = {}
        for k, (a, co) in s.terms.items():
            rm = _split_coeff(co, c)[1]
            if rm:
                r[k] = (a, rm)
        rest = Sum(r, s.const % c, s.dtype)
        if not r:
            return rest
        g = math.gcd(c, rest.content())
        if g > 1:
            return s_scale(self.floormod(s_divexact(rest, g), c // g), g)
        b = self.bound_sum(rest)
        if _finite(b) and b[0] // c == b[1] // c:
            return s_add_const(rest, -int(b[0] // c) * c)
        one = rest.single_atom()
        if type(one) is Split:
            lc = one.lower * c
            if one.upper is None or one.upper % lc == 0:
                return self.make_split(one.e, one.lower, lc)
            if lc >= one.upper:
                return rest
        if self.ana._var_modular:
            ms = self.ana.modular_set(self.to_expr(rest))
            if ms.coeff % c == 0:
                return Sum.of_const(ms.base % c, s.dtype)
        return self._split_atom(rest, 1, c)

    def make_split(self, e: Sum, lower: int, upper: int | None) -> Sum:
        """The sum for `(e % upper) // lower`, folded where bounds allow."""
        if upper is not None:
            if lower >= upper:
                return Sum.of_const(0, e.dtype)
            b = self.bound_sum(e)
            if _finite(b) and b[0] // upper == b[1] // upper:
                return self.floordiv(s_add_const(e, -int(b[0] // upper) * upper), lower)
        if upper is None:
            if lower == 1:
                return e
            b = self.bound_sum(e)
            if _finite(b) and b[0] // lower == b[1] // lower:
                return Sum.of_const(int(b[0] // lower), e.dtype)
        return self._split_atom(e, lower, upper)

    def _split_atom(self, e: Sum, lower: int, upper: int | None) -> Sum:
        sp = Split(e, lower, upper)
        if self.ana._expr_bounds:  # a constraint may pin the split to one value
            b = self.bound_atom(sp, sp.key())
            if b[0] == b[1]:
                return Sum.of_const(int(b[0]), e.dtype)
        return Sum.of_atom(sp, e.dtype)

    # merging adjacent splits -----------------------------------------------------------------
    def merge(self, s: Sum) -> Sum:
        """Rewrite split pairs of one sum `e` until none applies (each step drops terms):
        - `k*(l1/l2) * ((e % u) // l1) + k * ((e % l1) // l2)` -> `k * ((e % u) // l2)`
        - `k * ((e % u1) // l) - k * ((e % u2) // l)` -> `k*(u2/l) * ((e % u1) // u2)`
        - `k * e - k * (e % u)` -> `k*u * (e // u)`"""
        while True:
            step = self._find_merge(s)
            if step is None:
                return s
            anchor, removed, added = step
            out = Sum({}, 0, s.dtype)
            for k, v in s.terms.items():
                if k == anchor:
                    out = s_add(out, added)
                out = s_add(out, Sum({k: v}, 0, s.dtype))
            s = s_add_const(s_add(out, removed, -1), s.const)

    def _find_merge(self, s: Sum) -> tuple[Hashable, Sum, Sum] | None:
        groups: dict[Hashable, list[tuple[Hashable, Split, int]]] = {}
        for k, (a, c) in s.terms.items():
            if type(a) is Split:
                groups.setdefault(a.e.key(), []).append((k, a, c))
        for members in groups.values():
            e = members[0][1].e
            for k1, s1, c1 in members:
                if s1.lower == 1 and s1.upper is not None and _contains(s, e, -c1):
                    removed = s_add(s_scale(e, -c1), Sum({k1: (s1, c1)}, 0, s.dtype))
                    added = s_scale(self.make_split(e, s1.upper, None), -c1 * s1.upper)
                    return next(iter(e.terms)), removed, added
                for k2, s2, c2 in members:
                    if k2 == k1:
                        continue
                    pair = Sum({k1: (s1, c1), k2: (s2, c2)}, 0, s.dtype)
                    first = k1 if _index(s, k1) < _index(s, k2) else k2
                    if s2.upper == s1.lower and s1.lower % s2.lower == 0 and (
                            s1.upper is None or s1.upper % s1.lower == 0) and (
                            c1 == c2 * (s1.lower // s2.lower)):
                        merged = s_scale(self.make_split(e, s2.lower, s1.upper), c2)
                        return first, pair, merged
                    if s1.lower == s2.lower and c2 == -c1 and s2.upper is not None and (
                            s2.upper % s1.lower == 0) and (
                            s1.upper is None or (s1.upper > s2.upper and s1.upper % s2.upper == 0)):
                        merged = s_scale(self.make_split(e, s2.upper, s1.upper),
                                         c1 * (s2.upper // s1.lower))
                        return first, pair, merged
        return None


def _contains(s: Sum, e: Sum, k: int) -> bool:
    """Whether `s` has every term of `k * e` (coefficients equal)."""
    if not e.terms:
        return False
    for key, (_, c) in e.terms.items():
        t = s.terms.get(key)
        if t is None or t[1] != k * c:
            return False
    return True


def _index(s: Sum, key: Hashable) -> int:
    for i, k in enumerate(s.terms):
        if k == key:
            return i
    return -1
