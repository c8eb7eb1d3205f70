"""`Program`: one compiled VDLA kernel — its instruction stream, micro-op kernels and the DRAM
layout of its parameters. It serializes to the 128-bit stream plus a JSON sidecar, and loads
back with numpy alone (no compiler)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import VDLAConfig
from .isa import Insn, decode_program, disassemble, encode_program

#: every parameter starts on a boundary of this many bytes (a multiple of every tile size)
DRAM_ALIGN = 4096


@dataclass(frozen=True)
class ParamSpec:
    """A kernel argument in DRAM: where it lives and what it holds."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    offset: int  # bytes
    nbytes: int


@dataclass
class Program:
    """Instructions in program order, the micro-op segment (uint32 words at `uop_offset` in
    DRAM), the parameters, and the DRAM image size."""

    name: str
    config: VDLAConfig
    insns: list[Insn]
    uops: np.ndarray
    params: tuple[ParamSpec, ...]
    uop_offset: int
    dram_bytes: int
    sram_tiles: dict[str, int] = field(default_factory=dict)  # peak tiles used per memory

    def new_dram(self) -> np.ndarray:
        """A zeroed DRAM image holding the micro-op segment."""
        dram = np.zeros(self.dram_bytes, np.uint8)
        dram[self.uop_offset:self.uop_offset + 4 * self.uops.size] = self.uops.view(np.uint8)
        return dram

    def disassemble(self) -> str:
        return disassemble(self.insns)

    # serialization ---------------------------------------------------------------------
    def stream(self) -> bytes:
        return encode_program(self.insns, self.config)

    def sidecar(self) -> dict[str, Any]:
        return {
            "format": "tensorforge-vdla-program/1",
            "name": self.name,
            "config": self.config.to_dict(),
            "params": [{"name": p.name, "shape": list(p.shape), "dtype": p.dtype,
                        "offset": p.offset, "nbytes": p.nbytes} for p in self.params],
            "uop_offset": self.uop_offset,
            "n_uops": int(self.uops.size),
            "dram_bytes": self.dram_bytes,
            "n_insns": len(self.insns),
            "sram_tiles": self.sram_tiles,
        }

    @classmethod
    def from_parts(cls, stream: bytes, uops: bytes, sidecar: dict[str, Any]) -> Program:
        if sidecar.get("format") != "tensorforge-vdla-program/1":
            from .errors import VDLAError

            raise VDLAError(f"not a VDLA program sidecar: format {sidecar.get('format')!r}")
        config = VDLAConfig.from_dict(sidecar["config"])
        params = tuple(ParamSpec(p["name"], tuple(p["shape"]), p["dtype"], p["offset"],
                                 p["nbytes"]) for p in sidecar["params"])
        return cls(sidecar["name"], config, decode_program(stream, config),
                   np.frombuffer(uops, np.uint32).copy(), params, sidecar["uop_offset"],
                   sidecar["dram_bytes"], dict(sidecar.get("sram_tiles", {})))

    def to_json(self) -> str:
        return json.dumps(self.sidecar(), indent=1)
