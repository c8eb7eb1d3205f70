"""Layout and shape transforms."""

from __future__ import annotations

from collections.abc import Sequence

from .. import te
from ..te import Tensor


def transpose(a: Tensor, axes: Sequence[int] | None = None, name: str = "transpose") -> Tensor:
    n = len(a.shape)
    axes = list(axes) if axes is not None else list(range(n))[::-1]
    if sorted(axes) != list(range(n)):
        raise ValueError(f"transpose axes {axes} are not a permutation of 0..{n - 1}")
    shape = [a.shape[p] for p in axes]

    def f(*i):  # type: ignore[no-untyped-def]
        src = [None] * n
        for out_dim, p in enumerate(axes):
            src[p] = i[out_dim]
        return a[tuple(src)]

    return te.compute(shape, f, name=name, tag="injective")
