"""VDLA's loop-IR passes, run at `tir.after_flatten` (before virtual threads are woven):
`inject_dma` (copies -> Load/Store), `inject_alu` (element-wise accumulator stages -> ALU
calls), `fold_uops` (loops around GEMM/ALU calls -> micro-coded instructions). Dependency
tokens are placed later, on the instruction stream (`tensorforge_vdla.tokens`)."""

from .alu import inject_alu
from .dma import inject_dma
from .uops import fold_uops

__all__ = ["fold_uops", "inject_alu", "inject_dma"]
