"""The VDLA instruction set: the single source of truth for opcodes, fields and encodings.

Every instruction is 128 bits. Each format is an ordered list of `(field, width(config))`,
packed from the least significant bit: the common header (opcode, then the four dependency
flags), then the format's own fields. Field widths that address SRAM follow the design
(`VDLAConfig.index_bits`), so a deeper buffer widens its fields and the encoder checks that
every format still fits 128 bits. Micro-ops are 32-bit words `(acc, inp-or-src, wgt)`.

The four flags: an instruction of a module may pop a token from (before it starts) and push
a token to (after it ends) its previous and next module; load's previous and store's next
module do not exist. Modules run LOAD (`Load` into inp/wgt), COMPUTE (`Gemm`, `Alu`,
`Finish`, and `Load` into uop/acc) and STORE (`Store`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import ClassVar

import numpy as np

from .config import VDLAConfig
from .errors import VDLAConfigError, VDLAEncodingError

INSN_BITS = 128
UOP_BITS = 32


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3  # arithmetic shift right; a negative amount shifts left
    MUL = 4


class MemId(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4  # the accumulators narrowed to int8 (stores only)

    @property
    def key(self) -> str:
        return self.name.lower()


class Stage(IntEnum):
    LOAD = 0
    COMPUTE = 1
    STORE = 2


#: the four token queues, (from stage, to stage)
QUEUES: tuple[tuple[Stage, Stage], ...] = (
    (Stage.LOAD, Stage.COMPUTE), (Stage.COMPUTE, Stage.LOAD),
    (Stage.COMPUTE, Stage.STORE), (Stage.STORE, Stage.COMPUTE),
)


def queue_name(src: Stage, dst: Stage) -> str:
    return f"{src.name.lower()}->{dst.name.lower()}"


Width = Callable[[VDLAConfig], int]


def _w(n: int) -> Width:
    return lambda c: n


def _idx(mem: str, extra: int = 0) -> Width:
    return lambda c: c.index_bits(mem) + extra


def _uop_idx(extra: int = 0) -> Width:
    return lambda c: c.index_bits("uop") + extra


_HEADER: tuple[tuple[str, Width], ...] = (
    ("opcode", _w(3)), ("pop_prev", _w(1)), ("pop_next", _w(1)), ("push_prev", _w(1)),
    ("push_next", _w(1)),
)
_LOOP: tuple[tuple[str, Width], ...] = (
    ("uop_bgn", _uop_idx()), ("uop_end", _uop_idx(1)), ("lp0", _w(14)), ("lp1", _w(14)),
)


@dataclass(frozen=True)
class Insn:
    """Common part: the dependency flags. Subclasses list their fields in `FIELDS`."""

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    OPCODE: ClassVar[Opcode]
    FIELDS: ClassVar[tuple[tuple[str, Width], ...]] = ()

    @property
    def stage(self) -> Stage:
        return stage_of(self)

    def with_flags(self, **flags: bool) -> Insn:
        return dataclasses.replace(self, **flags)

    def flags_text(self) -> str:
        names = [n for n in ("pop_prev", "pop_next", "push_prev", "push_next") if getattr(self, n)]
        return f"  [{' '.join(names)}]" if names else ""


@dataclass(frozen=True)
class _Mem(Insn):
    """2-D strided DMA between DRAM and an SRAM. Addresses are in tiles of `mem`. `y_size`
    rows of `x_size` tiles are read from DRAM at `dram_base + y * x_stride + x`; in SRAM the
    block is dense with `x_pad0 + x_size + x_pad1` tiles a row, framed by zero pads."""

    mem: MemId = MemId.INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad0: int = 0
    y_pad1: int = 0
    x_pad0: int = 0
    x_pad1: int = 0

    FIELDS: ClassVar[tuple[tuple[str, Width], ...]] = (
        ("mem", _w(3)), ("sram_base", _w(16)), ("dram_base", _w(32)), ("y_size", _w(16)),
        ("x_size", _w(16)), ("x_stride", _w(16)), ("y_pad0", _w(4)), ("y_pad1", _w(4)),
        ("x_pad0", _w(4)), ("x_pad1", _w(4)),
    )

    @property
    def rows(self) -> int:
        return self.y_pad0 + self.y_size + self.y_pad1

    @property
    def cols(self) -> int:
        return self.x_pad0 + self.x_size + self.x_pad1

    @property
    def sram_tiles(self) -> int:
        """Tiles written (load) or read (store) in SRAM, pads included."""
        return self.rows * self.cols

    @property
    def dram_tiles(self) -> int:
        return self.y_size * self.x_size

    def _text(self, verb: str) -> str:
        pads = ""
        if self.y_pad0 or self.y_pad1 or self.x_pad0 or self.x_pad1:
            pads = f" pad y({self.y_pad0},{self.y_pad1}) x({self.x_pad0},{self.x_pad1})"
        return (f"{verb} {self.mem.name.lower()}[{self.sram_base}] <- dram[{self.dram_base}] "
                f"{self.y_size}x{self.x_size} stride {self.x_stride}{pads}")


@dataclass(frozen=True)
class Load(_Mem):
    OPCODE: ClassVar[Opcode] = Opcode.LOAD

    def __str__(self) -> str:
        return self._text("LOAD") + self.flags_text()


@dataclass(frozen=True)
class Store(_Mem):
    mem: MemId = MemId.ACC
    OPCODE: ClassVar[Opcode] = Opcode.STORE

    def __str__(self) -> str:
        return (f"STORE dram[{self.dram_base}] <- {self.mem.name.lower()}[{self.sram_base}] "
                f"{self.y_size}x{self.x_size} stride {self.x_stride}") + self.flags_text()


@dataclass(frozen=True)
class Gemm(Insn):
    """for i0 < lp0, i1 < lp1, u in [uop_bgn, uop_end):
    acc[u.acc + i0*acc_f0 + i1*acc_f1] (+)= inp[u.inp + ...] @ wgt[u.wgt + ...]
    (`reset`: the accumulator tiles are set to zero instead)."""

    reset: bool = False
    uop_bgn: int = 0
    uop_end: int = 0
    lp0: int = 1
    lp1: int = 1
    acc_f0: int = 0
    acc_f1: int = 0
    inp_f0: int = 0
    inp_f1: int = 0
    wgt_f0: int = 0
    wgt_f1: int = 0

    OPCODE: ClassVar[Opcode] = Opcode.GEMM
    FIELDS: ClassVar[tuple[tuple[str, Width], ...]] = (
        ("reset", _w(1)), *_LOOP,
        ("acc_f0", _idx("acc")), ("acc_f1", _idx("acc")), ("inp_f0", _idx("inp")),
        ("inp_f1", _idx("inp")), ("wgt_f0", _idx("wgt")), ("wgt_f1", _idx("wgt")),
    )

    @property
    def steps(self) -> int:
        """Micro-op steps: one per cycle."""
        return self.lp0 * self.lp1 * (self.uop_end - self.uop_bgn)

    def __str__(self) -> str:
        what = "GEMM.reset" if self.reset else "GEMM"
        return (f"{what} uop[{self.uop_bgn}:{self.uop_end}] loops {self.lp0}x{self.lp1} "
                f"acc({self.acc_f0},{self.acc_f1}) inp({self.inp_f0},{self.inp_f1}) "
                f"wgt({self.wgt_f0},{self.wgt_f1})") + self.flags_text()


@dataclass(frozen=True)
class Alu(Insn):
    """for i0 < lp0, i1 < lp1, u in [uop_bgn, uop_end):
    acc[dst] = op(acc[dst], imm if use_imm else acc[src]), dst = u.acc + i0*dst_f0 + ...,
    src = u.inp + i0*src_f0 + ...; lane-wise on int32 accumulator tiles."""

    op: AluOp = AluOp.ADD
    use_imm: bool = False
    imm: int = 0
    uop_bgn: int = 0
    uop_end: int = 0
    lp0: int = 1
    lp1: int = 1
    dst_f0: int = 0
    dst_f1: int = 0
    src_f0: int = 0
    src_f1: int = 0

    OPCODE: ClassVar[Opcode] = Opcode.ALU
    FIELDS: ClassVar[tuple[tuple[str, Width], ...]] = (
        ("op", _w(3)), ("use_imm", _w(1)), ("imm", _w(16)), *_LOOP,
        ("dst_f0", _idx("acc")), ("dst_f1", _idx("acc")), ("src_f0", _idx("acc")),
        ("src_f1", _idx("acc")),
    )
    SIGNED: ClassVar[frozenset[str]] = frozenset({"imm"})

    @property
    def steps(self) -> int:
        """Vector operations: one per cycle."""
        return self.lp0 * self.lp1 * (self.uop_end - self.uop_bgn)

    def __str__(self) -> str:
        src = f"#{self.imm}" if self.use_imm else f"src({self.src_f0},{self.src_f1})"
        return (f"ALU.{self.op.name} uop[{self.uop_bgn}:{self.uop_end}] loops "
                f"{self.lp0}x{self.lp1} dst({self.dst_f0},{self.dst_f1}) {src}"
                ) + self.flags_text()


@dataclass(frozen=True)
class Finish(Insn):
    OPCODE: ClassVar[Opcode] = Opcode.FINISH

    def __str__(self) -> str:
        return "FINISH" + self.flags_text()


_CLASSES: dict[Opcode, type[Insn]] = {c.OPCODE: c for c in (Load, Store, Gemm, Alu, Finish)}
_ENUMS = {"mem": MemId, "op": AluOp}
_BOOLS = frozenset({"pop_prev", "pop_next", "push_prev", "push_next", "reset", "use_imm"})


def stage_of(insn: Insn) -> Stage:
    """The module that executes `insn`."""
    if isinstance(insn, Store):
        return Stage.STORE
    if isinstance(insn, Load) and insn.mem in (MemId.INP, MemId.WGT):
        return Stage.LOAD
    return Stage.COMPUTE


def neighbours(stage: Stage) -> tuple[Stage | None, Stage | None]:
    """(previous, next) module of `stage` in the load -> compute -> store chain."""
    prev = Stage(stage - 1) if stage > Stage.LOAD else None
    nxt = Stage(stage + 1) if stage < Stage.STORE else None
    return prev, nxt


@cache
def layout(cls: type[Insn], config: VDLAConfig) -> tuple[tuple[str, int, int], ...]:
    """(field, bit offset, width) of every field of `cls` for `config`."""
    out = []
    pos = 0
    for name, width in (*_HEADER, *cls.FIELDS):
        w = width(config)
        out.append((name, pos, w))
        pos += w
    if pos > INSN_BITS:
        raise VDLAConfigError(
            f"the {cls.__name__} format needs {pos} bits for {config.describe()}; more than "
            f"{INSN_BITS}: shrink the SRAMs or the micro-op buffer")
    return tuple(out)


def check_config(config: VDLAConfig) -> None:
    """Every format fits 128 bits for `config` (raises `VDLAConfigError` otherwise)."""
    for cls in _CLASSES.values():
        layout(cls, config)


def encode(insn: Insn, config: VDLAConfig) -> int:
    """The 128-bit word of `insn` as a Python int."""
    prev, nxt = neighbours(stage_of(insn))
    if (insn.pop_prev or insn.push_prev) and prev is None or (
            (insn.pop_next or insn.push_next) and nxt is None):
        raise VDLAEncodingError(f"{insn}: the {stage_of(insn).name.lower()} module has no "
                                "such neighbour to exchange tokens with")
    word = 0
    signed = getattr(insn, "SIGNED", frozenset())
    for name, pos, width in layout(type(insn), config):
        value = int(insn.OPCODE) if name == "opcode" else int(getattr(insn, name))
        if name in signed:
            lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
            if not lo <= value <= hi:
                raise VDLAEncodingError(f"{insn}: {name}={value} does not fit {width} signed bits")
            value &= (1 << width) - 1
        elif not 0 <= value < (1 << width):
            raise VDLAEncodingError(f"{insn}: {name}={value} does not fit {width} bits")
        word |= value << pos
    return word


def decode(word: int, config: VDLAConfig) -> Insn:
    """The instruction of a 128-bit word (inverse of `encode`)."""
    if not 0 <= word < (1 << INSN_BITS):
        raise VDLAEncodingError(f"0x{word:x} is not a {INSN_BITS}-bit instruction word")
    try:
        opcode = Opcode(word & 7)
    except ValueError:
        raise VDLAEncodingError(f"0x{word:032x}: unknown opcode {word & 7}") from None
    cls = _CLASSES[opcode]
    signed = getattr(cls, "SIGNED", frozenset())
    kwargs: dict[str, object] = {}
    for name, pos, width in layout(cls, config):
        if name == "opcode":
            continue
        value = (word >> pos) & ((1 << width) - 1)
        if name in signed and value >> (width - 1):
            value -= 1 << width
        if name in _ENUMS:
            try:
                kwargs[name] = _ENUMS[name](value)
            except ValueError:
                raise VDLAEncodingError(f"0x{word:032x}: bad {name} {value}") from None
        elif name in _BOOLS:
            kwargs[name] = bool(value)
        else:
            kwargs[name] = value
    return cls(**kwargs)  # type: ignore[arg-type]


def encode_program(insns: Sequence[Insn], config: VDLAConfig) -> bytes:
    """The instruction stream as little-endian 16-byte words."""
    return b"".join(encode(i, config).to_bytes(16, "little") for i in insns)


def decode_program(data: bytes, config: VDLAConfig) -> list[Insn]:
    if len(data) % 16:
        raise VDLAEncodingError(f"an instruction stream is a multiple of 16 bytes, got {len(data)}")
    return [decode(int.from_bytes(data[i:i + 16], "little"), config)
            for i in range(0, len(data), 16)]


def disassemble(insns: Iterable[Insn]) -> str:
    """One line per instruction: index, module, text."""
    return "\n".join(f"{k:5d} {stage_of(i).name.lower():7s} {i}" for k, i in enumerate(insns))


# micro-ops -------------------------------------------------------------------------------

def uop_fields(config: VDLAConfig) -> tuple[int, int, int]:
    """Bit widths of (acc, inp-or-src, wgt)."""
    return (config.index_bits("acc"), max(config.index_bits("inp"), config.index_bits("acc")),
            config.index_bits("wgt"))


def encode_uops(acc: np.ndarray, inp: np.ndarray, wgt: np.ndarray, config: VDLAConfig
                ) -> np.ndarray:
    """Pack micro-op columns into uint32 words (acc low bits, then inp/src, then wgt)."""
    wa, wi, ww = uop_fields(config)
    cols = [np.asarray(x, np.int64) for x in (acc, inp, wgt)]
    for name, col, w in zip(("acc", "inp", "wgt"), cols, (wa, wi, ww)):
        if col.size and (col.min() < 0 or col.max() >= (1 << w)):
            raise VDLAEncodingError(f"micro-op {name} index out of {w} bits: "
                                    f"[{col.min()}, {col.max()}]")
    return (cols[0] | (cols[1] << wa) | (cols[2] << (wa + wi))).astype(np.uint32)


def decode_uops(words: np.ndarray, config: VDLAConfig) -> tuple[np.ndarray, ...]:
    wa, wi, ww = uop_fields(config)
    w = np.asarray(words, np.int64)
    return (w & ((1 << wa) - 1), (w >> wa) & ((1 << wi) - 1), (w >> (wa + wi)) & ((1 << ww) - 1))
