"""`VDLAConfig`: one VDLA design, built from log2 parameters and passed around explicitly.

Nothing is global: the config comes from a `Target` (`VDLAConfig.from_target`) and travels with
every program, simulator and module built for it. The hardware is a GEMM core computing
`batch x block_in x block_out` int8 multiply-accumulates per cycle into int32 accumulators, an
ALU on accumulator vectors, four on-chip SRAMs (input, weight, accumulator, micro-op) and one
DRAM port; the sizes below derive everything else (tile bytes, SRAM depths in tiles, the ISA's
field widths)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import VDLAConfigError

#: bits of each data type the GEMM core accepts
_DTYPE_BITS = {"int8": 8, "int32": 32}


def _log2(value: int, what: str) -> int:
    if not isinstance(value, int) or value < 1 or value & (value - 1):
        raise VDLAConfigError(f"VDLA {what} must be a power of two, got {value!r}")
    return value.bit_length() - 1


@dataclass(frozen=True)
class VDLAConfig:
    """A VDLA design. `log_*` fields are log2 of element counts or bytes; the rest are the
    memory system and clock. Validated on construction."""

    log_batch: int = 0
    log_block_in: int = 4
    log_block_out: int = 4
    log_inp_bits: int = 3
    log_acc_bits: int = 5
    log_inp_buff_bytes: int = 15
    log_wgt_buff_bytes: int = 18
    log_acc_buff_bytes: int = 17
    log_uop_buff_bytes: int = 15
    dram_bytes_per_cycle: int = 8
    dram_latency: int = 64
    clock_mhz: float = 200.0
    queue_depth: int = 16

    def __post_init__(self) -> None:
        for name in ("log_batch", "log_block_in", "log_block_out"):
            if not 0 <= getattr(self, name) <= 6:
                raise VDLAConfigError(f"VDLA {name} must be in [0, 6], got {getattr(self, name)}")
        if self.log_inp_bits != 3 or self.log_acc_bits != 5:
            raise VDLAConfigError("the VDLA GEMM core computes int8 x int8 -> int32 only")
        for mem in ("inp", "wgt", "acc"):
            depth = self.depth(mem)
            if depth < 1:
                raise VDLAConfigError(
                    f"the VDLA {mem} buffer ({self.buffer_bytes(mem)} bytes) holds no "
                    f"{self.tile_bytes(mem)}-byte tile")
        if self.dram_bytes_per_cycle < 1 or self.dram_latency < 0 or self.clock_mhz <= 0:
            raise VDLAConfigError("VDLA DRAM bandwidth, latency and clock must be positive")
        if self.queue_depth < 1:
            raise VDLAConfigError("VDLA token queues need a depth of at least 1")
        if self.uop_bits > 32:
            raise VDLAConfigError(f"VDLA micro-ops need {self.uop_bits} bits (> 32): buffers "
                                  "too deep for this tile size")

    # shapes ------------------------------------------------------------------------------
    @property
    def batch(self) -> int:
        return 1 << self.log_batch

    @property
    def block_in(self) -> int:
        return 1 << self.log_block_in

    @property
    def block_out(self) -> int:
        return 1 << self.log_block_out

    inp_dtype = "int8"
    wgt_dtype = "int8"
    acc_dtype = "int32"
    out_dtype = "int8"

    def tile_shape(self, mem: str) -> tuple[int, ...]:
        """Shape of one tile (the unit of every SRAM address) of memory `mem`."""
        return {"inp": (self.batch, self.block_in), "wgt": (self.block_in, self.block_out),
                "acc": (self.batch, self.block_out), "out": (self.batch, self.block_out)}[mem]

    def tile_elems(self, mem: str) -> int:
        n = 1
        for d in self.tile_shape(mem):
            n *= d
        return n

    def elem_bytes(self, mem: str) -> int:
        return 4 if mem in ("acc", "uop") else 1

    def tile_bytes(self, mem: str) -> int:
        if mem == "uop":
            return 4
        return self.tile_elems(mem) * self.elem_bytes(mem)

    def buffer_bytes(self, mem: str) -> int:
        return 1 << {"inp": self.log_inp_buff_bytes, "wgt": self.log_wgt_buff_bytes,
                     "acc": self.log_acc_buff_bytes, "out": self.log_acc_buff_bytes,
                     "uop": self.log_uop_buff_bytes}[mem]

    def depth(self, mem: str) -> int:
        """Number of tiles (micro-ops for "uop") the SRAM of `mem` holds."""
        return self.buffer_bytes(mem) // self.tile_bytes(mem)

    def index_bits(self, mem: str) -> int:
        return max(1, (self.depth(mem) - 1).bit_length())

    @property
    def uop_bits(self) -> int:
        """acc index, then max(inp, acc) index (GEMM input / ALU source), then wgt index."""
        return (self.index_bits("acc") + max(self.index_bits("inp"), self.index_bits("acc"))
                + self.index_bits("wgt"))

    # performance ---------------------------------------------------------------------------
    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    @property
    def peak_gops(self) -> float:
        """Two operations per multiply-accumulate, at the clock."""
        return 2 * self.macs_per_cycle * self.clock_mhz * 1e6 / 1e9

    @property
    def ridge_ops_per_byte(self) -> float:
        """Arithmetic intensity at which the DRAM roof meets the compute roof."""
        return 2 * self.macs_per_cycle / self.dram_bytes_per_cycle

    @property
    def gemm_name(self) -> str:
        return f"gemm_{self.batch}x{self.block_in}x{self.block_out}_int8_acc32"

    # construction --------------------------------------------------------------------------
    @classmethod
    def from_target(cls, target: Any) -> VDLAConfig:
        """The design a `vdla ...` target string describes."""
        from tensorforge.target import Target

        opts = Target.coerce(target).options
        if opts.get("inp-dtype", "int8") != "int8" or opts.get("acc-dtype", "int32") != "int32":
            raise VDLAConfigError(
                f"VDLA computes int8 inputs into int32 accumulators; target asks for "
                f"-inp-dtype={opts.get('inp-dtype')} -acc-dtype={opts.get('acc-dtype')}")
        return cls(
            log_batch=_log2(opts["batch"], "batch"),
            log_block_in=_log2(opts["block-in"], "block-in"),
            log_block_out=_log2(opts["block-out"], "block-out"),
            log_inp_buff_bytes=_log2(opts["inp-kib"] * 1024, "inp-kib"),
            log_wgt_buff_bytes=_log2(opts["wgt-kib"] * 1024, "wgt-kib"),
            log_acc_buff_bytes=_log2(opts["acc-kib"] * 1024, "acc-kib"),
            log_uop_buff_bytes=_log2(opts["uop-kib"] * 1024, "uop-kib"),
            dram_bytes_per_cycle=opts["dram-bytes-per-cycle"],
            dram_latency=opts["dram-latency"],
            clock_mhz=float(opts["clock-mhz"]),
            queue_depth=opts["queue-depth"],
        )

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VDLAConfig:
        return cls(**d)

    def describe(self) -> str:
        return (f"VDLA {self.batch}x{self.block_in}x{self.block_out} @ {self.clock_mhz:g} MHz "
                f"({self.peak_gops:.1f} GOPS peak), inp {self.buffer_bytes('inp') >> 10} KiB, "
                f"wgt {self.buffer_bytes('wgt') >> 10} KiB, acc {self.buffer_bytes('acc') >> 10} "
                f"KiB, DRAM {self.dram_bytes_per_cycle} B/cycle + {self.dram_latency} cycles")


#: target tags: the paper's PYNQ-Z1 design and a sibling with a wider, single-row core
TAGS = {
    "vdla/default": ("vdla -batch=1 -block-in=16 -block-out=16", "VDLA 1x16x16 @ 200 MHz"),
    "vdla/pynq-z1": ("vdla -batch=1 -block-in=16 -block-out=16 -clock-mhz=200",
                     "the paper's PYNQ-Z1 design: 1x16x16 @ 200 MHz, 102.4 GOPS peak"),
    "vdla/1x32x32": ("vdla -batch=1 -block-in=32 -block-out=32 -clock-mhz=150",
                     "a sibling design: 1x32x32 @ 150 MHz, 307.2 GOPS peak"),
}
