"""Code generation for VDLA: optimized loop IR -> `Program` per kernel -> `VDLAModule`.

    build(funcs, target): for each PrimFunc, in order
        emit               host loops run, one instruction per vdla.* call (emit.py)
        inject_dep_tokens  tokens where data flows between modules (tokens.py)
        check_encodable    every instruction fits its 128-bit format
        verify_tokens      every dependency is ordered by a chain of tokens, for any timing

The module (runtime.py) runs the programs on the simulator; see there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tensorforge.tir.stmt import PrimFunc

from .config import VDLAConfig
from .emit import emit
from .isa import check_config, encode
from .program import Program
from .runtime import VDLAModule, load_vdla_module
from .tokens import inject_dep_tokens, verify_tokens

__all__ = ["PROGRAM_PASSES", "VDLAModule", "build", "compile_program", "load_vdla_module"]

#: program passes after the loop IR, in order (names for errors and docs)
PROGRAM_PASSES: tuple[tuple[str, Callable[[Program], Program]], ...] = (
    ("inject_dep_tokens", inject_dep_tokens),
)


def compile_program(func: PrimFunc, config: VDLAConfig) -> Program:
    program = emit(func, config)
    for _, fn in PROGRAM_PASSES:
        program = fn(program)
    for insn in program.insns:
        encode(insn, config)  # raises a VDLAEncodingError naming the field that overflows
    verify_tokens(program)  # every dependency ordered by tokens, whatever the timing
    return program


def build(funcs: Sequence[PrimFunc], target: Any) -> VDLAModule:
    config = VDLAConfig.from_target(target)
    check_config(config)
    programs = [compile_program(f, config) for f in funcs]
    return VDLAModule(programs, str(target))
