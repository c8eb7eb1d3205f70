"""The VDLA simulator: a functional model (exact integer results) driven by a timing model
(exact cycles), with a hazard checker that proves the timed overlap equals program order.

    report = Simulator(config).run(program, dram)   # dram: uint8 array, updated in place
    report.total_cycles, report.utilization, report.stalls
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..config import VDLAConfig
from ..errors import VDLAHazardError
from ..isa import Gemm, Insn, Stage, stage_of
from .functional import execute, footprint
from .memory import Memory
from .report import SimReport
from .timing import Timeline, schedule

__all__ = ["Memory", "SimReport", "Simulator", "Timeline"]


class Simulator:
    """Runs instruction streams of one VDLA design.

    `jitter_seed`: add random delays (a "pipelined" run exploring another interleaving);
    `check_hazards`: verify that every pair of conflicting SRAM accesses of different modules
    is ordered in time as in program order (else `VDLAHazardError`: a token is missing)."""

    def __init__(self, config: VDLAConfig, check_hazards: bool = True,
                 jitter_seed: int | None = None):
        self.config = config
        self.check_hazards = check_hazards
        self.jitter_seed = jitter_seed

    def run(self, program: object, dram: np.ndarray) -> SimReport:
        insns = list(getattr(program, "insns", program))  # a Program or a list of insns
        timeline = schedule(insns, self.config, self.jitter_seed)
        mem = Memory(self.config, dram)
        _execute_checked(insns, timeline, mem, self.check_hazards)
        return SimReport.from_timeline(insns, timeline, self.config)


def _execute_checked(insns: Sequence[Insn], tl: Timeline, mem: Memory, check: bool) -> None:
    c = mem.config
    last_w = {m: np.zeros(c.depth(m), np.int64) for m in ("inp", "wgt", "acc", "uop")}
    who_w = {m: np.full(c.depth(m), -1, np.int64) for m in last_w}
    last_r = {m: np.zeros(c.depth(m), np.int64) for m in last_w}
    who_r = {m: np.full(c.depth(m), -1, np.int64) for m in last_w}
    for k, insn in enumerate(insns):
        if check:
            fp = footprint(insn, mem)
            s, e = int(tl.start[k]), int(tl.end[k])
            touched = list(fp.reads.items()) + list(fp.writes.items())
            for m, idx in touched:
                idx = _valid(idx, c.depth(m))
                late = idx[last_w[m][idx] > s]
                if late.size:
                    _hazard(insns, tl, k, int(who_w[m][late[0]]), m, int(late[0]), "written")
            for m, idx in fp.writes.items():
                idx = _valid(idx, c.depth(m))
                late = idx[last_r[m][idx] > s]
                if late.size:
                    _hazard(insns, tl, k, int(who_r[m][late[0]]), m, int(late[0]), "read")
        execute(insn, mem)
        if check:
            for m, idx in fp.reads.items():
                idx = _valid(idx, c.depth(m))
                newer = last_r[m][idx] < e
                last_r[m][idx[newer]] = e
                who_r[m][idx[newer]] = k
            for m, idx in fp.writes.items():
                idx = _valid(idx, c.depth(m))
                last_w[m][idx] = e
                who_w[m][idx] = k


def _valid(idx: np.ndarray, depth: int) -> np.ndarray:
    return idx[(idx >= 0) & (idx < depth)]


def _hazard(insns: Sequence[Insn], tl: Timeline, k: int, j: int, mem: str, tile: int,
            how: str) -> None:
    raise VDLAHazardError(
        f"instruction {k} ({insns[k]}, {stage_of(insns[k]).name.lower()}) starts at cycle "
        f"{tl.start[k]} but {mem} tile {tile} is still {how} by instruction {j} ({insns[j]}, "
        f"{stage_of(insns[j]).name.lower()}) until cycle {tl.end[j]}: a dependency token "
        "between them is missing")


def gemm_steps(insns: Sequence[Insn]) -> int:
    return sum(i.steps for i in insns if isinstance(i, Gemm) and not i.reset)


__all__ += ["gemm_steps", "Stage"]
