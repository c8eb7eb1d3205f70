"""Expressions to C for `CPrinter`: the `ExprPrinter` mixin of the per-kernel printer (see
`c_printer.py`, which holds the statements and the kernel state these methods read: the
dialect `d`, the analyzer `ana`, `name`, `fresh`, `emit`, `ctype`, `status`, `checks`).

Choices made here: `floordiv` / `floormod` print as C `/` and `%` only where the analyzer proves
the operands non-negative; scalar `+ - *` of narrow integers are cast back to their type (C
computes them in int: a wrap must happen before a shift or a compare, as LLVM does); a `Let`
is a constant declared before the statement, substituted only in operands C evaluates lazily
(a branch of `if_then_else`, the right of `&&` / `||`, a checked value).
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import TensorforgeError
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Sub,
    Var,
    substitute,
)
from ..expr import dtype as dt


class CodegenError(TensorforgeError):
    """Something the dialect cannot spell, or a construct the printer does not support."""


_BINARY = {Add: "+", Sub: "-", Mul: "*", EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">",
           GE: ">=", And: "&&", Or: "||"}
#: arithmetic that can leave a narrow integer type's range, and those (scalar) types
_WRAPPING = (Add, Sub, Mul)
_NARROW_INTS = ("int8", "uint8", "int16", "uint16")


class ExprPrinter:
    """Expression methods of the per-kernel printer (`e_<Node>`, `expr`, `math`)."""

    d: Any
    ana: Any
    lazy: int
    names: dict[Any, str]
    checks: list[str]

    def expr(self, e: PrimExpr) -> str:
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            for klass, op in _BINARY.items():
                if isinstance(e, klass):
                    a = self.expr(e.a)  # type: ignore[attr-defined]
                    b = self.lazily(e.b) if klass in (And, Or) else \
                        self.expr(e.b)  # type: ignore[attr-defined]
                    text = f"({a} {op} {b})"
                    if klass in _WRAPPING and e.dtype in _NARROW_INTS:
                        # C computes narrow integers in int: wrap like the type (as LLVM does)
                        return f"(({self.ctype(e.dtype)}){text})"
                    return text
            raise CodegenError(f"{self.d.name} printer: no rule for {type(e).__name__} ({e})")
        return m(e)

    def e_Var(self, e: Var) -> str:
        return self.name(e, e.name)

    e_SizeVar = e_Var

    def e_IntImm(self, e: IntImm) -> str:
        if e.dtype == "bool":
            return "true" if e.value else "false"
        if e.dtype in ("int64", "uint64") and not -(2**31) <= e.value < 2**31:
            return f"{e.value}{self.d.int64_suffix}"
        if e.dtype == "int32":
            return str(e.value) if e.value != -(2**31) else "(-2147483647 - 1)"
        return f"(({self.ctype(e.dtype)}){e.value})"

    def e_FloatImm(self, e: FloatImm) -> str:
        v = e.value
        if math.isnan(v):
            return self.d.nan
        if math.isinf(v):
            return self.d.inf if v > 0 else f"(-{self.d.inf})"
        if e.dtype == "float64":
            return repr(float(v))
        text = f"{v:.9g}"
        if "e" not in text and "." not in text and "n" not in text:
            text += ".0"
        lit = text + self.d.float_suffix
        if e.dtype == "float16" and not self.d.half_storage_only:
            return f"(({self.ctype('float16')}){lit})"
        return lit

    def e_StringImm(self, e: StringImm) -> str:
        return '"' + e.value.replace('"', '\\"') + '"'

    def e_Div(self, e: Div) -> str:
        return f"({self.expr(e.a)} / {self.expr(e.b)})"

    def e_Mod(self, e: Mod) -> str:
        if dt.is_float(e.dtype):
            return self.math("fmod", e.dtype, [e.a, e.b])
        return f"({self.expr(e.a)} % {self.expr(e.b)})"

    def _nonneg_div(self, e: FloorDiv | FloorMod) -> bool:
        return self.ana.can_prove(e.a >= 0) and self.ana.can_prove(e.b > 0)

    def e_FloorDiv(self, e: FloorDiv) -> str:
        if dt.is_float(e.dtype):
            return self.math("floor", e.dtype, [Div(e.a, e.b)])
        if dt.is_uint(e.dtype) or self._nonneg_div(e):
            return f"({self.expr(e.a)} / {self.expr(e.b)})"
        return f"tf_floordiv_{self.ctype(dt.element(e.dtype))}({_strip(self.expr(e.a))}, " \
               f"{_strip(self.expr(e.b))})"

    def e_FloorMod(self, e: FloorMod) -> str:
        if dt.is_float(e.dtype):
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} - {self.math('floor', e.dtype, [Div(e.a, e.b)])} * {b})"
        if dt.is_uint(e.dtype) or self._nonneg_div(e):
            return f"({self.expr(e.a)} % {self.expr(e.b)})"
        return f"tf_floormod_{self.ctype(dt.element(e.dtype))}({_strip(self.expr(e.a))}, " \
               f"{_strip(self.expr(e.b))})"

    def e_Min(self, e: Min) -> str:
        return self.math("min", e.dtype, [e.a, e.b])

    def e_Max(self, e: Max) -> str:
        return self.math("max", e.dtype, [e.a, e.b])

    def e_Not(self, e: Not) -> str:
        return f"(!{self.expr(e.a)})"

    def e_Select(self, e: Select) -> str:
        # both operands of a Select may be evaluated (unlike if_then_else's): lets hoist
        return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : " \
               f"{self.expr(e.false_value)})"

    def lazily(self, e: PrimExpr) -> str:
        """`e` where C may not evaluate it (a branch of ?:, the right of && and ||): lets in it
        are not hoisted above the statement."""
        self.lazy += 1
        try:
            return self.expr(e)
        finally:
            self.lazy -= 1

    def e_Let(self, e: Let) -> str:
        """A let is a constant declared before the statement (once, whatever the number of
        uses: `int_pow`'s chain of squares would double at every step if substituted); where
        C evaluates the expression only sometimes, it is substituted."""
        if self.lazy:
            return self.expr(substitute(e.body, {e.var: e.value}))
        value = _strip(self.expr(e.value))
        name = self.fresh(e.var.name)
        self.emit(f"const {self.ctype(e.var.dtype)} {name} = {value};")
        old = self.names.get(e.var)
        self.names[e.var] = name
        try:
            return self.expr(e.body)
        finally:
            if old is None:
                del self.names[e.var]
            else:
                self.names[e.var] = old

    def e_Cast(self, e: Cast) -> str:
        src, dst = e.value.dtype, e.dtype
        value = self.expr(e.value)
        if self.ctype(src) == self.ctype(dst):
            return value  # e.g. float16 <-> float32 where float16 is storage only
        if dt.is_bool(dst) and dt.lanes(dst) == 1:
            return f"({value} != 0)"
        if dt.is_bool(src) and dt.lanes(src) > 1:
            vt = self.ctype(dst)
            one = self.d.vector_broadcast.format(vtype=vt, value=1)
            zero = self.d.vector_broadcast.format(vtype=vt, value=0)
            return f"({value} ? {one} : {zero})"
        return self.p.cast(self.ctype(dst), value, src, dst)

    def e_Ramp(self, e: Ramp) -> str:
        lanes = [_strip(self.expr(self.ana.simplify(e.base + e.stride * k)))
                 for k in range(e.lanes)]
        return self.d.vector_ctor.format(vtype=self.ctype(e.dtype), args=", ".join(lanes))

    def e_Broadcast(self, e: Broadcast) -> str:
        return self.d.vector_broadcast.format(vtype=self.ctype(e.dtype),
                                              value=_strip(self.expr(e.value)))

    def e_BufferLoad(self, e: BufferLoad) -> str:
        b = e.buffer
        ptr = self.name(b.data, b.name)
        (idx,) = e.indices
        lanes = dt.lanes(e.dtype)
        half = self._half_storage(b)
        is_bool = dt.element(b.dtype) == "bool"
        if lanes == 1:
            i = _strip(self.expr(idx))
            if half:
                return self.d.half_load.format(offset=i, ptr=ptr)
            return f"({ptr}[{i}] != 0)" if is_bool else f"{ptr}[{i}]"
        if _contiguous(idx) and not is_bool:
            off = self.expr(idx.base)  # type: ignore[attr-defined]  # in "ptr + off"
            if half:
                return self.d.half_vector_load.format(lanes=lanes, ptr=ptr, offset=off)
            text = self.p.vector_load(ptr, off, lanes, self.ctype(e.dtype),
                                      self.aligned(b, idx, lanes))
            if text is not None:
                return text
        parts = []
        for k in range(lanes):
            i = self.lane_index(idx, k)
            if half:
                parts.append(self.d.half_load.format(offset=i, ptr=ptr))
            else:
                parts.append(f"({ptr}[{i}] != 0)" if is_bool else f"{ptr}[{i}]")
        vt = self.ctype(e.dtype)
        return self.d.vector_ctor.format(vtype=vt, args=", ".join(parts))

    def e_Call(self, e: Call) -> str:
        op = e.op
        if op == "likely":
            return self.expr(e.args[0])
        if op == "if_then_else":
            c, t, f = e.args
            return f"({self.expr(c)} ? {self.lazily(t)} : {self.lazily(f)})"
        if op == "runtime_check":
            return self.runtime_check(e)
        if op == "address_of":  # of an element: a pointer operand of an intrinsic call
            ld = e.args[0]
            ptr = self.name(ld.buffer.data, ld.buffer.name)
            return f"(&{ptr}[{_strip(self.expr(ld.indices[0]))}])"
        if op in ("tir.shuffle_down", "tir.shuffle_idx"):
            tmpl = self.d.shuffle_down if op == "tir.shuffle_down" else self.d.shuffle_idx
            if tmpl is None:
                raise CodegenError(f"{self.d.name} has no warp shuffles ({op}); the reduction "
                                   "should have lowered to a shared-memory tree")
            v, off, width = (_strip(self.expr(a)) for a in e.args)
            return tmpl.format(value=v, offset=off, width=width)
        if op == "reinterpret":
            half = "float16" in (dt.element(e.dtype), dt.element(e.args[0].dtype))
            if self.d.reinterpret is None or (half and self.d.half_storage_only):
                raise CodegenError(f"{self.d.name} cannot reinterpret bits ({e.args[0].dtype} "
                                   f"as {e.dtype}): no reinterpret spelling, or half is "
                                   "storage only")
            return self.d.reinterpret.format(_strip(self.expr(e.args[0])),
                                             type=self.ctype(e.dtype))
        dtype = e.args[0].dtype if e.args else e.dtype
        return self.math(op, dtype, list(e.args))

    def runtime_check(self, e: Call) -> str:
        """`runtime_check(value, ok, description)`: where `ok` fails, the kernel's status says
        which check (the host raises with its description) and a safe stand-in replaces the
        value (index 0, divisor 1), so the rest of the kernel reads nothing out of bounds."""
        value, ok, desc = e.args
        if dt.lanes(value.dtype) > 1:
            raise CodegenError(f"{self.d.name} printer: a vector runtime_check reached the "
                               "printer; legalize splits those per lane")
        text = desc.value if isinstance(desc, StringImm) else ""
        safe = 1 if '"kind": "div_zero"' in text else 0
        return (f"({self.expr(ok)} ? {self.lazily(value)} : (tf_status[0] = {self.status(text)}, "
                f"({self.ctype(value.dtype)}){safe}))")

    def math(self, op: str, dtype: str, args: list[PrimExpr]) -> str:
        elem = dt.element(dtype)
        if elem == "float16" and self.d.half_storage_only:
            elem = "float32"
        tmpl = self.d.math_template(op, elem)
        if tmpl is None:
            raise CodegenError(f"{self.d.name} has no spelling for {op}({dtype}); add it to "
                               "the dialect's math table")
        ctype = self.ctype(dtype) if "{type}" in tmpl else ""
        return tmpl.format(*[_strip(self.expr(a)) for a in args], type=ctype)



def _contiguous(idx: PrimExpr) -> bool:
    return isinstance(idx, Ramp) and isinstance(idx.stride, IntImm) and idx.stride.value == 1


def _strip(text: str) -> str:
    """Drop one pair of enclosing parentheses (the statement context does not need them)."""
    if len(text) >= 2 and text[0] == "(" and text[-1] == ")":
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(text) - 1:
                return text
        return text[1:-1]
    return text


