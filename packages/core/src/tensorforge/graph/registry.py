"""The op registry: for every graph op its pattern class (drives fusion), type inference,
a numpy reference (constant folding and tests) and a TE compute (code generation)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from ..errors import TensorforgeError


class OpPattern(IntEnum):
    """TVM's fusion classes, ordered: a lower value fuses more freely."""

    ELEMWISE = 0  # out[i] = f(in[i])
    BROADCAST = 1  # elementwise with broadcasting
    INJECTIVE = 2  # each output element reads one input element (reshape, transpose, concat)
    COMM_REDUCE = 3  # reductions
    OUT_ELEMWISE_FUSABLE = 4  # complex ops whose output takes an elementwise epilogue (conv2d)
    OPAQUE = 8  # stands alone


TypeList = list[tuple[tuple[int, ...], str]]
InferFn = Callable[[TypeList, dict[str, Any]], TypeList]
ReferenceFn = Callable[[list[np.ndarray], dict[str, Any]], list[np.ndarray]]
ComputeFn = Callable[..., list[Any]]


@dataclass(frozen=True)
class OpDef:
    """`compute(inputs: list[te.Tensor], attrs, out_types) -> list[te.Tensor]`.
    `index_inputs`: positions of inputs whose values are indices into another input (checked
    at run time; fusion keeps their producers out of the group so the error path can read
    the offending value from the kernel's arguments). `gpu` False: core's generic GPU
    schedule must not take the op (it runs on the host unless a GPU target registers a
    strategy for it)."""

    name: str
    pattern: OpPattern
    infer: InferFn
    reference: ReferenceFn
    compute: ComputeFn | None = None
    doc: str = ""
    index_inputs: tuple[int, ...] = ()
    gpu: bool = True


_OPS: dict[str, OpDef] = {}


class UnknownOpError(TensorforgeError, KeyError):
    pass


def register_op(name: str, pattern: OpPattern, infer: InferFn, reference: ReferenceFn,
                compute: ComputeFn | None = None, doc: str = "",
                index_inputs: tuple[int, ...] = (), *, gpu: bool = True) -> OpDef:
    if name in _OPS:
        raise TensorforgeError(f"graph op {name!r} is registered twice")
    d = OpDef(name, pattern, infer, reference, compute, doc, tuple(index_inputs), gpu)
    _OPS[name] = d
    return d


def get_op(name: str) -> OpDef:
    _ensure_loaded()
    d = _OPS.get(name)
    if d is None:
        raise UnknownOpError(
            f"graph op {name!r} is not registered; known ops: {', '.join(sorted(_OPS))}"
        )
    return d


def all_ops() -> dict[str, OpDef]:
    _ensure_loaded()
    return dict(_OPS)


_LOADED = False


def _ensure_loaded() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from . import ops  # noqa: F401  (registers the built-in ops)


def dim_of(s: Any) -> Any:
    """A TE shape entry as an int when static, else the expression itself (a symbolic size of
    `compiler.symbolic`): computes that only do arithmetic on a dim take either."""
    value = getattr(s, "value", None)
    return int(value) if value is not None else s


def require(ok: bool, message: str) -> None:
    """Type inference's check of its inputs: a TensorforgeError with `message` unless `ok`."""
    if not ok:
        raise TensorforgeError(message)


def require_rank(types: TypeList, index: int, rank: int | tuple[int, ...], op: str,
                 what: str = "") -> None:
    ranks = (rank,) if isinstance(rank, int) else rank
    require(index < len(types), f"{op}: missing input {index} ({what or 'an input'})")
    shape = types[index][0]
    require(len(shape) in ranks, f"{op}: input {index}{f' ({what})' if what else ''} has "
            f"shape {list(shape)}, expected rank {' or '.join(map(str, ranks))}")


def same_as_input(index: int = 0) -> InferFn:
    def infer(types: TypeList, attrs: dict[str, Any]) -> TypeList:
        return [types[index]]

    return infer


def broadcast_shapes(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise TensorforgeError(
            f"shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast"
        ) from None
