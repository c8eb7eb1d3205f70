"""Expressions of the flattened loop IR -> LLVM IR values (llvmlite.ir).

Semantics chosen here, all matching numpy / C:
- integer `Div`/`Mod` truncate (C), `FloorDiv`/`FloorMod` floor (Python), with the sign fixup;
- integer arithmetic wraps, except in buffer indices where overflow is already a bug: there
  `nsw` lets LLVM widen and strength-reduce the address arithmetic;
- float arithmetic is IEEE with only the `contract` flag (FMA formation), never `reassoc`;
- a vector `if_then_else` evaluates its branches under a lane mask: their loads become masked
  loads/gathers, so the lanes the condition rules out never touch memory.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from llvmlite import ir

from tensorforge.errors import TensorforgeError
from tensorforge.expr import (
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
    Sub,
    Var,
)
from tensorforge.expr import dtype as dt

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
PTR = ir.PointerType()
#: kernels (and their parallel bodies) align their own stack frames (`alignstack`): vector
#: spills and stack buffers then sit on 64-byte lines whatever the caller's stack phase. The
#: ABI promises 16 bytes, and LLVM spilled 64-byte registers unaligned without it, which cost
#: the DQN's kernels 7% in three of the four 16-byte phases a caller's stack can have
STACK_ALIGN = 64
FLOAT_FLAGS = ("contract",)
_FLOATS = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


@cache
def ll_type(dtype: str, memory: bool = False) -> ir.Type:
    """The LLVM type of `dtype` in registers (bool = i1) or in memory (bool = i8)."""
    d = dt.parse(dtype)
    if d.code == "float":
        if d.bits not in _FLOATS:
            raise TensorforgeError(f"dtype {dtype!r} is not supported by the llvm target")
        t: ir.Type = _FLOATS[d.bits]
    elif d.code == "bool":
        t = I8 if memory else I1
    elif d.code == "handle":
        t = PTR
    else:
        t = ir.IntType(d.bits)
    return ir.VectorType(t, d.lanes) if d.lanes > 1 else t


def const_int(value: Any) -> int | None:
    if isinstance(value, IntImm):
        return value.value
    return None


class CodegenBug(TensorforgeError):
    """Malformed IR reached the code generator (a bug upstream of it)."""


class ExprEmitter:
    """Emits expressions into `self.b` (an IRBuilder) of one LLVM function.

    `vars` maps IR `Var`s (loop variables, lets, parameters, buffer data pointers) to LLVM
    values. Subclasses add statements; `ctx` is the module-wide state (declarations, names).
    """

    def __init__(self, ctx: Any, func_name: str, fn: ir.Function):
        self.ctx = ctx
        self.func_name = func_name
        self.fn = fn
        self.b = ir.IRBuilder()
        self.vars: dict[Var, ir.Value] = {}
        self.mask: ir.Value | None = None
        # under a `pragma_prefetch` (codegen_stmt): (distance in elements, addresses done)
        self.prefetch: tuple[int, set[tuple[str, str]]] | None = None
        self.index_ctx = False
        self._dispatch: dict[type, Callable[[Any], ir.Value]] = {
            Var: self._var, IntImm: self._int, FloatImm: self._float, Add: self._add,
            Sub: self._sub, Mul: self._mul, Div: self._div, Mod: self._mod,
            FloorDiv: self._floordiv, FloorMod: self._floormod, Min: self._min, Max: self._max,
            EQ: self._cmp, NE: self._cmp, LT: self._cmp, LE: self._cmp, GT: self._cmp,
            GE: self._cmp, And: self._and, Or: self._or, Not: self._not, Select: self._select,
            Cast: self._cast, Call: self._call, Ramp: self._ramp, Broadcast: self._broadcast,
            Let: self._let, BufferLoad: self._load,
        }

    # entry -------------------------------------------------------------------------------
    def expr(self, e: PrimExpr) -> ir.Value:
        fn = self._dispatch.get(type(e))
        if fn is None:
            for klass in type(e).__mro__[1:]:
                fn = self._dispatch.get(klass)
                if fn is not None:
                    self._dispatch[type(e)] = fn
                    break
            else:
                raise self.bug(f"unsupported expression node {type(e).__name__}: {e}")
        return fn(e)

    def index(self, e: PrimExpr) -> ir.Value:
        """An address computation: integer overflow here is out of bounds anyway (nsw)."""
        old, self.index_ctx = self.index_ctx, True
        try:
            return self.expr(e)
        finally:
            self.index_ctx = old

    def bug(self, what: str) -> CodegenBug:
        return CodegenBug(
            f"llvm codegen of PrimFunc {self.func_name!r}: {what}; this is a compiler bug; "
            "please report it with the printed IR"
        )

    # leaves ------------------------------------------------------------------------------
    def _var(self, e: Var) -> ir.Value:
        try:
            return self.vars[e]
        except KeyError:
            raise self.bug(f"variable {e.name!r} is used but not defined (not a parameter, "
                           "loop variable or let binding in scope)") from None

    def _int(self, e: IntImm) -> ir.Value:
        return ir.Constant(ll_type(e.dtype), e.value)

    def _float(self, e: FloatImm) -> ir.Value:
        return ir.Constant(ll_type(e.dtype), e.value)

    # arithmetic --------------------------------------------------------------------------
    def _operands(self, e: Any) -> tuple[ir.Value, ir.Value, str]:
        a, b = self.expr(e.a), self.expr(e.b)
        la, lb = dt.lanes(e.a.dtype), dt.lanes(e.b.dtype)
        if la != lb:  # a scalar meeting a vector: broadcast it
            if la == 1:
                a = self.splat(a, lb)
            elif lb == 1:
                b = self.splat(b, la)
            else:
                raise self.bug(f"lane counts {la} and {lb} differ in {e}")
        if a.type != b.type:
            raise self.bug(f"operand types {e.a.dtype} and {e.b.dtype} differ in {e}")
        return a, b, e.a.dtype if la >= lb else e.b.dtype

    def _int_flags(self, dtype: str) -> tuple[str, ...]:
        return ("nsw",) if self.index_ctx and not dt.is_uint(dtype) else ()

    def _add(self, e: Add) -> ir.Value:
        for acc, term in ((e.a, e.b), (e.b, e.a)):
            if isinstance(term, Call) and term.op == "dot4_u8s8":  # VNNI: one vpdpbusd
                from .dot4 import emit_dot4

                return emit_dot4(self, term, self.expr(acc))
        a, b, t = self._operands(e)
        if dt.is_float(t):
            return self.b.fadd(a, b, flags=FLOAT_FLAGS)
        return self.b.add(a, b, flags=self._int_flags(t))

    def _sub(self, e: Sub) -> ir.Value:
        a, b, t = self._operands(e)
        if dt.is_float(t):
            return self.b.fsub(a, b, flags=FLOAT_FLAGS)
        return self.b.sub(a, b, flags=self._int_flags(t))

    def _mul(self, e: Mul) -> ir.Value:
        a, b, t = self._operands(e)
        if dt.is_float(t):
            return self.b.fmul(a, b, flags=FLOAT_FLAGS)
        return self.b.mul(a, b, flags=self._int_flags(t))

    def _div(self, e: Div) -> ir.Value:
        a, b, t = self._operands(e)
        if dt.is_float(t):
            return self.b.fdiv(a, b, flags=FLOAT_FLAGS)
        if self._unsigned(t):
            return self.b.udiv(a, self._safe_divisor(e, b, t)[0])
        safe, minus_one = self._safe_divisor(e, b, t)
        return self._neg_if(minus_one, a, self.b.sdiv(a, safe))

    def _mod(self, e: Mod) -> ir.Value:
        a, b, t = self._operands(e)
        if dt.is_float(t):
            return self.b.frem(a, b)
        safe = self._safe_divisor(e, b, t)[0]
        return self.b.urem(a, safe) if self._unsigned(t) else self.b.srem(a, safe)

    def _safe_divisor(self, e: Any, b: ir.Value, t: str) -> tuple[ir.Value, ir.Value | None]:
        """(divisor, "divisor is -1" or None): a divisor that is not a constant other than 0
        and -1 is replaced by 1 where it is 0 or -1, so the division cannot trap (x86 `idiv`
        faults on x / 0 and INT_MIN / -1, which LLVM calls undefined). Callers give x / -1
        the wrapped -x (numpy's INT_MIN / -1 = INT_MIN) and x % -1 = 0; a zero divisor from
        the data is caught before by the op's check (`runtime_check`), else it gives 0."""
        c = e.b.value if isinstance(e.b, Broadcast) else e.b
        if isinstance(c, IntImm) and c.value not in (0, -1):
            return b, None
        zero = self.b.icmp_signed("==", b, self.zero(b.type))
        if self._unsigned(t):
            return self.b.select(zero, self.const(b.type, 1), b), None
        minus_one = self.b.icmp_signed("==", b, self.const(b.type, -1))
        bad = self.b.or_(zero, minus_one)
        return self.b.select(bad, self.const(b.type, 1), b), minus_one

    def _neg_if(self, cond: ir.Value | None, a: ir.Value, q: ir.Value) -> ir.Value:
        if cond is None:
            return q
        return self.b.select(cond, self.b.sub(self.zero(a.type), a), q)

    @staticmethod
    def _unsigned(t: str) -> bool:
        return dt.is_uint(t) or dt.is_bool(t)

    def _floordiv(self, e: FloorDiv) -> ir.Value:
        a, b, t = self._operands(e)
        if dt.is_float(t):
            return self.call_intrinsic("llvm.floor", [self.b.fdiv(a, b)])
        safe, minus_one = self._safe_divisor(e, b, t)
        if self._unsigned(t):
            return self.b.udiv(a, safe)
        q = self.b.sdiv(a, safe)
        # q - 1 when the remainder is non-zero and its sign differs from the divisor's
        need = self._floor_fixup(a, safe, self.b.srem(a, safe))
        return self._neg_if(minus_one, a, self.b.sub(q, self.b.zext(need, a.type)))

    def _floormod(self, e: FloorMod) -> ir.Value:
        a, b, t = self._operands(e)
        if dt.is_float(t):
            q = self.call_intrinsic("llvm.floor", [self.b.fdiv(a, b)])
            return self.b.fsub(a, self.b.fmul(q, b))
        safe = self._safe_divisor(e, b, t)[0]
        if self._unsigned(t):
            return self.b.urem(a, safe)
        r = self.b.srem(a, safe)
        need = self._floor_fixup(a, safe, r)
        return self.b.select(need, self.b.add(r, safe), r)

    def _floor_fixup(self, a: ir.Value, b: ir.Value, r: ir.Value) -> ir.Value:
        zero = self.zero(a.type)
        nonzero = self.b.icmp_signed("!=", r, zero)
        signs_differ = self.b.icmp_signed("<", self.b.xor(r, b), zero)
        return self.b.and_(nonzero, signs_differ)

    def _min(self, e: Min) -> ir.Value:
        a, b, t = self._operands(e)
        return self.b.select(self._pick_first("<=", a, b, t), a, b)

    def _max(self, e: Max) -> ir.Value:
        a, b, t = self._operands(e)
        return self.b.select(self._pick_first(">=", a, b, t), a, b)

    def _pick_first(self, op: str, a: ir.Value, b: ir.Value, t: str) -> ir.Value:
        """Whether min/max returns `a`: `a op b`, and for floats also when `a` is NaN
        (NaN in either operand propagates, as numpy and ONNX Runtime; `max(-0.0, 0.0)` is
        -0.0; see `tensorforge.expr.numeric`). A plain `a > b ? a : b` drops a NaN `a`,
        which turned Relu(NaN) into 0."""
        first = self._compare(op, a, b, t)
        if not dt.is_float(t):
            return first
        return self.b.or_(first, self.b.fcmp_unordered("uno", a, a))

    # comparisons and logic ---------------------------------------------------------------
    _CMP_OPS = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}

    def _cmp(self, e: Any) -> ir.Value:
        a, b, t = self._operands(e)
        return self._compare(self._CMP_OPS[type(e)], a, b, t)

    def _compare(self, op: str, a: ir.Value, b: ir.Value, t: str) -> ir.Value:
        if dt.is_float(t):
            # ordered, except != which is true for NaN (as in C and numpy)
            if op == "!=":
                return self.b.fcmp_unordered(op, a, b)
            return self.b.fcmp_ordered(op, a, b)
        if self._unsigned(t):
            return self.b.icmp_unsigned(op, a, b)
        return self.b.icmp_signed(op, a, b)

    def _and(self, e: And) -> ir.Value:
        a, b, _ = self._operands(e)
        return self.b.and_(a, b)

    def _or(self, e: Or) -> ir.Value:
        a, b, _ = self._operands(e)
        return self.b.or_(a, b)

    def _not(self, e: Not) -> ir.Value:
        a = self.expr(e.a)
        return self.b.xor(a, self.const(a.type, -1 if dt.is_int(e.a.dtype) else 1))

    def _select(self, e: Select) -> ir.Value:
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        lanes = dt.lanes(e.dtype)
        if lanes > 1:
            if dt.lanes(e.true_value.dtype) == 1:
                t = self.splat(t, lanes)
            if dt.lanes(e.false_value.dtype) == 1:
                f = self.splat(f, lanes)
        if t.type != f.type:
            raise self.bug(f"select branches have different types in {e}")
        return self.b.select(c, t, f)

    def _let(self, e: Let) -> ir.Value:
        old = self.vars.get(e.var)
        self.vars[e.var] = self.expr(e.value)
        try:
            return self.expr(e.body)
        finally:
            if old is None:
                del self.vars[e.var]
            else:
                self.vars[e.var] = old

    # casts -------------------------------------------------------------------------------
    def _cast(self, e: Cast) -> ir.Value:
        return self.cast(self.expr(e.value), e.value.dtype, e.dtype)

    def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value:
        """Convert like numpy's `astype` (wrapping integer narrowing, truncating float->int)."""
        s, d = dt.parse(src), dt.parse(dst)
        if s.lanes == 1 and d.lanes > 1:
            v = self.splat(v, d.lanes)
            s = dt.parse(dt.with_lanes(src, d.lanes))
        to = ll_type(dt.with_lanes(dst, s.lanes))
        if v.type == to and s.code == d.code:
            return v
        b = self.b
        if d.code == "bool":
            if s.code == "float":
                return b.fcmp_unordered("!=", v, self.zero(v.type))
            return b.icmp_unsigned("!=", v, self.zero(v.type))
        if s.code == "float" and d.code == "float":
            if s.bits == d.bits:
                return v
            if d.bits > s.bits:
                return b.fpext(v, to)
            if s.bits == 64 and d.bits == 16:  # no instruction and no libcall in the JIT:
                v = b.fptrunc(v, ll_type(dt.with_lanes("float32", s.lanes)))  # via float32
            return b.fptrunc(v, to)
        if s.code == "float":
            return self._float_to_int(v, s, d, to)
        if d.code == "float":  # int/bool -> float
            return b.uitofp(v, to) if self._unsigned(src) else b.sitofp(v, to)
        # int/bool -> int
        if d.bits < s.bits:
            return b.trunc(v, to)
        if d.bits > s.bits:
            return b.zext(v, to) if self._unsigned(src) else b.sext(v, to)
        return v

    def _float_to_int(self, v: ir.Value, s: Any, d: Any, to: ir.Type) -> ir.Value:
        """float -> int as x86 code compiled from C does (`tensorforge.expr.numeric`): a
        plain `fptosi` of NaN or an out-of-range value is poison in LLVM."""
        b = self.b
        if s.bits == 16:  # compare in float32 (2**31 overflows half)
            v = b.fpext(v, ll_type(dt.with_lanes("float32", s.lanes)))
        if d.bits < 32:  # through int32, then wrap
            return b.trunc(self._x86_fptosi(v, 32, s.lanes), to)
        if d.code == "int":
            return self._x86_fptosi(v, d.bits, s.lanes)
        half = float(2 ** (d.bits - 1))
        big = b.fcmp_ordered(">=", v, self.const(v.type, half))
        low = self._x86_fptosi(v, d.bits, s.lanes)
        high = b.xor(self._x86_fptosi(b.fsub(v, self.const(v.type, half)), d.bits, s.lanes),
                     self.const(low.type, -(2 ** (d.bits - 1))))
        return b.select(big, high, low)

    def _x86_fptosi(self, v: ir.Value, bits: int, lanes: int) -> ir.Value:
        """`cvttss2si`: truncation, or INT_MIN for NaN and values that do not fit."""
        b = self.b
        it = ll_type(dt.with_lanes(f"int{bits}", lanes))
        lim = float(2 ** (bits - 1))
        ok = b.and_(b.fcmp_ordered(">", v, self.const(v.type, -lim)),
                    b.fcmp_ordered("<", v, self.const(v.type, lim)))
        return b.select(ok, b.fptosi(v, it), self.const(it, -(2 ** (bits - 1))))

    # vectors -----------------------------------------------------------------------------
    def _broadcast(self, e: Broadcast) -> ir.Value:
        v = e.value
        if isinstance(v, (IntImm, FloatImm)):
            return ir.Constant(ll_type(e.dtype), [v.value] * e.lanes)
        return self.splat(self.expr(v), e.lanes)

    def _ramp(self, e: Ramp) -> ir.Value:
        base, stride = const_int(e.base), const_int(e.stride)
        vt = ll_type(e.dtype)
        if base is not None and stride is not None:
            return ir.Constant(vt, [base + k * stride for k in range(e.lanes)])
        flags = self._int_flags(e.base.dtype)
        vbase = self.splat(self.expr(e.base), e.lanes)
        if stride is not None:
            steps = ir.Constant(vt, [k * stride for k in range(e.lanes)])
        else:
            steps = self.b.mul(self.splat(self.expr(e.stride), e.lanes),
                               ir.Constant(vt, list(range(e.lanes))), flags=flags)
        return self.b.add(vbase, steps, flags=flags)

    def splat(self, v: ir.Value, lanes: int) -> ir.Value:
        if isinstance(v, ir.Constant) and not isinstance(v.type, ir.VectorType):
            return ir.Constant(ir.VectorType(v.type, lanes), [v.constant] * lanes)
        vt = ir.VectorType(v.type, lanes)
        one = self.b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(I32, 0))
        return self.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))

    def zero(self, t: ir.Type) -> ir.Value:
        return self.const(t, 0)

    @staticmethod
    def const(t: ir.Type, value: Any) -> ir.Constant:
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [value] * t.count)
        return ir.Constant(t, value)

    def lanes_of(self, v: ir.Value) -> list[ir.Value]:
        return [self.b.extract_element(v, ir.Constant(I32, k)) for k in range(v.type.count)]

    def gather_lanes(self, values: list[ir.Value]) -> ir.Value:
        vt = ir.VectorType(values[0].type, len(values))
        out: ir.Value = ir.Constant(vt, ir.Undefined)
        for k, x in enumerate(values):
            out = self.b.insert_element(out, x, ir.Constant(I32, k))
        return out

    # calls -------------------------------------------------------------------------------
    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        return self.ctx.declare(name, ret, args)

    def call_intrinsic(self, base: str, args: list[ir.Value], suffix_types: int = 1) -> ir.Value:
        """Call `base.<type>` (llvm.sqrt.f32, llvm.exp.v8f32 ...) on `args` of one type."""
        t = args[0].type
        name = f"{base}.{_mangle(t)}"
        return self.b.call(self.declare(name, t, [a.type for a in args]), args)

    def _call(self, e: Call) -> ir.Value:
        from .intrinsics import emit_call

        return emit_call(self, e)

    # memory ------------------------------------------------------------------------------
    def buffer_ptr(self, buffer: Any) -> ir.Value:
        try:
            return self.vars[buffer.data]
        except KeyError:
            raise self.bug(f"buffer {buffer.name!r} is used but neither a parameter nor "
                           "allocated in scope") from None

    def _access(self, buffer: Any, indices: tuple[PrimExpr, ...]) -> tuple[ir.Value, PrimExpr]:
        if len(indices) != 1:
            raise self.bug(f"access to buffer {buffer.name!r} has {len(indices)} indices; "
                           "codegen expects flattened 1-D accesses (storage_flatten)")
        return self.buffer_ptr(buffer), indices[0]

    def _load(self, e: BufferLoad) -> ir.Value:
        from .memory import emit_load

        ptr, idx = self._access(e.buffer, e.indices)
        return emit_load(self, e.buffer, ptr, idx)


def _mangle(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_mangle(t.element)}"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    raise TypeError(f"cannot mangle {t}")
