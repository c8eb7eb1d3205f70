"""The driver interface between a compiled program and a VDLA: allocate a DRAM image, copy the
arguments in, run the instruction stream, copy the results out. `SimDriver` runs the simulator;
a board driver would implement the same `run`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from tensorforge.errors import TensorforgeError

from .config import VDLAConfig
from .isa import Store
from .program import Program
from .sim import Simulator
from .sim.report import SimReport


class Driver(Protocol):
    def run(self, program: Program, args: Sequence[Any]) -> SimReport: ...


class SimDriver:
    """Runs programs on the simulator. `check_hazards` verifies the tokens on every run;
    `jitter_seed` runs a perturbed ("pipelined") schedule."""

    def __init__(self, config: VDLAConfig, check_hazards: bool = True,
                 jitter_seed: int | None = None):
        self.config = config
        self.check_hazards = check_hazards
        self.jitter_seed = jitter_seed

    def run(self, program: Program, args: Sequence[Any]) -> SimReport:
        params = program.params
        if len(args) != len(params):
            raise TensorforgeError(
                f"VDLA kernel {program.name} takes {len(params)} arrays "
                f"({', '.join(p.name for p in params)}), got {len(args)}")
        dram = program.new_dram()
        arrays = []
        for p, a in zip(params, args):
            arr = np.asarray(a)
            if arr.dtype != np.dtype(p.dtype) or arr.size * arr.itemsize != p.nbytes:
                raise TensorforgeError(
                    f"VDLA kernel {program.name}: argument {p.name} must be {p.dtype} with "
                    f"shape {list(p.shape)}, got {arr.dtype} {list(arr.shape)}")
            arrays.append(arr)
            dram[p.offset:p.offset + p.nbytes] = np.ascontiguousarray(arr).view(np.uint8).ravel()
        sim = Simulator(program.config, self.check_hazards, self.jitter_seed)
        report = sim.run(program, dram)
        for p, a in zip(params, args):
            if p.name in written_params(program) and isinstance(a, np.ndarray):
                a[...] = dram[p.offset:p.offset + p.nbytes].view(a.dtype).reshape(a.shape)
        return report


def written_params(program: Program) -> set[str]:
    """Names of the parameters some Store writes."""
    out = set()
    for insn in program.insns:
        if isinstance(insn, Store):
            tb = program.config.tile_bytes(insn.mem.key)
            lo = insn.dram_base * tb
            for p in program.params:
                if p.offset <= lo < p.offset + p.nbytes:
                    out.add(p.name)
    return out
