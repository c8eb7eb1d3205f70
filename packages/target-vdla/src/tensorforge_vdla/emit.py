"""emit: the optimized loop IR of one kernel -> a `Program` (instructions in program order).

The loops left in the IR are host loops: they are run here, at compile time, with every
`vdla.*` call turned into one instruction with concrete addresses. Every on-chip `Allocate`
gets a static SRAM region (a stack per memory, so a buffer allocated inside a loop has the
same tiles in every iteration); the sum of what is live must fit the SRAM, else a
`VDLABufferOverflowError` names the buffers and the bytes. Parameters are laid out in DRAM
in order, each aligned; the micro-op kernels are deduplicated into one segment after them and
loaded into the micro-op SRAM on first use (flushed when it fills up).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tensorforge.arith import evaluate
from tensorforge.expr import Buffer, BufferLoad, Call, IntImm, PrimExpr, Var
from tensorforge.expr import dtype as dt
from tensorforge.tir.stmt import (
    Allocate,
    AttrStmt,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)

from .config import VDLAConfig
from .errors import VDLABufferOverflowError, VDLACompileError
from .isa import Alu, AluOp, Gemm, Insn, Load, MemId, Store, encode_uops
from .passes.common import SCOPE_MEM
from .passes.loopcall import parse
from .program import DRAM_ALIGN, ParamSpec, Program

_PAD_MAX = 15


@dataclass
class _Param:
    spec: ParamSpec
    esize: int


@dataclass
class _Sram:
    mem: str
    base: int  # tiles
    tiles: int
    name: str


@dataclass
class _State:
    config: VDLAConfig
    name: str
    params: dict[Var, _Param] = field(default_factory=dict)
    sram: dict[Var, _Sram] = field(default_factory=dict)
    top: dict[str, int] = field(default_factory=lambda: {"inp": 0, "wgt": 0, "acc": 0})
    live: dict[str, list[_Sram]] = field(default_factory=lambda: {"inp": [], "wgt": [],
                                                                  "acc": []})
    peak: dict[str, int] = field(default_factory=lambda: {"inp": 0, "wgt": 0, "acc": 0})
    env: dict[Var, int] = field(default_factory=dict)
    insns: list[Insn] = field(default_factory=list)
    kernels: dict[bytes, int] = field(default_factory=dict)  # words -> offset in the segment
    segment: list[np.ndarray] = field(default_factory=list)
    seg_words: int = 0
    resident: dict[bytes, int] = field(default_factory=dict)  # words -> uop SRAM base
    uop_top: int = 0
    uop_base: int = 0  # bytes


def emit(func: PrimFunc, config: VDLAConfig) -> Program:
    from tensorforge.expr import post_order_collect

    if not post_order_collect(func.body, lambda n: isinstance(n, Call)
                              and n.op.startswith("vdla.")):
        raise VDLACompileError(
            f"{func.name}: this kernel was not scheduled for VDLA (it has no DMA, GEMM or ALU "
            "operation). Schedule operators with tensorforge_vdla.strategies / .dense; "
            "a whole model runs its quantized conv2d/dense here and the rest on the host "
            "(`vdla -host=llvm`, tensorforge.quantize first)")
    st = _State(config, func.name)
    shapes = func.attrs.get("buffer_shapes") or [None] * len(func.params)
    offset = 0
    specs = []
    for p, shape in zip(func.params, shapes):
        if not isinstance(p, Buffer):
            raise VDLACompileError(f"{func.name}: VDLA kernels take buffers only, not scalar "
                                   f"{p.name}")
        n = _const(p.shape[0], "buffer size")
        esize = dt.nbytes(p.dtype)
        spec = ParamSpec(p.name, tuple(shape) if shape else (n,), p.dtype, offset, n * esize)
        st.params[p.data] = _Param(spec, esize)
        specs.append(spec)
        offset = _align(offset + n * esize)
    uop_offset = st.uop_base = offset  # the micro-op segment follows the parameters
    _stmt(func.body, st)
    uops = np.concatenate(st.segment) if st.segment else np.zeros(0, np.uint32)
    dram_bytes = _align(uop_offset + 4 * uops.size)
    return Program(func.name, config, st.insns, uops, tuple(specs), uop_offset, dram_bytes,
                   dict(st.peak))


def _align(n: int) -> int:
    return -(-n // DRAM_ALIGN) * DRAM_ALIGN


def _const(e: PrimExpr, what: str) -> int:
    if not isinstance(e, IntImm):
        raise VDLACompileError(f"{what} must be constant, got {e}")
    return e.value


def _eval(e: PrimExpr, st: _State) -> int:
    if isinstance(e, IntImm):
        return e.value
    return int(evaluate(e, st.env))


def _stmt(s: Stmt, st: _State) -> None:
    if isinstance(s, SeqStmt):
        for x in s.seq:
            _stmt(x, st)
    elif isinstance(s, For):
        lo, n = _eval(s.min, st), _eval(s.extent, st)
        for i in range(lo, lo + n):
            st.env[s.loop_var] = i
            _stmt(s.body, st)
        st.env.pop(s.loop_var, None)
    elif isinstance(s, Allocate):
        _allocate(s, st)
    elif isinstance(s, AttrStmt):
        _stmt(s.body, st)
    elif isinstance(s, LetStmt):
        st.env[s.var] = _eval(s.value, st)
        _stmt(s.body, st)
    elif isinstance(s, IfThenElse):
        if _eval(s.condition, st):
            _stmt(s.then_case, st)
        elif s.else_case is not None:
            _stmt(s.else_case, st)
    elif isinstance(s, Evaluate):
        if isinstance(s.value, Call) and s.value.op.startswith("vdla."):
            _call(s.value, st)
        elif not isinstance(s.value, IntImm):
            raise VDLACompileError(f"{st.name}: VDLA cannot run {s.value}")
    else:
        raise VDLACompileError(
            f"{st.name}: statement {type(s).__name__} was not lowered to VDLA instructions "
            f"(a loop nest without a dma_copy / alu pragma or a tensorized GEMM?):\n{s}")


def _allocate(s: Allocate, st: _State) -> None:
    b = s.buffer
    mem_id = SCOPE_MEM.get(b.scope)
    if mem_id is None:
        raise VDLACompileError(f"{st.name}: buffer {b.name} is allocated in scope {b.scope!r}; "
                               "VDLA kernels allocate only inp_buffer, wgt_buffer, acc_buffer")
    mem = mem_id.key
    c = st.config
    n = _const(b.shape[0], f"size of {b.name}")
    tiles = -(-n // c.tile_elems(mem))
    region = _Sram(mem, st.top[mem], tiles, b.name)
    st.top[mem] += tiles
    st.live[mem].append(region)
    if st.top[mem] > c.depth(mem):
        have = c.buffer_bytes(mem)
        tb = c.tile_bytes(mem)
        parts = ", ".join(f"{r.name} {r.tiles * tb} B" for r in st.live[mem])
        raise VDLABufferOverflowError(
            f"{st.name}: the {mem} buffer needs {st.top[mem] * tb} bytes ({parts}) but has "
            f"{have}; shrink the tile (smaller splits of the axes these buffers cover)")
    st.peak[mem] = max(st.peak[mem], st.top[mem])
    st.sram[b.data] = region
    _stmt(s.body, st)
    st.live[mem].pop()
    st.top[mem] -= tiles
    del st.sram[b.data]


def _sram_tile(arg: PrimExpr, st: _State, mem: str, what: str) -> int:
    ld = _load(arg, what)
    region = st.sram.get(ld.buffer.data)
    if region is None:
        raise VDLACompileError(f"{st.name}: {what}: {ld.buffer.name} is not an on-chip buffer")
    te = st.config.tile_elems(mem)
    idx = _eval(ld.indices[0], st)
    if idx % te:
        raise VDLACompileError(f"{st.name}: {what}: element {idx} of {ld.buffer.name} does not "
                               f"start a {te}-element tile")
    return region.base + idx // te


def _dram_tile(arg: PrimExpr, st: _State, mem: str, what: str) -> int:
    ld = _load(arg, what)
    p = st.params.get(ld.buffer.data)
    if p is None:
        raise VDLACompileError(f"{st.name}: {what}: {ld.buffer.name} is not a kernel argument")
    tb = st.config.tile_bytes(mem)
    byte = p.spec.offset + _eval(ld.indices[0], st) * p.esize
    if byte % tb:
        raise VDLACompileError(f"{st.name}: {what}: {ld.buffer.name} at byte {byte} does not "
                               f"start a {tb}-byte tile")
    return byte // tb


def _load(arg: PrimExpr, what: str) -> BufferLoad:
    if isinstance(arg, Call) and arg.op == "address_of" and isinstance(arg.args[0], BufferLoad):
        return arg.args[0]
    raise VDLACompileError(f"{what}: operand {arg} is not address_of(buffer[index])")


def _call(call: Call, st: _State) -> None:
    op = call.op
    if op in ("vdla.load", "vdla.store"):
        _dma(call, st)
    elif op in ("vdla.gemm_loop", "vdla.alu_loop"):
        _micro(call, st)
    else:
        raise VDLACompileError(f"{st.name}: {op} reached code generation unfolded (fold_uops "
                               "handles GEMM and ALU calls inside loop nests)")


def _dma(call: Call, st: _State) -> None:
    a = call.args
    mem_id = MemId(_eval(a[0], st))
    what = f"{call.op} {mem_id.name.lower()}"
    mem = mem_id.key
    vals = [_eval(x, st) for x in a[3:]]
    if call.op == "vdla.load":
        ysz, xsz, stride, *pads = vals
        if any(p < 0 or p > _PAD_MAX for p in pads):
            raise VDLACompileError(f"{st.name}: {what}: padding {pads} exceeds {_PAD_MAX} rows "
                                   "or columns; pad the input in DRAM instead")
        sram = _sram_tile(a[1], st, mem, what)
        dram = _dram_tile(a[2], st, mem, what) if ysz > 0 and xsz > 0 else 0
        if ysz < 0 or xsz < 0:
            raise VDLACompileError(f"{st.name}: {what}: negative size {ysz}x{xsz}")
        st.insns.append(Load(mem=mem_id, sram_base=sram, dram_base=dram, y_size=ysz,
                             x_size=xsz, x_stride=stride, y_pad0=pads[0], y_pad1=pads[1],
                             x_pad0=pads[2], x_pad1=pads[3]))
    else:
        ysz, xsz, stride = vals
        sram = _sram_tile(a[1], st, "acc", what)
        dram = _dram_tile(a[2], st, mem, what)
        st.insns.append(Store(mem=mem_id, sram_base=sram, dram_base=dram, y_size=ysz,
                              x_size=xsz, x_stride=stride))


def _tiles(x: int, te: int, st: _State, what: str) -> int:
    if x % te:
        raise VDLACompileError(f"{st.name}: {what}: stride {x} elements is not whole "
                               f"{te}-element tiles")
    return x // te


def _micro(call: Call, st: _State) -> None:
    lc = parse(call)
    c = st.config
    gemm = lc.kind == "vdla.gemm_loop"
    reset = gemm and lc.head[0] == 1
    mems = ("acc", "inp", "wgt") if gemm else ("acc", "acc")
    used = (0,) if reset else tuple(range(len(mems)))
    if not gemm and lc.head[1]:  # an immediate: no source operand
        used = (0,)
    what = "GEMM" if gemm else f"ALU {AluOp(lc.head[0]).name}"
    bases = [_sram_tile(lc.addrs[i], st, mems[i], what) if i in used else 0
             for i in range(len(mems))]
    te = [c.tile_elems(m) for m in mems]
    factors = [tuple(_tiles(f, te[i], st, what) for f in lc.factors[i]) if i in used else (0, 0)
               for i in range(len(mems))]
    cols = [[bases[i] + _tiles(u[i], te[i], st, what) if i in used else 0 for u in lc.uops]
            for i in range(len(mems))]
    if not lc.uops:
        cols = [[b] for b in bases]
    acc, src = cols[0], cols[1]
    wgt = cols[2] if gemm else [0] * len(acc)
    words = encode_uops(np.array(acc), np.array(src), np.array(wgt), c)
    bgn = _resident(words, st)
    end = bgn + words.size
    (a0, a1), (s0, s1) = factors[0], factors[1]
    if gemm:
        w0, w1 = factors[2]
        st.insns.append(Gemm(reset=reset, uop_bgn=bgn, uop_end=end, lp0=lc.lp[0], lp1=lc.lp[1],
                             acc_f0=a0, acc_f1=a1, inp_f0=s0, inp_f1=s1, wgt_f0=w0, wgt_f1=w1))
    else:
        op, use_imm, imm = lc.head
        st.insns.append(Alu(op=AluOp(op), use_imm=bool(use_imm), imm=imm, uop_bgn=bgn,
                            uop_end=end, lp0=lc.lp[0], lp1=lc.lp[1], dst_f0=a0, dst_f1=a1,
                            src_f0=s0, src_f1=s1))


def _resident(words: np.ndarray, st: _State) -> int:
    """The micro-op SRAM base of a kernel, loading it (compute module) if it is not there."""
    key = words.tobytes()
    hit = st.resident.get(key)
    if hit is not None:
        return hit
    depth = st.config.depth("uop")
    if words.size > depth:
        raise VDLACompileError(f"{st.name}: a micro-op kernel of {words.size} micro-ops does not "
                               f"fit the {depth}-entry micro-op buffer")
    off = st.kernels.get(key)
    if off is None:
        off = st.kernels[key] = st.seg_words
        st.segment.append(words)
        st.seg_words += words.size
    if st.uop_top + words.size > depth:
        st.resident.clear()
        st.uop_top = 0
    base = st.uop_top
    st.uop_top += words.size
    st.resident[key] = base
    st.insns.append(Load(mem=MemId.UOP, sram_base=base, dram_base=st.uop_base // 4 + off,
                         y_size=1, x_size=words.size, x_stride=words.size))
    return base
