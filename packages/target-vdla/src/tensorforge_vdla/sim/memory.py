"""The machine state: the four SRAMs as numpy arrays of tiles, and DRAM as bytes.

SRAM addresses are tile indices; DRAM addresses of an instruction are in tiles of the memory
it moves (`dram_base * tile_bytes` is the byte address)."""

from __future__ import annotations

import numpy as np

from ..config import VDLAConfig
from ..errors import VDLASramRangeError

_DTYPES = {"inp": np.int8, "wgt": np.int8, "acc": np.int32, "out": np.int8, "uop": np.uint32}


class Memory:
    """SRAM contents of one VDLA core plus the DRAM it reads and writes (shared, in place)."""

    def __init__(self, config: VDLAConfig, dram: np.ndarray):
        if dram.dtype != np.uint8 or dram.ndim != 1:
            raise TypeError("VDLA DRAM is a 1-D uint8 array")
        self.config = config
        self.dram = dram
        self.sram = {
            "inp": np.zeros((config.depth("inp"), *config.tile_shape("inp")), np.int8),
            "wgt": np.zeros((config.depth("wgt"), *config.tile_shape("wgt")), np.int8),
            "acc": np.zeros((config.depth("acc"), *config.tile_shape("acc")), np.int32),
            "uop": np.zeros(config.depth("uop"), np.uint32),
        }

    def dram_tiles(self, mem: str) -> np.ndarray:
        """DRAM seen as an array of `mem` tiles (whole tiles only)."""
        c = self.config
        tb = c.tile_bytes(mem)
        n = self.dram.size // tb
        flat = self.dram[: n * tb].view(_DTYPES[mem])
        if mem == "uop":
            return flat
        return flat.reshape(n, *c.tile_shape(mem))

    def sram_of(self, mem: str) -> np.ndarray:
        return self.sram["acc" if mem == "out" else mem]

    def check_sram(self, mem: str, lo: int, hi: int, what: object) -> None:
        """Tiles [lo, hi) of `mem` exist (raises `VDLASramRangeError`)."""
        depth = self.config.depth("acc" if mem == "out" else mem)
        if lo < 0 or hi > depth:
            raise VDLASramRangeError(
                f"{what}: touches {mem} tiles [{lo}, {hi}) but the {mem} buffer holds "
                f"{depth} tiles ({self.config.buffer_bytes(mem)} bytes)")

    def check_dram(self, mem: str, lo: int, hi: int, what: object) -> None:
        n = self.dram.size // self.config.tile_bytes(mem)
        if lo < 0 or hi > n:
            raise VDLASramRangeError(
                f"{what}: touches DRAM {mem} tiles [{lo}, {hi}) but DRAM holds {n} such tiles "
                f"({self.dram.size} bytes)")
