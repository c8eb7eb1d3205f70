"""`SimReport`: what one simulated run cost, per module and in total."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import VDLAConfig
from ..isa import Alu, Gemm, Insn
from .timing import Timeline


@dataclass
class SimReport:
    """Cycles of one run. `utilization` = GEMM-busy cycles (non-reset micro-op steps) over
    total cycles; `ops` counts 2 per multiply-accumulate the GEMM core performed (padding
    included), `gops` at the design's clock."""

    total_cycles: int
    busy: dict[str, int]
    stalls: dict[str, dict[str, int]]
    gemm_cycles: int
    alu_cycles: int
    dram_bytes_read: int
    dram_bytes_written: int
    n_insns: int
    clock_mhz: float
    ops: int
    max_queue: dict[str, int] = field(default_factory=dict)
    start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)

    @classmethod
    def from_timeline(cls, insns: Sequence[Insn], tl: Timeline, config: VDLAConfig
                      ) -> SimReport:
        gemm = sum(i.steps for i in insns if isinstance(i, Gemm) and not i.reset)
        alu = sum(i.steps for i in insns if isinstance(i, Alu))
        return cls(tl.total_cycles, tl.busy, tl.stalls, gemm, alu, tl.dram_bytes_read,
                   tl.dram_bytes_written, len(insns), config.clock_mhz,
                   2 * gemm * config.macs_per_cycle, tl.max_queue, tl.start, tl.end)

    @property
    def utilization(self) -> float:
        return self.gemm_cycles / self.total_cycles if self.total_cycles else 0.0

    @property
    def seconds(self) -> float:
        return self.total_cycles / (self.clock_mhz * 1e6)

    @property
    def gops(self) -> float:
        return self.ops / self.seconds / 1e9 if self.total_cycles else 0.0

    @property
    def dram_bytes(self) -> int:
        return self.dram_bytes_read + self.dram_bytes_written

    @property
    def ops_per_byte(self) -> float:
        return self.ops / self.dram_bytes if self.dram_bytes else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {"total_cycles": self.total_cycles, "busy": self.busy, "stalls": self.stalls,
                "gemm_cycles": self.gemm_cycles, "alu_cycles": self.alu_cycles,
                "dram_bytes_read": self.dram_bytes_read,
                "dram_bytes_written": self.dram_bytes_written, "n_insns": self.n_insns,
                "utilization": self.utilization, "seconds": self.seconds, "gops": self.gops,
                "max_queue": self.max_queue}

    def summary(self) -> str:
        stalls = "; ".join(f"{m}: " + ", ".join(f"{k} {v}" for k, v in d.items())
                           for m, d in self.stalls.items() if d)
        return (f"{self.total_cycles} cycles ({self.seconds * 1e3:.3f} ms), {self.n_insns} "
                f"instructions, GEMM utilization {self.utilization:.1%}, {self.gops:.2f} GOPS, "
                f"DRAM {self.dram_bytes_read} B read / {self.dram_bytes_written} B written"
                + (f"; stalls {stalls}" if stalls else ""))
