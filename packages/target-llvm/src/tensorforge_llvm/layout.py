"""The llvm target's `graph.layout` pass: NCHW[x]c blocking (core's `layout_nchwc`), with
Winograd for the 3x3 stride-1 convolutions where it pays (`winograd.py`)."""

from __future__ import annotations

from typing import Any


def convert_layout(g: Any, target: Any) -> Any:
    from tensorforge.graph.passes.layout_nchwc import convert_layout_nchwc

    from .winograd import winograd_rule

    return convert_layout_nchwc(g, target, winograd=winograd_rule(target))
