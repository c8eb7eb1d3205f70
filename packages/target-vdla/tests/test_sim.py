"""The simulator: each opcode against numpy, the timing model against hand-counted cycles,
and the errors (deadlock, queue overflow, SRAM range, missing tokens)."""

import numpy as np
import pytest

from tensorforge_vdla.config import VDLAConfig
from tensorforge_vdla.errors import (
    VDLADeadlockError,
    VDLAHazardError,
    VDLAQueueOverflowError,
    VDLASimError,
    VDLASramRangeError,
)
from tensorforge_vdla.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store, encode_uops
from tensorforge_vdla.sim import Simulator

CFG = VDLAConfig()
RNG = np.random.default_rng(0)


def _dram(nbytes=1 << 16):
    return np.zeros(nbytes, np.uint8)


def _put(dram, byte, arr):
    raw = np.ascontiguousarray(arr).view(np.uint8).ravel()
    dram[byte:byte + raw.size] = raw


def _get(dram, byte, dtype, shape):
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return dram[byte:byte + n].view(dtype).reshape(shape)


def _uops(dram, byte, acc, inp, wgt):
    _put(dram, byte, encode_uops(np.array(acc), np.array(inp), np.array(wgt), CFG))
    return Load(mem=MemId.UOP, sram_base=0, dram_base=byte // 4, y_size=1, x_size=len(acc),
                x_stride=len(acc))


def _run(prog, dram, **kw):
    return Simulator(CFG, **kw).run(prog, dram)


def test_load_with_padding_then_store_narrowed():
    """A padded 2-D load into acc, stored back through the int8 view (low 8 bits)."""
    dram = _dram()
    src = RNG.integers(-1000, 1000, (3, 5, 16)).astype(np.int32)  # 3 rows of 5 tiles
    _put(dram, 4096, src)
    prog = [Load(mem=MemId.ACC, sram_base=0, dram_base=4096 // 64, y_size=2, x_size=3,
                 x_stride=5, y_pad0=1, y_pad1=1, x_pad0=2, x_pad1=0, push_next=True),
            Store(mem=MemId.ACC, sram_base=0, dram_base=8192 // 64, y_size=4, x_size=5,
                  x_stride=5, pop_prev=True, push_prev=True),
            Store(mem=MemId.OUT, sram_base=0, dram_base=12288 // 16, y_size=4, x_size=5,
                  x_stride=5),
            Finish(pop_next=True)]
    _run(prog, dram)
    want = np.zeros((4, 5, 16), np.int32)
    want[1:3, 2:5] = src[0:2, 0:3]
    np.testing.assert_array_equal(_get(dram, 8192, np.int32, (4, 5, 16)), want)
    np.testing.assert_array_equal(_get(dram, 12288, np.int8, (4, 5, 16)), want.astype(np.int8))


def test_gemm_sums_repeated_accumulators_exactly():
    """Two loops x three micro-ops, several steps into one accumulator tile."""
    dram = _dram(1 << 17)
    inp = RNG.integers(-128, 128, (6, 1, 16)).astype(np.int8)
    wgt = RNG.integers(-128, 128, (4, 16, 16)).astype(np.int8)
    _put(dram, 4096, inp)
    _put(dram, 8192, wgt)
    acc_u, inp_u, wgt_u = [0, 0, 1], [0, 1, 2], [0, 1, 2]
    prog = [_uops(dram, 0, acc_u, inp_u, wgt_u),
            Load(mem=MemId.INP, sram_base=0, dram_base=4096 // 16, y_size=1, x_size=6,
                 x_stride=6),
            Load(mem=MemId.WGT, sram_base=0, dram_base=8192 // 256, y_size=1, x_size=4,
                 x_stride=4, push_next=True),
            Gemm(reset=True, uop_bgn=0, uop_end=3, lp0=2, lp1=1, acc_f0=2),
            Gemm(uop_bgn=0, uop_end=3, lp0=2, lp1=2, acc_f0=2, acc_f1=0, inp_f0=3, inp_f1=0,
                 wgt_f0=0, wgt_f1=1, pop_prev=True, push_next=True),
            Store(mem=MemId.ACC, sram_base=0, dram_base=16384 // 64, y_size=1, x_size=4,
                  x_stride=4, pop_prev=True)]
    _run(prog, dram)
    want = np.zeros((4, 1, 16), np.int64)
    x, w = inp.astype(np.int64), wgt.astype(np.int64)
    for i0 in range(2):
        for i1 in range(2):
            for a, i, k in zip(acc_u, inp_u, wgt_u):
                want[a + 2 * i0] += x[i + 3 * i0] @ w[k + i1]
    np.testing.assert_array_equal(_get(dram, 16384, np.int32, (4, 1, 16)), want)


@pytest.mark.parametrize("op", list(AluOp))
@pytest.mark.parametrize("use_imm", [True, False])
def test_alu_op_matches_numpy(op, use_imm):
    dram = _dram()
    acc = RNG.integers(-(1 << 20), 1 << 20, (4, 1, 16)).astype(np.int32)
    if op == AluOp.SHR:
        acc[2:] = RNG.integers(-5, 10, (2, 1, 16))  # per-lane shifts for the tensor form
    _put(dram, 4096, acc)
    imm = {AluOp.SHR: -3, AluOp.MUL: 3001}.get(op, -77)
    prog = [_uops(dram, 0, [0, 1], [2, 3], [0, 0]),
            Load(mem=MemId.ACC, sram_base=0, dram_base=4096 // 64, y_size=1, x_size=4,
                 x_stride=4),
            Alu(op=op, use_imm=use_imm, imm=imm, uop_bgn=0, uop_end=2, push_next=True),
            Store(mem=MemId.ACC, sram_base=0, dram_base=8192 // 64, y_size=1, x_size=2,
                  x_stride=2, pop_prev=True)]
    _run(prog, dram)
    a = acc[:2].astype(np.int64)
    b = np.full_like(a, imm) if use_imm else acc[2:].astype(np.int64)
    ref = {AluOp.MIN: np.minimum(a, b), AluOp.MAX: np.maximum(a, b), AluOp.ADD: a + b,
           AluOp.MUL: a * b,
           AluOp.SHR: np.where(b >= 0, a >> np.maximum(b, 0), a << np.maximum(-b, 0))}[op]
    np.testing.assert_array_equal(_get(dram, 8192, np.int32, (2, 1, 16)),
                                  ref.astype(np.int32))


def test_timing_matches_hand_counted_cycles():
    """Load 256 B -> GEMM of 16 steps -> store 1 KiB, with latency 64 and 8 B/cycle:
    load   [0, 96):    port [0, 32) for 256 B, + 64 latency
    gemm   [96, 112):  waits for the load's token, 16 steps
    store  [112, 304): waits for the GEMM's token, port [112, 240) for 1024 B, + 64
    """
    dram = _dram()
    prog = [Load(mem=MemId.INP, sram_base=0, dram_base=256, y_size=1, x_size=16, x_stride=16,
                 push_next=True),
            Gemm(uop_bgn=0, uop_end=1, lp0=4, lp1=4, pop_prev=True, push_next=True),
            Store(mem=MemId.ACC, sram_base=0, dram_base=512, y_size=1, x_size=16, x_stride=16,
                  pop_prev=True)]
    r = _run(prog, dram)
    assert list(r.start) == [0, 96, 112] and list(r.end) == [96, 112, 304]
    assert r.total_cycles == 304
    assert r.gemm_cycles == 16 and r.utilization == pytest.approx(16 / 304)
    assert r.busy == {"load": 96, "compute": 16, "store": 192}
    assert r.stalls["compute"] == {"token load->compute": 96}
    assert r.stalls["store"] == {"token compute->store": 112}
    assert r.dram_bytes_read == 256 and r.dram_bytes_written == 1024


def test_shared_dram_port_serializes_transfers():
    """Two loads from different modules at cycle 0: the second waits for the port."""
    dram = _dram()
    prog = [Load(mem=MemId.INP, sram_base=0, dram_base=256, y_size=1, x_size=64, x_stride=64),
            Load(mem=MemId.ACC, sram_base=0, dram_base=64, y_size=1, x_size=8, x_stride=8)]
    r = _run(prog, dram)
    # load module wins the tie: 1024 B = port [0, 128); compute's 512 B = port [128, 192)
    assert list(r.start) == [0, 0] and list(r.end) == [128 + 64, 192 + 64]
    assert r.stalls["compute"] == {"dram port": 128}


def test_removed_push_deadlocks_naming_the_blocked_instructions():
    prog = [Load(mem=MemId.INP, y_size=1, x_size=1, x_stride=1),  # push_next removed
            Gemm(uop_bgn=0, uop_end=1, pop_prev=True, push_next=True),
            Store(mem=MemId.ACC, y_size=1, x_size=1, x_stride=1, pop_prev=True)]
    with pytest.raises(VDLADeadlockError) as err:
        _run(prog, _dram())
    msg = str(err.value)
    assert "compute: blocked at instruction 1 (GEMM" in msg
    assert "store: blocked at instruction 2 (STORE" in msg and "load: done" in msg
    assert "waiting on load->compute" in msg and "load->compute: 0" in msg


def test_queue_overflow_is_an_error():
    cfg = VDLAConfig(queue_depth=2)
    # compute is busy for 1000 cycles while three loads push: three tokens, depth two
    prog = [Load(mem=MemId.INP, sram_base=k, y_size=1, x_size=1, x_stride=1, push_next=True)
            for k in range(3)]
    prog += [Gemm(reset=True, uop_bgn=0, uop_end=1, lp0=1000)]
    prog += [Gemm(uop_bgn=0, uop_end=1, pop_prev=True)] * 3
    with pytest.raises(VDLAQueueOverflowError, match="load->compute queue, which already "
                                                      "holds 2"):
        Simulator(cfg).run(prog, _dram())


def test_sram_range_and_leftover_tokens_are_errors():
    with pytest.raises(VDLASramRangeError, match="inp tiles \\[2040, 2056\\) but the inp "
                                                 "buffer holds 2048 tiles"):
        _run([Load(mem=MemId.INP, sram_base=2040, y_size=1, x_size=16, x_stride=16)], _dram())
    with pytest.raises(VDLASramRangeError, match="DRAM"):
        _run([Load(mem=MemId.INP, dram_base=1 << 20, y_size=1, x_size=1, x_stride=1)], _dram())
    with pytest.raises(VDLASimError, match="token\\(s\\) left on the load->compute queue"):
        _run([Load(mem=MemId.INP, y_size=1, x_size=1, x_stride=1, push_next=True)], _dram())


def test_missing_pop_is_a_hazard():
    """The GEMM does not wait for the load it reads: the hazard checker says so."""
    prog = [Load(mem=MemId.INP, y_size=1, x_size=16, x_stride=16, push_next=True),
            Gemm(uop_bgn=0, uop_end=1),  # pop_prev removed
            Gemm(uop_bgn=0, uop_end=1, pop_prev=True)]
    with pytest.raises(VDLAHazardError, match="instruction 1 .* starts at cycle 0 but inp tile 0 "
                                              "is still written by instruction 0"):
        _run(prog, _dram())
    _run(prog, _dram(), check_hazards=False)  # the unchecked run goes through
