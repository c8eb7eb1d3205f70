"""A reference evaluator of expressions on concrete values, with exact semantics.

Integers are Python ints (FloorDiv/FloorMod: Python floor semantics; Div/Mod on integers:
C truncation); float32 results are rounded to single precision; a vector value is a tuple of
lanes. Used by the tests as the ground truth every rewrite must preserve.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..expr import dtype as dt
from ..expr import nodes as n
from ..expr.construct import truncdiv_int, truncmod_int
from ..expr.numeric import fmax, fmin
from .fold import cast_value, round_f32

Value = Any  # int | float | bool | tuple of those (vectors)


class EvaluationError(ValueError):
    """The expression has no value (unbound variable, division by zero, unknown call)."""


def _fix(v: Any, dtype: str) -> Any:
    d = dt.parse(dtype)
    if d.code == "float":
        return round_f32(v) if d.bits == 32 else float(v)
    if d.code == "bool":
        return bool(v)
    return int(v)


def _lift(f: Callable[..., Any]) -> Callable[..., Any]:
    """Apply a scalar function lane-wise when any argument is a vector."""

    def g(*xs: Any) -> Any:
        lanes = next((len(x) for x in xs if isinstance(x, tuple)), 0)
        if not lanes:
            return f(*xs)
        cols = [x if isinstance(x, tuple) else (x,) * lanes for x in xs]
        return tuple(f(*row) for row in zip(*cols))

    return g


def _div(x: Any, y: Any, is_float: bool) -> Any:
    if y == 0:
        raise EvaluationError("division by zero")
    return x / y if is_float else truncdiv_int(x, y)


def _floordiv(x: Any, y: Any) -> Any:
    if y == 0:
        raise EvaluationError("division by zero")
    return x // y


def _floormod(x: Any, y: Any) -> Any:
    if y == 0:
        raise EvaluationError("modulo by zero")
    return x % y


def _truncmod(x: Any, y: Any) -> Any:
    if y == 0:
        raise EvaluationError("modulo by zero")
    return truncmod_int(x, y) if isinstance(x, int) and isinstance(y, int) else math.fmod(x, y)


_MATH: dict[str, Callable[..., Any]] = {
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "tanh": math.tanh,
    "sin": math.sin, "cos": math.cos, "floor": math.floor, "ceil": math.ceil,
    "fabs": abs, "abs": abs, "pow": math.pow, "round": round, "trunc": math.trunc,
    "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
}


class _Eval:
    def __init__(self, env: Mapping[n.Var, Value]):
        self.env = dict(env)

    def __call__(self, e: n.PrimExpr) -> Value:
        t = type(e)
        if t is n.IntImm:
            return bool(e.value) if e.dtype == "bool" else e.value
        if t is n.FloatImm:
            return e.value
        if t is n.Var or t is n.SizeVar:
            if e not in self.env:
                raise EvaluationError(f"variable {e.name} has no value")
            return self.env[e]
        f = getattr(self, "e_" + t.__name__, None)
        if f is None:
            raise EvaluationError(f"cannot evaluate {t.__name__} node `{e}`")
        return f(e)

    def _bin(self, e: Any, op: Callable[[Any, Any], Any]) -> Value:
        dtype = e.dtype
        return _lift(lambda x, y: _fix(op(x, y), dt.element(dtype)))(self(e.a), self(e.b))

    def e_Add(self, e: n.Add) -> Value:
        return self._bin(e, lambda x, y: x + y)

    def e_Sub(self, e: n.Sub) -> Value:
        return self._bin(e, lambda x, y: x - y)

    def e_Mul(self, e: n.Mul) -> Value:
        return self._bin(e, lambda x, y: x * y)

    def e_Div(self, e: n.Div) -> Value:
        is_float = dt.is_float(e.dtype)
        return self._bin(e, lambda x, y: _div(x, y, is_float))

    def e_Mod(self, e: n.Mod) -> Value:
        return self._bin(e, _truncmod)

    def e_FloorDiv(self, e: n.FloorDiv) -> Value:
        if dt.is_float(e.dtype):
            return self._bin(e, lambda x, y: math.floor(_div(x, y, True)))
        return self._bin(e, _floordiv)

    def e_FloorMod(self, e: n.FloorMod) -> Value:
        return self._bin(e, _floormod)

    def e_Min(self, e: n.Min) -> Value:
        return self._bin(e, fmin)

    def e_Max(self, e: n.Max) -> Value:
        return self._bin(e, fmax)

    def _cmp(self, e: Any, op: Callable[[Any, Any], bool]) -> Value:
        return _lift(lambda x, y: bool(op(x, y)))(self(e.a), self(e.b))

    def e_EQ(self, e: n.EQ) -> Value:
        return self._cmp(e, lambda x, y: x == y)

    def e_NE(self, e: n.NE) -> Value:
        return self._cmp(e, lambda x, y: x != y)

    def e_LT(self, e: n.LT) -> Value:
        return self._cmp(e, lambda x, y: x < y)

    def e_LE(self, e: n.LE) -> Value:
        return self._cmp(e, lambda x, y: x <= y)

    def e_GT(self, e: n.GT) -> Value:
        return self._cmp(e, lambda x, y: x > y)

    def e_GE(self, e: n.GE) -> Value:
        return self._cmp(e, lambda x, y: x >= y)

    def e_And(self, e: n.And) -> Value:
        return self._cmp(e, lambda x, y: bool(x) and bool(y))

    def e_Or(self, e: n.Or) -> Value:
        return self._cmp(e, lambda x, y: bool(x) or bool(y))

    def e_Not(self, e: n.Not) -> Value:
        return _lift(lambda x: not x)(self(e.a))

    def e_Select(self, e: n.Select) -> Value:
        # both branches are evaluated (that is Select's contract)
        c, t, f = self(e.condition), self(e.true_value), self(e.false_value)
        return _lift(lambda c, t, f: t if c else f)(c, t, f)

    def e_Cast(self, e: n.Cast) -> Value:
        el = dt.element(e.dtype)
        return _lift(lambda v: cast_value(v, el))(self(e.value))

    def e_Ramp(self, e: n.Ramp) -> Value:
        b, s = self(e.base), self(e.stride)
        return tuple(_fix(b + i * s, e.base.dtype) for i in range(e.lanes))

    def e_Broadcast(self, e: n.Broadcast) -> Value:
        return (self(e.value),) * e.lanes

    def e_Let(self, e: n.Let) -> Value:
        inner = _Eval({**self.env, e.var: self(e.value)})
        return inner(e.body)

    def e_Call(self, e: n.Call) -> Value:
        if e.op == "if_then_else":
            c = self(e.args[0])
            if isinstance(c, tuple):
                t, f = self(e.args[1]), self(e.args[2])
                return _lift(lambda c, t, f: t if c else f)(c, t, f)
            return self(e.args[1] if c else e.args[2])
        if e.op == "likely":
            return self(e.args[0])
        f = _MATH.get(e.op)
        if f is None:
            raise EvaluationError(f"cannot evaluate the call `{e.op}`")
        el = dt.element(e.dtype)
        return _lift(lambda *xs: _fix(f(*xs), el))(*(self(a) for a in e.args))


def evaluate(expr: n.PrimExpr, env: Mapping[n.Var, Value] | None = None) -> Value:
    """The value of `expr` with variables set from `env` (vectors are tuples of lanes)."""
    return _Eval(env or {})(expr)
