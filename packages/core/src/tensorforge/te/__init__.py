"""Tensor expressions, with TVM's names: placeholder, compute, reduce_axis, reducers, math.

Compute is declared here; how it runs is decided by a schedule (`create_schedule`)."""

from ..expr import floordiv, floormod, truncdiv, truncmod
from .intrin import (
    abs,
    acos,
    acosh,
    all,
    any,
    asin,
    asinh,
    atan,
    atanh,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    cast,
    ceil,
    check_scope,
    const,
    cos,
    cosh,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    fma,
    if_then_else,
    log,
    log1p,
    log2,
    max_expr,
    min_expr,
    pow,
    power,
    reinterpret,
    round,
    rsqrt,
    runtime_check,
    select,
    shift_left,
    shift_right,
    sigmoid,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
)
from .operation import (
    argmax_reducer,
    comm_reducer,
    compute,
    max,
    max_value,
    min,
    min_value,
    placeholder,
    reduce_axis,
    size_var,
    sum,
    thread_axis,
    var,
)
from .tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Tensor
from .tensor_intrin import TensorIntrin, decl_tensor_intrin, get_intrin

__all__ = [name for name in dir() if not name.startswith("_")] + ["create_schedule"]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # `create_schedule` is looked up lazily: tensorforge.schedule imports te.tensor, so an
    # eager import here made `import tensorforge.schedule` (or tir first) a circular import.
    if name == "create_schedule":
        from ..schedule import create_schedule

        return create_schedule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
