"""Readable infix printing of expressions (TVMScript-like, but terse)."""

from __future__ import annotations

from typing import Any

from . import nodes as n

_BIN = {
    n.Add: ("+", 4),
    n.Sub: ("-", 4),
    n.Mul: ("*", 5),
    n.Div: ("/", 5),
    n.Mod: ("%", 5),
    n.FloorDiv: ("//", 5),
    n.FloorMod: ("%", 5),
    n.EQ: ("==", 3),
    n.NE: ("!=", 3),
    n.LT: ("<", 3),
    n.LE: ("<=", 3),
    n.GT: (">", 3),
    n.GE: (">=", 3),
    n.And: ("&&", 2),
    n.Or: ("||", 1),
}


def expr_str(e: Any) -> str:
    return _p(e, 0)


def _p(e: Any, prec: int) -> str:
    t = type(e)
    if t in _BIN:
        sym, p = _BIN[t]
        if t is n.Mod:
            return f"truncmod({_p(e.a, 0)}, {_p(e.b, 0)})"
        if t is n.Div and not e.a.dtype.startswith("float"):
            return f"truncdiv({_p(e.a, 0)}, {_p(e.b, 0)})"
        s = f"{_p(e.a, p)} {sym} {_p(e.b, p + 1)}"
        return f"({s})" if p < prec else s
    if t is n.Var or t is n.SizeVar:
        return e.name
    if t is n.IntImm:
        if e.dtype == "bool":
            return "True" if e.value else "False"
        return str(e.value) if e.dtype in ("int32",) else f"{e.dtype}({e.value})"
    if t is n.FloatImm:
        v = repr(e.value)
        return f"{v}f" if e.dtype == "float32" else f"{e.dtype}({v})"
    if t is n.StringImm:
        return repr(e.value)
    if t is n.Min:
        return f"min({_p(e.a, 0)}, {_p(e.b, 0)})"
    if t is n.Max:
        return f"max({_p(e.a, 0)}, {_p(e.b, 0)})"
    if t is n.Not:
        return f"!{_p(e.a, 6)}"
    if t is n.Select:
        return f"select({_p(e.condition, 0)}, {_p(e.true_value, 0)}, {_p(e.false_value, 0)})"
    if t is n.Cast:
        return f"{e.dtype}({_p(e.value, 0)})"
    if t is n.Call:
        return f"{e.op}({', '.join(_p(a, 0) for a in e.args)})"
    if t is n.Ramp:
        return f"ramp({_p(e.base, 0)}, {_p(e.stride, 0)}, {e.lanes})"
    if t is n.Broadcast:
        return f"x{e.lanes}({_p(e.value, 0)})"
    if t is n.Let:
        return f"(let {e.var.name} = {_p(e.value, 0)} in {_p(e.body, 0)})"
    if t is n.ProducerLoad:
        return f"{e.producer.name}[{', '.join(_p(i, 0) for i in e.indices)}]"
    if t is n.BufferLoad:
        return f"{e.buffer.name}[{', '.join(_p(i, 0) for i in e.indices)}]"
    if t is n.Reduce:
        src = ", ".join(_p(s, 0) for s in e.source)
        ax = ", ".join(getattr(a, "var", a).name for a in e.axis)
        cond = "" if _is_true(e.condition) else f", where={_p(e.condition, 0)}"
        return f"{e.combiner.name}({src}, axis=[{ax}]{cond})"
    return repr(e)


def _is_true(c: Any) -> bool:
    return type(c) is n.IntImm and c.value == 1
