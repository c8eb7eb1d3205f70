"""`Analyzer`: what is known about variables (loop ranges, branch conditions), and the queries
every pass asks: simplify, const_int_bound, modular_set, can_prove, int_set.

Knowledge changes (`bind`, `with_constraint`) drop the caches, so answers are never stale.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..expr import dtype as dt
from ..expr import nodes as n
from ..expr.construct import convert
from ..expr.structural import structural_equal
from .bound import EVERYTHING, BoundEvaluator, ConstIntBound, Pair, b_intersect
from .canonical import Split, Sum, expr_key
from .interval import IntervalSet, eval_interval
from .modular import ModularEvaluator, ModularSet
from .rewrite import NEGATE, Simplifier, is_index

_ATOM_TYPES = (n.FloorDiv, n.FloorMod, n.Div, n.Mod, n.Mul, n.Min, n.Max, n.Call,
               n.BufferLoad, n.ProducerLoad, n.Cast, n.Select)


def _ceil_div(a: Any, b: int) -> Any:
    return a if isinstance(a, float) else -((-a) // b)


def _floor_div(a: Any, b: int) -> Any:
    return a if isinstance(a, float) else a // b


class Analyzer:
    """Integer analysis under known variable ranges and constraints."""

    def __init__(self) -> None:
        self._var_bounds: dict[n.Var, Pair] = {}
        self._var_ranges: dict[n.Var, IntervalSet] = {}  # symbolic ranges only
        self._var_modular: dict[n.Var, ModularSet] = {}
        self._var_values: dict[n.Var, n.PrimExpr] = {}  # bound to one symbolic value
        self._expr_bounds: dict[Hashable, Pair] = {}
        self._facts: dict[Hashable, bool] = {}
        # keys hold variables by id, so the values keep the keyed expressions alive
        self._cache: dict[Hashable, tuple[n.PrimExpr, n.PrimExpr]] = {}
        self._keepalive: list[Any] = []
        self._in_symbolic = 0

    # knowledge -----------------------------------------------------------------------------
    def bind(self, var: n.Var, rng: Any) -> None:
        """Record that `var` lies in `rng`: a Range, a (min, extent) pair, an IntervalSet,
        or a single value (expression or int)."""
        lo, hi = self._ends(rng)
        self._invalidate()
        self._var_ranges.pop(var, None)
        self._var_values.pop(var, None)
        if type(lo) is n.IntImm and type(hi) is n.IntImm:
            self._var_bounds[var] = (lo.value, max(lo.value, hi.value))
            return
        blo = BoundEvaluator(self)(lo)[0] if lo is not None else -math.inf
        bhi = BoundEvaluator(self)(hi)[1] if hi is not None else math.inf
        self._var_bounds[var] = (blo, bhi)
        if lo is not None and hi is not None and structural_equal(lo, hi):
            self._var_values[var] = lo
        elif not (lo is None and hi is None):
            self._var_ranges[var] = IntervalSet(lo, hi)

    def _ends(self, rng: Any) -> tuple[n.PrimExpr | None, n.PrimExpr | None]:
        if isinstance(rng, IntervalSet):
            return rng.min_value, rng.max_value
        if isinstance(rng, tuple):
            rng = n.Range.from_min_extent(*rng)
        if isinstance(rng, n.Range):
            return rng.min, self.simplify(rng.min + rng.extent - 1)
        v = self.simplify(convert(rng))
        return v, v

    @contextmanager
    def scoped_bind(self, var: n.Var, rng: Any) -> Iterator[Analyzer]:
        """`bind` for the duration of a `with` block (loop bodies)."""
        saved = (self._var_bounds.get(var), self._var_ranges.get(var),
                 self._var_values.get(var))
        self.bind(var, rng)
        try:
            yield self
        finally:
            self._restore_var(var, *saved)

    @contextmanager
    def _scoped_bound(self, var: n.Var, pair: Pair) -> Iterator[None]:
        saved = (self._var_bounds.get(var), self._var_ranges.get(var),
                 self._var_values.get(var))
        self._invalidate()
        self._var_bounds[var] = pair
        self._var_ranges.pop(var, None)
        self._var_values.pop(var, None)
        try:
            yield
        finally:
            self._restore_var(var, *saved)

    def _restore_var(self, var: n.Var, b: Pair | None, r: IntervalSet | None,
                     val: n.PrimExpr | None) -> None:
        self._invalidate()
        if val is None:
            self._var_values.pop(var, None)
        else:
            self._var_values[var] = val
        if b is None:
            self._var_bounds.pop(var, None)
        else:
            self._var_bounds[var] = b
        if r is None:
            self._var_ranges.pop(var, None)
        else:
            self._var_ranges[var] = r

    @contextmanager
    def with_constraint(self, cond: Any) -> Iterator[Analyzer]:
        """Assume `cond` inside the block: tightens bounds of the variables (and atoms) it
        constrains and lets `can_prove` use it."""
        saved = (dict(self._var_bounds), dict(self._expr_bounds), dict(self._facts),
                 dict(self._var_modular), len(self._keepalive))
        try:
            self._add_constraint(convert(cond))
            self._invalidate()
            yield self
        finally:
            self._var_bounds, self._expr_bounds, self._facts, self._var_modular = saved[:4]
            del self._keepalive[saved[4]:]
            self._invalidate()

    def _invalidate(self) -> None:
        self._cache.clear()

    def _add_constraint(self, cond: n.PrimExpr) -> None:
        if type(cond) is n.Call and cond.op == "likely" and len(cond.args) == 1:
            cond = cond.args[0]
        c = self.simplify(cond)
        if type(c) is n.And:
            self._add_constraint(c.a)
            self._add_constraint(c.b)
            return
        if type(c) is n.IntImm:
            return
        self._keepalive.append(c)
        self._facts[expr_key(c)] = True
        if type(c) is n.Not:
            self._facts[expr_key(c.a)] = False
        t = type(c)
        if t in NEGATE:
            self._facts[expr_key(NEGATE[t](c.a, c.b))] = False
            if is_index(c.a.dtype) and dt.lanes(c.a.dtype) == 1:
                self._constrain_cmp(t, c)

    def _constrain_cmp(self, t: type, c: Any) -> None:
        sim = Simplifier(self)
        d = sim.sum_of(sim.visit(n.Sub(c.a, c.b)))
        # d <op> 0  ->  d in [lo, hi]
        rng = {n.LT: (-math.inf, -1), n.LE: (-math.inf, 0), n.GT: (1, math.inf),
               n.GE: (0, math.inf), n.EQ: (0, 0)}.get(t)
        if rng is None or not d.terms:
            return
        if t is n.EQ:
            self._modular_fact(d)
        for k, (atom, co) in d.terms.items():
            rest = Sum({kk: v for kk, v in d.terms.items() if kk != k}, d.const, d.dtype)
            rb = sim.canon.bound_sum(rest)
            # co * atom in [rng.lo - rest.hi, rng.hi - rest.lo]
            lo, hi = rng[0] - rb[1], rng[1] - rb[0]
            if co < 0:
                lo, hi, co = -hi, -lo, -co
            new = (_ceil_div(lo, co), _floor_div(hi, co))
            self._tighten(atom, k, sim, new)

    def _tighten(self, atom: Any, key: Hashable, sim: Simplifier, new: Pair) -> None:
        if type(atom) is n.Var or type(atom) is n.SizeVar:
            old = self._var_bounds.get(atom) or BoundEvaluator(self)(atom)
            self._var_bounds[atom] = b_intersect(old, new)
            return
        self._keepalive.append(atom)
        keys = [key]
        if type(atom) is Split:
            keys.append(expr_key(sim.canon.atom_expr(atom)))
        for k in keys:
            old = self._expr_bounds.get(k, EVERYTHING)
            self._expr_bounds[k] = b_intersect(old, new)

    def _modular_fact(self, d: Sum) -> None:
        """`x % c == r` (as the sum Split(x, 1, c) - r) gives x the modular set c*k + r."""
        if len(d.terms) != 1:
            return
        atom, co = next(iter(d.terms.values()))
        if type(atom) is not Split or atom.lower != 1 or atom.upper is None or co not in (1, -1):
            return
        x = atom.e.single_atom()
        if type(x) is n.Var and (-d.const * co) % atom.upper == -d.const * co:
            self._var_modular[x] = ModularSet(atom.upper, -d.const * co)

    # lookups used by the analyses ----------------------------------------------------------
    def _var_bound(self, v: n.Var) -> Pair | None:
        return self._var_bounds.get(v)

    def _atom_bound_of(self, e: n.PrimExpr) -> Pair | None:
        if not self._expr_bounds or type(e) not in _ATOM_TYPES:
            return None
        return self._expr_bounds.get(expr_key(e))

    def _bound_expr(self, e: n.PrimExpr) -> Pair:
        return BoundEvaluator(self)(e)

    def _symbolic_bound(self, e: n.PrimExpr) -> Pair:
        """Constant bounds of `e` after substituting symbolic loop ranges (so that, with
        i in [0, n - 1], `i - n` is known negative)."""
        if not self._var_ranges or self._in_symbolic:
            return EVERYTHING
        self._in_symbolic += 1
        try:
            iv = eval_interval(e, self._var_ranges, self)
            lo = self._tight_bound(iv.min_value)[0] if iv.min_value is not None else -math.inf
            hi = self._tight_bound(iv.max_value)[1] if iv.max_value is not None else math.inf
            return (lo, hi)
        finally:
            self._in_symbolic -= 1

    def _tight_bound(self, e: n.PrimExpr) -> Pair:
        """Bounds of an (already simplified) expression via its canonical sum."""
        b = BoundEvaluator(self)(e)
        if is_index(e.dtype):
            sim = Simplifier(self)
            b = b_intersect(b, sim.canon.bound_sum(sim.sum_of(e)))
        return b

    # queries --------------------------------------------------------------------------------
    def simplify(self, expr: Any) -> n.PrimExpr:
        """Canonical simplification (an equivalent expression under the known facts)."""
        e = convert(expr)
        if type(e) in (n.IntImm, n.FloatImm):
            return e
        key = expr_key(e)
        hit = self._cache.get(key)
        if hit is not None:
            return hit[1]
        r = Simplifier(self).visit(e)
        if r is not e and structural_equal(r, e):
            r = e
        if not self._in_symbolic:
            self._cache[key] = (e, r)
        return r

    canonical_simplify = simplify
    rewrite_simplify = simplify

    def const_int_bound(self, expr: Any) -> ConstIntBound:
        lo, hi = BoundEvaluator(self)(convert(expr))
        return ConstIntBound(lo, hi)

    def modular_set(self, expr: Any) -> ModularSet:
        return ModularEvaluator(self)(convert(expr))

    def can_prove(self, cond: Any) -> bool:
        """True only when `cond` holds for every value the known facts allow."""
        c = self.simplify(convert(cond))
        if type(c) is n.Broadcast:
            c = c.value
        if type(c) is n.IntImm:
            return bool(c.value)
        if type(c) is n.And:
            return self.can_prove(c.a) and self.can_prove(c.b)
        if type(c) is n.Or:
            return self.can_prove(c.a) or self.can_prove(c.b)
        return self._facts.get(expr_key(c)) is True

    def can_prove_equal(self, a: Any, b: Any) -> bool:
        return self.can_prove(convert(a) == convert(b))

    def int_set(self, expr: Any, dom_map: Mapping[n.Var, Any] | None = None) -> IntervalSet:
        """The interval of `expr` while the vars of `dom_map` range over their sets."""
        return eval_interval(expr, dom_map, self)

    def linear_sum(self, expr: Any) -> Sum | None:
        """The canonical sum of an integer expression (None for non-index dtypes)."""
        e = convert(expr)
        if not is_index(e.dtype):
            return None
        sim = Simplifier(self)
        return sim.sum_of(sim.visit(e))

