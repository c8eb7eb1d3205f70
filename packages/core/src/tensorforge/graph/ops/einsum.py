"""`einsum`: a general Einstein summation as one TE compute.

The frontend normalizes the equation (spaces removed, `...` expanded to capital letters,
the output spelled out): attrs `inputs` (one subscript string per operand) and `output`.
The body multiplies one element of every operand and sums over the letters absent from the
output; a repeated letter within an operand reads its diagonal, a size-1 dimension
broadcasts. float16 products accumulate in float32."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op


def letter_sizes(subs: list[str], shapes: list[tuple[int, ...]]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for sub, shape in zip(subs, shapes):
        for ch, n in zip(sub, shape):
            sizes[ch] = max(sizes.get(ch, 1), int(n))
    return sizes


def _infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    sizes = letter_sizes(list(at["inputs"]), [t[0] for t in types])
    return [(tuple(sizes[ch] for ch in at["output"]), types[0][1])]


def _ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    eq = ",".join(at["inputs"]) + "->" + at["output"]
    dt = ins[0].dtype
    wide = [a.astype("float32") if a.dtype == np.float16 else a for a in ins]
    return [np.asarray(np.einsum(eq, *wide)).astype(dt)]


def _compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    subs, output = list(at["inputs"]), at["output"]
    shapes = [tuple(int(s.value) for s in t.shape) for t in ins]
    sizes = letter_sizes(subs, shapes)
    summed = sorted({ch for s in subs for ch in s} - set(output))
    raxes = {ch: te.reduce_axis((0, sizes[ch]), name=f"r_{ch}") for ch in summed}
    dtype = ins[0].dtype
    acc = "float32" if dtype == "float16" else dtype

    def body(*i: Any) -> PrimExpr:
        env = dict(zip(output, i))
        env.update({ch: ax.var for ch, ax in raxes.items()})
        prod = None
        for t, sub, shape in zip(ins, subs, shapes):
            idx = tuple(const(0, "int32") if n == 1 and sizes[ch] > 1 else env[ch]
                        for ch, n in zip(sub, shape))
            v = t[idx].astype(acc)
            prod = v if prod is None else prod * v
        assert prod is not None
        if not raxes:
            return prod
        return te.sum(prod, axis=list(raxes.values()))

    y = te.compute(out[0][0], body, name="einsum", tag="einsum")
    if acc != dtype:
        y = te.compute(y.shape, lambda *i: y[i].astype(dtype), name="cast", tag="elemwise")
    return [y]


register_op("einsum", OpPattern.OPAQUE, _infer, _ref, _compute,
            doc="Einstein summation: attrs inputs (subscripts per operand), output")
