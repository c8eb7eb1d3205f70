"""Shape and layout ops: reshape, transpose, concat."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import IntImm
from ...ops import transpose as te_transpose
from ..registry import OpPattern, TypeList, dim_of, register_op, require


def _size(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _reshape_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape = tuple(int(d) for d in at["shape"])
    require(all(d >= 0 for d in shape) and _size(shape) == _size(types[0][0]),
            f"reshape: cannot reshape {list(types[0][0])} ({_size(types[0][0])} elements) "
            f"to {list(shape)}")
    return [(shape, types[0][1])]


def _transpose_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, perm = types[0][0], [int(p) for p in at["perm"]]
    require(sorted(perm) == list(range(len(shape))), f"transpose: perm {perm} is not a "
            f"permutation of the {len(shape)} axes of {list(shape)}")
    return [(tuple(shape[p] for p in perm), types[0][1])]


def _same_dim(a: Any, b: Any) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return isinstance(a, int) and isinstance(b, int) and a == b
    from ...expr.structural import structural_equal

    return structural_equal(a, b)


def _symbolic_reshape(x: Any, in_shape: list[Any], shape: list[Any]) -> Any:
    """The reshape's source index without division by a symbolic size: unit dims dropped,
    equal leading and trailing dims of both shapes mapped one to one, and only the middle
    (static) dims through the flat index. `(1, seq, 768) -> (seq, 768)` reads x[0, i, j]."""
    ins = [d for d, e in enumerate(in_shape) if not (isinstance(e, int) and e == 1)]
    outs = [d for d, e in enumerate(shape) if not (isinstance(e, int) and e == 1)]
    a = b = 0
    while a < len(ins) and b < len(outs) and _same_dim(in_shape[ins[a]], shape[outs[b]]):
        a, b = a + 1, b + 1
    ea, eb = len(ins), len(outs)
    while ea > a and eb > b and _same_dim(in_shape[ins[ea - 1]], shape[outs[eb - 1]]):
        ea, eb = ea - 1, eb - 1

    def f(*i):  # type: ignore[no-untyped-def]
        src: list[Any] = [IntImm(0)] * len(in_shape)
        for k in range(a):
            src[ins[k]] = i[outs[k]]
        for k in range(len(ins) - ea):
            src[ins[ea + k]] = i[outs[eb + k]]
        flat: Any = 0
        for d in outs[b:eb]:
            flat = flat * shape[d] + i[d] if not isinstance(flat, int) else i[d]
        for n, d in enumerate(reversed(ins[a:ea])):
            last = n == ea - a - 1
            src[d] = flat if last else flat % in_shape[d]
            if not last:
                flat = flat // in_shape[d]
        return x[tuple(src)] if src else x[()]

    return f


def _reshape_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    (x,) = ins[:1]
    shape = out[0][0]
    in_shape = [dim_of(s) for s in x.shape]
    if not all(isinstance(d, int) for d in list(in_shape) + [dim_of(d) for d in shape]):
        shape = [dim_of(d) for d in shape]  # symbolic sizes (compiler.symbolic)
        return [te.compute(shape, _symbolic_reshape(x, in_shape, shape), name="reshape",
                           tag="injective")]

    def f(*i):  # type: ignore[no-untyped-def]
        flat = 0
        for d, idx in enumerate(i):
            flat = flat * shape[d] + idx if d else idx
        src = []
        for d in range(len(in_shape) - 1, -1, -1):
            src.append(flat % in_shape[d] if d else flat)
            flat = flat // in_shape[d]
        return x[tuple(reversed(src))] if src else x[()]

    return [te.compute(shape, f, name="reshape", tag="injective")]


register_op(
    "reshape", OpPattern.INJECTIVE, _reshape_infer,
    lambda ins, at: [ins[0].reshape(at["shape"])],
    _reshape_compute,
    doc="reshape to attrs['shape'] (fully static, no -1)",
)

register_op(
    "transpose", OpPattern.INJECTIVE, _transpose_infer,
    lambda ins, at: [np.ascontiguousarray(ins[0].transpose(at["perm"]))],
    lambda ins, at, out: [te_transpose(ins[0], at["perm"])],
    doc="permute axes by attrs['perm']",
)


def _concat_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    rank = len(types[0][0])
    require(rank > 0 and -rank <= at["axis"] < rank, f"concat: axis {at['axis']} out of range "
            f"for rank {rank}")
    axis = at["axis"] % rank
    for sh, dt in types:
        require(len(sh) == rank and all(a == b for k, (a, b) in enumerate(zip(sh, types[0][0]))
                                        if k != axis) and dt == types[0][1],
                f"concat: inputs {[f'{d}{list(s)}' for s, d in types]} differ outside axis "
                f"{axis}")
    shape = list(types[0][0])
    shape[axis] = sum(t[0][axis] for t in types)
    return [(tuple(shape), types[0][1])]


def _concat_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    shape = out[0][0]
    axis = at["axis"] % len(shape)
    offsets = []
    acc = 0
    for t in ins:
        offsets.append(acc)
        ext = t.shape[axis]
        acc += ext.value if isinstance(ext, IntImm) else int(ext)

    def load(k: int, i: tuple[Any, ...]) -> Any:
        idx = list(i)
        idx[axis] = i[axis] - offsets[k]
        return ins[k][tuple(idx)]

    def chain(*i):  # type: ignore[no-untyped-def]
        val = None
        for k, off in enumerate(offsets):  # later inputs win from their offset on
            val = load(k, i) if val is None else te.if_then_else(i[axis] >= off, load(k, i),
                                                                 val)
        return val

    def tree(*i):  # type: ignore[no-untyped-def]
        # a balanced choice, log2(n) selects deep: a chain of thousands of them would nest
        # past what the recursive loop-IR passes can walk
        def pick(lo: int, hi: int) -> Any:
            if hi - lo == 1:
                return load(lo, i)
            mid = (lo + hi) // 2
            return te.if_then_else(i[axis] >= offsets[mid], pick(mid, hi), pick(lo, mid))

        return pick(0, len(ins))

    f = chain if len(ins) <= _CHAIN_MAX else tree
    return [te.compute(shape, f, name="concat", tag="injective")]


_CHAIN_MAX = 64  # concats of more inputs select through a balanced tree


register_op("concat", OpPattern.INJECTIVE, _concat_infer,
            lambda ins, at: [np.concatenate(ins, axis=at["axis"])], _concat_compute,
            doc="concatenate along attrs['axis']")
