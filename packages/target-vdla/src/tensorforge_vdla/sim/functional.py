"""The functional model: what each instruction does to the SRAMs and DRAM, exactly.

Every instruction is one numpy operation over its whole iteration space (a 2-D gather for the
DMA, a batched int8 x int8 -> int32 product with a segmented sum for GEMM, one lane-wise
operation for the ALU). `footprint` gives the SRAM tiles an instruction reads and writes, which
the hazard checker compares against the timing model's schedule."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..isa import Alu, AluOp, Finish, Gemm, Insn, Load, MemId, Store, decode_uops
from .memory import Memory

#: steps of a GEMM done per numpy batch (bounds the temporary arrays)
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Footprint:
    """SRAM tiles read and written, by memory name (index arrays, may repeat)."""

    reads: dict[str, np.ndarray]
    writes: dict[str, np.ndarray]


def _block(base: int, rows: int, cols: int) -> np.ndarray:
    return np.arange(base, base + rows * cols, dtype=np.int64)


def _dram_index(insn: Load | Store) -> np.ndarray:
    y = np.arange(insn.y_size, dtype=np.int64)[:, None] * insn.x_stride
    return (insn.dram_base + y + np.arange(insn.x_size, dtype=np.int64)[None, :]).ravel()


def _loop_index(base: np.ndarray, lp0: int, lp1: int, f0: int, f1: int) -> np.ndarray:
    i0 = np.arange(lp0, dtype=np.int64)[:, None, None] * f0
    i1 = np.arange(lp1, dtype=np.int64)[None, :, None] * f1
    return (base[None, None, :] + i0 + i1).ravel()


def _uop_columns(insn: Gemm | Alu, m: Memory) -> tuple[np.ndarray, ...]:
    m.check_sram("uop", insn.uop_bgn, insn.uop_end, insn)
    if insn.uop_end < insn.uop_bgn:
        from ..errors import VDLASimError

        raise VDLASimError(f"{insn}: uop_end < uop_bgn")
    return decode_uops(m.sram["uop"][insn.uop_bgn:insn.uop_end], m.config)


def gemm_indices(insn: Gemm, m: Memory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, i, w = _uop_columns(insn, m)
    acc = _loop_index(a, insn.lp0, insn.lp1, insn.acc_f0, insn.acc_f1)
    inp = _loop_index(i, insn.lp0, insn.lp1, insn.inp_f0, insn.inp_f1)
    wgt = _loop_index(w, insn.lp0, insn.lp1, insn.wgt_f0, insn.wgt_f1)
    return acc, inp, wgt


def alu_indices(insn: Alu, m: Memory) -> tuple[np.ndarray, np.ndarray]:
    a, s, _ = _uop_columns(insn, m)
    dst = _loop_index(a, insn.lp0, insn.lp1, insn.dst_f0, insn.dst_f1)
    src = _loop_index(s, insn.lp0, insn.lp1, insn.src_f0, insn.src_f1)
    return dst, src


def footprint(insn: Insn, m: Memory) -> Footprint:
    """The SRAM tiles `insn` reads and writes (from the current micro-op SRAM)."""
    if isinstance(insn, Load):
        key = insn.mem.key
        return Footprint({}, {key: _block(insn.sram_base, insn.rows, insn.cols)})
    if isinstance(insn, Store):
        return Footprint({"acc": _block(insn.sram_base, insn.y_size, insn.x_size)}, {})
    uops = np.arange(getattr(insn, "uop_bgn", 0), getattr(insn, "uop_end", 0), dtype=np.int64)
    if isinstance(insn, Gemm):
        acc, inp, wgt = gemm_indices(insn, m)
        if insn.reset:
            return Footprint({"uop": uops}, {"acc": acc})
        return Footprint({"uop": uops, "inp": inp, "wgt": wgt, "acc": acc}, {"acc": acc})
    if isinstance(insn, Alu):
        dst, src = alu_indices(insn, m)
        reads = {"uop": uops, "acc": dst if insn.use_imm else np.concatenate([dst, src])}
        return Footprint(reads, {"acc": dst})
    return Footprint({}, {})


def execute(insn: Insn, m: Memory) -> None:
    """Apply `insn` to the machine state."""
    if isinstance(insn, Load):
        _load(insn, m)
    elif isinstance(insn, Store):
        _store(insn, m)
    elif isinstance(insn, Gemm):
        _gemm(insn, m)
    elif isinstance(insn, Alu):
        _alu(insn, m)
    elif not isinstance(insn, Finish):
        raise TypeError(f"not a VDLA instruction: {insn!r}")


def _load(insn: Load, m: Memory) -> None:
    key = insn.mem.key
    if insn.mem == MemId.OUT:
        from ..errors import VDLASimError

        raise VDLASimError(f"{insn}: the out view of the accumulators is store-only")
    m.check_sram(key, insn.sram_base, insn.sram_base + insn.sram_tiles, insn)
    src_idx = _dram_index(insn)
    if src_idx.size:
        m.check_dram(key, int(src_idx.min()), int(src_idx.max()) + 1, insn)
    sram = m.sram[key]
    dst = sram[insn.sram_base:insn.sram_base + insn.sram_tiles]
    dst = dst.reshape(insn.rows, insn.cols, *sram.shape[1:])
    dst[...] = 0
    tiles = m.dram_tiles(key)[src_idx].reshape(insn.y_size, insn.x_size, *sram.shape[1:])
    dst[insn.y_pad0:insn.y_pad0 + insn.y_size, insn.x_pad0:insn.x_pad0 + insn.x_size] = tiles


def _store(insn: Store, m: Memory) -> None:
    if insn.mem not in (MemId.ACC, MemId.OUT):
        from ..errors import VDLASimError

        raise VDLASimError(f"{insn}: stores read the accumulators (mem acc or out)")
    n = insn.y_size * insn.x_size
    m.check_sram("acc", insn.sram_base, insn.sram_base + n, insn)
    dst_idx = _dram_index(insn)
    key = insn.mem.key
    if dst_idx.size:
        m.check_dram(key, int(dst_idx.min()), int(dst_idx.max()) + 1, insn)
    tiles = m.sram["acc"][insn.sram_base:insn.sram_base + n]
    if insn.mem == MemId.OUT:
        tiles = tiles.astype(np.int8)  # the low 8 bits, as the hardware's narrowing does
    m.dram_tiles(key)[dst_idx] = tiles


def _segment_add(acc: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    """acc[idx] += vals with repeated indices summed, wrapping to int32 like the hardware."""
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    starts = np.flatnonzero(np.concatenate([[True], sidx[1:] != sidx[:-1]]))
    sums = np.add.reduceat(vals[order], starts, axis=0)
    uniq = sidx[starts]
    acc[uniq] = (acc[uniq].astype(np.int64) + sums).astype(np.int32)


def _gemm(insn: Gemm, m: Memory) -> None:
    acc_i, inp_i, wgt_i = gemm_indices(insn, m)
    if not acc_i.size:
        return
    c = m.config
    for name, idx in (("acc", acc_i), ("inp", inp_i), ("wgt", wgt_i)):
        if name == "acc" or not insn.reset:
            m.check_sram(name, int(idx.min()), int(idx.max()) + 1, insn)
    acc = m.sram["acc"]
    if insn.reset:
        acc[acc_i] = 0
        return
    # an int8 x int8 dot of block_in terms is exact in float32 (|sum| < 2^24 for block_in <= 64)
    assert c.block_in <= 64
    inp, wgt = m.sram["inp"], m.sram["wgt"]
    for lo in range(0, acc_i.size, _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        x = inp[inp_i[sl]].astype(np.float32)
        w = wgt[wgt_i[sl]].astype(np.float32)
        prod = np.matmul(x, w).astype(np.int64)
        _segment_add(acc, acc_i[sl], prod)


def _alu_apply(op: AluOp, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x64, y64 = x.astype(np.int64), y.astype(np.int64)
    if op == AluOp.MIN:
        r = np.minimum(x64, y64)
    elif op == AluOp.MAX:
        r = np.maximum(x64, y64)
    elif op == AluOp.ADD:
        r = x64 + y64
    elif op == AluOp.MUL:
        r = x64 * y64
    else:  # SHR: arithmetic right shift; negative amounts shift left
        s = np.clip(y64, -31, 31)
        r = np.where(s >= 0, x64 >> np.maximum(s, 0), x64 << np.maximum(-s, 0))
    return r.astype(np.int32)  # wraps modulo 2^32 like the 32-bit ALU


def _alu(insn: Alu, m: Memory) -> None:
    dst, src = alu_indices(insn, m)
    if not dst.size:
        return
    m.check_sram("acc", int(dst.min()), int(dst.max()) + 1, insn)
    if not insn.use_imm:
        m.check_sram("acc", int(src.min()), int(src.max()) + 1, insn)
    acc = m.sram["acc"]
    unique = np.unique(dst).size == dst.size
    if unique and (insn.use_imm or not np.isin(src[src != dst], dst).any()):
        y = np.full_like(acc[dst], insn.imm) if insn.use_imm else acc[src]
        acc[dst] = _alu_apply(insn.op, acc[dst], y)
        return
    for d, s in zip(dst.tolist(), src.tolist()):  # steps that read each other's results
        y = np.full_like(acc[d], insn.imm) if insn.use_imm else acc[s]
        acc[d] = _alu_apply(insn.op, acc[d], y)
