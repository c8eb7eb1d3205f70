"""`vdla_requantize`: core's `requantize` as VDLA's ALU computes it, in int32.

`requantize` (graph/ops/quantize.py) is `clip(((acc * m + 2**(s-1)) >> s), lo, hi)` with a
64-bit product. The ALU is 32-bit with 16-bit immediates, so the layout pass
(`layout.py`) rewrites each requantize it places on VDLA into this op, which computes

    t = acc [+ bias]                      ADD (bias tile)
    t = t * m                             MUL #m           (m < 2**15)
    t = t >> s1                           SHR #s1          (s1 = s - s2)
    t = t + 2**(s2-1)                     ADD #2**(s2-1)   (s2 = min(s, 15))
    t = t >> s2                           SHR #s2
    t = min(max(t, lo), hi)               MAX #lo, MIN #hi; stored as int8

which equals the 64-bit form exactly when |acc * m| + 2**(s-1) < 2**31 (what
`requantize_params` guarantees): floor((y + 2**(s-1)) / 2**s) = floor((floor(y / 2**s1) +
2**(s2-1)) / 2**s2). The numpy reference runs the same sequence in wrapping int32."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorforge import te
from tensorforge.graph.registry import OpPattern, TypeList, register_op

#: the largest shift the ALU's rounding add takes as an immediate (2**14 fits 16 bits)
MAX_ROUND_SHIFT = 15


def split_shift(shift: int) -> tuple[int, int]:
    """(s1, s2) with s1 + s2 = shift, s2 in [1, 15]: the rounding add 2**(s2-1) after s1."""
    s2 = min(shift, MAX_ROUND_SHIFT)
    return shift - s2, s2


def alu_requantize(acc: np.ndarray, multiplier: int, shift: int, lo: int, hi: int,
                   bias: np.ndarray | None = None) -> np.ndarray:
    """The ALU sequence in wrapping 32-bit arithmetic (numpy int32), as int8."""
    s1, s2 = split_shift(shift)
    with np.errstate(over="ignore"):
        t = acc.astype(np.int32)
        if bias is not None:
            t = t + bias.astype(np.int32)
        t = t * np.int32(multiplier)
        t = (t >> np.int32(s1)) + np.int32(1 << (s2 - 1))
        t = t >> np.int32(s2)
    return np.clip(t, lo, hi).astype(np.int8)


def _infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    return [(types[0][0], "int8")]


def _ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    bias = ins[1] if len(ins) > 1 else None
    return [alu_requantize(ins[0], at["multiplier"], at["shift"], at["lo"], at["hi"], bias)]


def _compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    acc = ins[0]
    m, (s1, s2) = int(at["multiplier"]), split_shift(int(at["shift"]))
    lo, hi = int(at["lo"]), int(at["hi"])
    if len(ins) > 1:
        b = ins[1]  # (1, C/bo, 1, 1, bo)
        acc = te.compute(acc.shape, lambda n, c, y, x, o: acc[n, c, y, x, o] + b[0, c, 0, 0, o],
                         name="bias_add", tag="broadcast")

    def chain(*i: Any) -> Any:
        t = acc[i] * m
        if s1:
            t = te.floordiv(t, 1 << s1)
        t = te.floordiv(t + (1 << (s2 - 1)), 1 << s2)
        return te.min_expr(te.max_expr(t, lo), hi)

    q = te.compute(acc.shape, chain, name="requantize_alu", tag="elemwise")
    return [te.compute(acc.shape, lambda *i: q[i].astype("int8"), name="requantize_out",
                       tag="elemwise")]


register_op("vdla_requantize", OpPattern.BROADCAST, _infer, _ref, _compute,
            doc="requantize of an NCHW<bo>c int32 accumulator [+ bias (1, C/bo, 1, 1, bo)] as "
                "VDLA's 32-bit ALU computes it; attrs multiplier, shift, lo, hi")
