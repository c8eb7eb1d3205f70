"""Calls: math intrinsics, `likely`, and the lazy `if_then_else`.

Scalars use LLVM intrinsics (llvm.exp.f32 ...) or libm (tanhf, erff), which are exact to an
ulp or so. Float32 vectors of exp / tanh / sigmoid / erf use the polynomials in
`vecmath.py`, so softmax and activation loops stay vectorized instead of becoming one libm call
per lane. Other vector math goes through the LLVM vector intrinsic (the backend scalarizes it
into libm calls where the CPU has no instruction).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tensorforge.expr import Call
from tensorforge.expr import dtype as dt

from . import vecmath
from .codegen_expr import F32, I1, ExprEmitter, ll_type
from .dot4 import DOT4, emit_dot4

# ops that are one LLVM intrinsic on every float type
_LLVM_UNARY = {"exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
               "log10": "llvm.log10", "sqrt": "llvm.sqrt", "floor": "llvm.floor",
               "ceil": "llvm.ceil", "round": "llvm.roundeven", "trunc": "llvm.trunc",
               "nearbyint": "llvm.nearbyint", "sin": "llvm.sin", "cos": "llvm.cos"}
# ops that are libm calls (float, double)
_LIBM = {"tanh": ("tanhf", "tanh"), "erf": ("erff", "erf"), "tan": ("tanf", "tan"),
         "atan": ("atanf", "atan"), "log1p": ("log1pf", "log1p"), "expm1": ("expm1f", "expm1"),
         "asin": ("asinf", "asin"), "acos": ("acosf", "acos"), "sinh": ("sinhf", "sinh"),
         "cosh": ("coshf", "cosh"), "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"),
         "atanh": ("atanhf", "atanh")}
# integer bit operations (C semantics; shift amounts are guarded by the op that emits them)
_BIT_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")
# vector float32 polynomials
_VECTOR_F32: dict[str, Callable[[ExprEmitter, ir.Value], ir.Value]] = {
    "exp": vecmath.exp, "tanh": vecmath.tanh, "sigmoid": vecmath.sigmoid, "erf": vecmath.erf,
}

SUPPORTED_OPS = sorted({*_LLVM_UNARY, *_LIBM, *_BIT_OPS, "sigmoid", "rsqrt", "pow", "fabs",
                        "abs", "fma", "likely", "if_then_else", "runtime_check", "reinterpret",
                        DOT4})


def emit_call(em: ExprEmitter, e: Call) -> ir.Value:
    op = e.op
    if op == "likely":
        return em.expr(e.args[0])
    if op == "if_then_else":
        return _if_then_else(em, e)
    if op == "runtime_check":
        return _runtime_check(em, e)
    if op in ("abs", "fabs") and not dt.is_float(e.args[0].dtype):
        return _int_abs(em, em.expr(e.args[0]), e.args[0].dtype)
    if op in _BIT_OPS:
        return _bit_op(em, e)
    if op == DOT4:
        return emit_dot4(em, e)
    if op == "reinterpret":
        return em.b.bitcast(em.expr(e.args[0]), ll_type(e.dtype))
    if op not in SUPPORTED_OPS:
        raise em.bug(f"call to unknown intrinsic {op!r} in {e} (supported: "
                     f"{', '.join(SUPPORTED_OPS)})")
    args = [em.expr(a) for a in e.args]
    for a in e.args:
        if not dt.is_float(a.dtype):
            raise em.bug(f"math call {op!r} needs float arguments, got {a.dtype} in {e}")
    t = args[0].type
    lanes = dt.lanes(e.dtype)
    if lanes > 1:
        args = [a if isinstance(a.type, ir.VectorType) else em.splat(a, lanes) for a in args]
        t = args[0].type
    elem = t.element if isinstance(t, ir.VectorType) else t
    # half precision: compute in float32
    if isinstance(elem, ir.HalfType):
        wide = ll_type(dt.with_lanes("float32", lanes))
        r = _float_call(em, op, [em.b.fpext(a, wide) for a in args], lanes)
        return em.b.fptrunc(r, t)
    return _float_call(em, op, args, lanes)


def _float_call(em: ExprEmitter, op: str, args: list[ir.Value], lanes: int) -> ir.Value:
    b = em.b
    x = args[0]
    t = x.type
    elem = t.element if isinstance(t, ir.VectorType) else t
    if lanes > 1 and elem == F32 and op in _VECTOR_F32:
        return _VECTOR_F32[op](em, x)
    if op in _LLVM_UNARY:
        return em.call_intrinsic(_LLVM_UNARY[op], [x])
    if op in ("fabs", "abs"):
        return em.call_intrinsic("llvm.fabs", [x])
    if op == "pow":
        return em.call_intrinsic("llvm.pow", args[:2])
    if op == "fma":
        return em.call_intrinsic("llvm.fma", args[:3])
    if op == "rsqrt":
        return b.fdiv(em.const(t, 1.0), em.call_intrinsic("llvm.sqrt", [x]))
    if op == "sigmoid":
        ex = em.call_intrinsic("llvm.exp", [b.fneg(x)])
        return b.fdiv(em.const(t, 1.0), b.fadd(em.const(t, 1.0), ex))
    names = _LIBM[op]
    name = names[0] if elem == F32 else names[1]
    fn = em.declare(name, elem, [elem])
    if lanes == 1:
        return b.call(fn, [x])
    return em.gather_lanes([b.call(fn, [v]) for v in em.lanes_of(x)])


def _bit_op(em: ExprEmitter, e: Call) -> ir.Value:
    lanes = dt.lanes(e.dtype)
    a, c = (_widen(em, em.expr(x), x.dtype, lanes) for x in e.args)
    b = em.b
    if e.op == "shift_right":
        return b.lshr(a, c) if dt.is_uint(e.dtype) or dt.is_bool(e.dtype) else b.ashr(a, c)
    fn = {"bitwise_and": b.and_, "bitwise_or": b.or_, "bitwise_xor": b.xor,
          "shift_left": b.shl}[e.op]
    return fn(a, c)


def _int_abs(em: ExprEmitter, x: ir.Value, dtype: str) -> ir.Value:
    if dt.is_uint(dtype) or dt.is_bool(dtype):
        return x
    b = em.b
    neg = b.icmp_signed("<", x, em.zero(x.type))
    return b.select(neg, b.sub(em.zero(x.type), x), x)


def _if_then_else(em: ExprEmitter, e: Call) -> ir.Value:
    """Lazy select: only the chosen side is evaluated (it may read out of bounds otherwise)."""
    cond_e, t_e, f_e = e.args
    if dt.lanes(cond_e.dtype) > 1:
        return _masked_select(em, e)
    b = em.b
    cond = em.expr(cond_e)
    then = em.fn.append_basic_block("ite_then")
    other = em.fn.append_basic_block("ite_else")
    merge = em.fn.append_basic_block("ite_end")
    b.cbranch(cond, then, other)
    lanes = dt.lanes(e.dtype)
    b.position_at_end(then)
    tv = _widen(em, em.expr(t_e), t_e.dtype, lanes)
    then_end = b.block
    b.branch(merge)
    b.position_at_end(other)
    fv = _widen(em, em.expr(f_e), f_e.dtype, lanes)
    else_end = b.block
    b.branch(merge)
    b.position_at_end(merge)
    if tv.type != fv.type:
        raise em.bug(f"if_then_else branches have different types in {e}")
    phi = b.phi(tv.type)
    phi.add_incoming(tv, then_end)
    phi.add_incoming(fv, else_end)
    return phi


def _widen(em: ExprEmitter, v: ir.Value, dtype: str, lanes: int) -> ir.Value:
    return em.splat(v, lanes) if lanes > 1 and dt.lanes(dtype) == 1 else v


def _masked_select(em: ExprEmitter, e: Call) -> ir.Value:
    cond_e, t_e, f_e = e.args
    b = em.b
    lanes = dt.lanes(cond_e.dtype)
    cond = em.expr(cond_e)
    outer = em.mask
    not_cond = b.xor(cond, em.const(cond.type, 1))
    try:
        em.mask = cond if outer is None else b.and_(outer, cond)
        tv = _widen(em, em.expr(t_e), t_e.dtype, lanes)
        em.mask = not_cond if outer is None else b.and_(outer, not_cond)
        fv = _widen(em, em.expr(f_e), f_e.dtype, lanes)
    finally:
        em.mask = outer
    return b.select(cond, tv, fv)


def _runtime_check(em: ExprEmitter, e: Call) -> ir.Value:
    """`runtime_check(value, ok, description)`: leave the kernel with the description's status
    where `ok` is false (in any active lane of a vector; lanes a lazy `if_then_else` rules out
    do not count), else `value`."""
    value_e, ok_e, text = e.args
    b = em.b
    ok = em.expr(ok_e)
    mask = em.mask
    if isinstance(ok.type, ir.VectorType):
        if mask is not None:
            ok = b.or_(ok, b.xor(mask, em.const(mask.type, 1)))
        fn = em.declare(f"llvm.vector.reduce.and.v{ok.type.count}i1", I1, [ok.type])
        ok = b.call(fn, [ok])
    elif mask is not None:  # a scalar check under a vector mask: counts if any lane is on
        fn = em.declare(f"llvm.vector.reduce.or.v{mask.type.count}i1", I1, [mask.type])
        ok = b.or_(ok, b.xor(b.call(fn, [mask]), ir.Constant(I1, 1)))
    em.branch_fail(ok, em.status_code(text.value), "check")  # type: ignore[attr-defined]
    return em.expr(value_e)
