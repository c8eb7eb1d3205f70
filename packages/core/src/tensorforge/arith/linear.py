"""Linear decomposition of an index expression with respect to chosen variables, for
vectorization (`i*64 + j*8 + k` w.r.t. [k] is 1*k + (i*64 + j*8)) and strided accesses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..expr import nodes as n
from ..expr.construct import convert
from ..expr.functor import uses_var
from .analyzer import Analyzer


def _lin(e: n.PrimExpr, targets: set[n.Var]) -> tuple[dict[n.Var, n.PrimExpr], n.PrimExpr] | None:
    """({var: coeff}, base) with e == sum(coeff * var) + base, or None if e is not linear."""
    t = type(e)
    zero = n.IntImm(0, e.dtype) if not e.dtype.startswith("float") else n.FloatImm(0.0, e.dtype)
    if t is n.Var or t is n.SizeVar:
        if e in targets:
            return {e: n.IntImm(1, e.dtype)}, zero
        return {}, e
    if t is n.Add or t is n.Sub:
        la, lb = _lin(e.a, targets), _lin(e.b, targets)
        if la is None or lb is None:
            return None
        coeffs = dict(la[0])
        for v, c in lb[0].items():
            c = c if t is n.Add else n.Sub(n.IntImm(0, c.dtype), c)
            coeffs[v] = n.Add(coeffs[v], c) if v in coeffs else c
        return coeffs, t(la[1], lb[1])
    if t is n.Mul:
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if not uses_var(y, lambda v: v in targets):
                lx = _lin(x, targets)
                if lx is None:
                    return None
                return {v: n.Mul(c, y) for v, c in lx[0].items()}, n.Mul(lx[1], y)
        return None
    if uses_var(e, lambda v: v in targets):
        return None
    return {}, e


def detect_linear_equation(expr: Any, vars: Sequence[n.Var],
                           analyzer: Analyzer | None = None) -> list[n.PrimExpr] | None:
    """Coefficients of `expr` in each of `vars`, then the rest: `[c_0, ..., c_k, base]` with
    expr == sum(c_i * vars[i]) + base and no var in any c_i or base; None if not linear."""
    ana = analyzer or Analyzer()
    e = ana.simplify(convert(expr))
    targets = set(vars)
    r = _lin(e, targets)
    if r is None:
        return None
    coeffs, base = r
    out: list[n.PrimExpr] = []
    for v in vars:
        c = coeffs.get(v)
        out.append(ana.simplify(c) if c is not None else n.IntImm(0, e.dtype))
    out.append(ana.simplify(base))
    return out
