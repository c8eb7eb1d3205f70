"""Iteration-variable relations recorded by schedule primitives (split, fuse, rebase)."""

from __future__ import annotations

from dataclasses import dataclass

from ..expr import PrimExpr
from ..te.tensor import IterVar


@dataclass(eq=False)
class Split:
    """parent = outer * factor + inner (nparts given instead: outer extent fixed)."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: PrimExpr | None
    nparts: PrimExpr | None


@dataclass(eq=False)
class Fuse:
    """fused = outer * extent(inner) + inner."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass(eq=False)
class Rebase:
    """rebased = parent - min(parent): used when a thread axis is bound to a ranged axis."""

    parent: IterVar
    rebased: IterVar


Relation = Split | Fuse | Rebase
