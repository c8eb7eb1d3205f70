"""Integer analysis: canonical simplification of index expressions, constant bounds, interval
sets for bound inference, modular (alignment) sets, and a reference evaluator.

    ana = Analyzer()
    ana.bind(ii, Range.from_min_extent(0, 32))
    ana.simplify((io * 32 + ii) // 32)       # io
    ana.can_prove(io * 32 + ii < io * 32 + 32)  # True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expr import nodes as _n
from .analyzer import Analyzer
from .bound import ConstIntBound
from .evaluate import EvaluationError, evaluate
from .interval import IntervalSet, eval_interval
from .linear import detect_linear_equation
from .modular import ModularSet


def simplify(expr: Any, bounds: Mapping[_n.Var, Any] | None = None) -> _n.PrimExpr:
    """Simplify `expr` knowing each var of `bounds` lies in its Range / (min, extent) /
    IntervalSet."""
    ana = Analyzer()
    for v, r in (bounds or {}).items():
        ana.bind(v, r)
    return ana.simplify(expr)


__all__ = [
    "Analyzer",
    "ConstIntBound",
    "EvaluationError",
    "IntervalSet",
    "ModularSet",
    "detect_linear_equation",
    "eval_interval",
    "evaluate",
    "simplify",
]
