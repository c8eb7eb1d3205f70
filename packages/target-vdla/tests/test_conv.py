"""Convolutions compiled for VDLA: exact int32 results on the simulator, with one and two
virtual threads, under perturbed schedules, on the sibling design; the compile-time errors."""

import dataclasses

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.runtime import load_module
from tensorforge.schedule import ScheduleError
from tensorforge_vdla.config import VDLAConfig
from tensorforge_vdla.driver import SimDriver
from tensorforge_vdla.errors import (
    VDLABufferOverflowError,
    VDLADeadlockError,
    VDLAHazardError,
)
from tensorforge_vdla.runtime import VDLAModule, load_vdla_module
from tensorforge_vdla.strategies import ConvShape, Tile, conv2d_schedule
from tensorforge_vdla.workloads import conv_arrays, conv_reference

SMALL = ConvShape(h=8, w=8, icb=2, ocb=4, kh=3, kw=3, stride=1, pad=1)


def _build(shape, target, tile=None, n_vthreads=2):
    s, args = conv2d_schedule(shape, target, tile, n_vthreads)
    return tensorforge.build(s, args, target=target), args


def _check(mod, shape, cfg, seed=0):
    a = conv_arrays(shape, cfg, seed)
    out = np.zeros((1, shape.ocb, shape.oh, shape.ow, cfg.block_out), np.int32)
    mod(a["data"], a["kernel"], out)
    np.testing.assert_array_equal(out, conv_reference(shape, a["x"], a["w"], cfg.block_out))
    return mod.last_report


@pytest.mark.parametrize("n_vthreads", [1, 2])
@pytest.mark.parametrize("shape", [
    SMALL,
    ConvShape(h=9, w=9, icb=2, ocb=2, kh=3, kw=3, stride=2, pad=1),
    ConvShape(h=8, w=8, icb=4, ocb=2, kh=1, kw=1, stride=2, pad=0),
], ids=["3x3", "3x3s2", "1x1s2"])
def test_conv_is_exact(vdla, shape, n_vthreads):
    target = vdla()
    mod, _ = _build(shape, target, n_vthreads=n_vthreads)
    report = _check(mod, shape, VDLAConfig.from_target(target))
    assert report.gemm_cycles == shape.macs(VDLAConfig()) // 256  # every MAC once


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_conv_holds_under_perturbed_schedules(vdla, seed):
    """Random delays reorder the modules' overlap; the hazard checker then proves every
    conflicting SRAM access is still ordered, and the results stay exact."""
    target = vdla()
    mod, _ = _build(SMALL, target, Tile(4, 8, 1, 1))
    mod.use_driver(SimDriver(VDLAConfig.from_target(target), jitter_seed=seed))
    _check(mod, SMALL, VDLAConfig.from_target(target))


def test_conv_on_the_sibling_design(vdla):
    target = vdla("vdla/1x32x32")
    cfg = VDLAConfig.from_target(target)
    assert (cfg.block_in, cfg.block_out) == (32, 32)
    shape = ConvShape(h=7, w=7, icb=2, ocb=2, kh=3, kw=3, stride=1, pad=1)
    mod, _ = _build(shape, target)
    _check(mod, shape, cfg)
    assert "gemm_1x32x32_int8_acc32" in str(te.get_intrin("gemm_1x32x32_int8_acc32",
                                                          target).name)


def test_two_virtual_threads_hide_load_latency(vdla):
    target = vdla()
    tile = Tile(4, 8, 1, 1)
    one = _check(_build(SMALL, target, tile, 1)[0], SMALL, VDLAConfig())
    two = _check(_build(SMALL, target, tile, 2)[0], SMALL, VDLAConfig())
    assert two.gemm_cycles == one.gemm_cycles
    assert two.total_cycles < one.total_cycles


def test_tile_too_large_names_buffer_bytes_and_split(vdla):
    big = ConvShape(h=56, w=56, icb=4, ocb=4, kh=3, kw=3, stride=1, pad=1)
    with pytest.raises(VDLABufferOverflowError) as err:
        conv2d_schedule(big, vdla(), Tile(8, 56, 4, 1), 2)
    msg = str(err.value)
    assert "needs 229376 bytes of acc_buffer but the design has 131072" in msg
    assert "shrink tile rows/cols or output-channel blocks" in msg


def test_emit_overflow_names_the_live_buffers(vdla):
    """A design with a smaller input buffer than the schedule was checked for: emit refuses
    with the buffers it had placed."""
    big = ConvShape(h=16, w=16, icb=2, ocb=2, kh=3, kw=3, stride=1, pad=1)
    s, args = conv2d_schedule(big, vdla(), Tile(16, 16, 1, 2), 1)
    with pytest.raises(VDLABufferOverflowError, match=r"the inp buffer needs 10368 bytes "
                                                      r"\(.*inp_buffer 10368 B\) but has 8192"):
        tensorforge.build(s, args, target=vdla("vdla -inp-kib=8"))


def test_removed_push_in_a_compiled_program_deadlocks(vdla):
    target = vdla()
    mod, _ = _build(SMALL, target, Tile(4, 8, 1, 1))
    prog = mod.programs[0]
    k = next(i for i, x in enumerate(prog.insns) if x.push_next and x.stage.name == "LOAD")
    prog.insns[k] = dataclasses.replace(prog.insns[k], push_next=False)
    a = conv_arrays(SMALL, VDLAConfig())
    with pytest.raises(VDLADeadlockError, match="waiting on load->compute"):
        mod(a["data"], a["kernel"], np.zeros((1, 4, 8, 8, 16), np.int32))


def test_removed_pop_in_a_compiled_program_is_a_hazard(vdla):
    """A 1x1 convolution with one virtual thread: each GEMM is shorter than the load of the
    next input block, so a GEMM that does not wait reads the block before it arrives."""
    shape = ConvShape(h=8, w=8, icb=2, ocb=2, kh=1, kw=1, stride=1, pad=0)
    mod, _ = _build(shape, vdla(), Tile(8, 8, 1, 1), 1)
    prog = mod.programs[0]
    gemms = [i for i, x in enumerate(prog.insns) if x.pop_prev and x.stage.name == "COMPUTE"]
    k = gemms[1]
    j = max(i for i in range(k) if prog.insns[i].push_next and prog.insns[i].stage.name == "LOAD")
    prog.insns[k] = dataclasses.replace(prog.insns[k], pop_prev=False)
    prog.insns[j] = dataclasses.replace(prog.insns[j], push_next=False)
    a = conv_arrays(shape, VDLAConfig())
    with pytest.raises(VDLAHazardError, match="token between them is missing"):
        mod(a["data"], a["kernel"], np.zeros((1, 2, 8, 8, 16), np.int32))


def test_export_and_load_without_the_compiler(vdla, tmp_path):
    mod, _ = _build(SMALL, vdla())
    path = tmp_path / "conv.vdla"
    mod.export_library(path)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["conv.vdla", "conv.vdla.json"]
    back = load_module(path)  # core's loader: the sidecar names tensorforge_vdla's
    assert isinstance(back, VDLAModule)
    assert load_vdla_module(path).programs[0].insns == mod.programs[0].insns
    # loading needs the runtime only, none of the compiler
    import subprocess
    import sys

    code = ("import sys; from tensorforge.runtime import load_module; "
            f"m = load_module({str(path)!r}); "
            "assert not [x for x in sys.modules if x.startswith(('tensorforge.tir', "
            "'tensorforge.te', 'tensorforge_vdla.emit', 'tensorforge_vdla.passes'))], "
            "sorted(sys.modules); print(type(m).__name__)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and "VDLAModule" in res.stdout, res.stderr
    assert [i for i in back.programs[0].insns] == mod.programs[0].insns
    report = _check(back, SMALL, VDLAConfig())
    timer = back.time_evaluator(back.entry_name, repeat=2)
    a = conv_arrays(SMALL, VDLAConfig())
    t = timer(a["data"], a["kernel"], np.zeros((1, 4, 8, 8, 16), np.int32))
    assert t.median == pytest.approx(report.total_cycles / 200e6)


def test_wrong_weight_layout_is_a_tensorize_error(vdla):
    """Weights stored OIHW16o16i: the nest multiplies wgt[o, k], the intrinsic wgt[k, o]."""
    target = vdla()
    data = te.placeholder((1, 1, 4, 4, 16), "int8", name="data")
    kernel = te.placeholder((1, 1, 1, 1, 16, 16), "int8", name="kernel")
    ic = te.reduce_axis((0, 16), name="ic")
    conv = te.compute(
        (1, 1, 4, 4, 16),
        lambda n, c, y, x, o: te.sum(data[n, 0, y, x, ic].astype("int32")
                                     * kernel[c, 0, 0, 0, o, ic].astype("int32"), axis=ic),
        name="conv")
    s = te.create_schedule(conv.op)
    res = s.cache_write(conv, "acc_buffer")
    s.cache_read(data, "inp_buffer", [res])
    s.cache_read(kernel, "wgt_buffer", [res])
    s[res].tensorize(s[res].op.axis[4], te.get_intrin("gemm_1x16x16_int8_acc32", target))
    with pytest.raises(ScheduleError, match="does not compute what intrinsic "
                                            "'gemm_1x16x16_int8_acc32'"):
        tensorforge.lower(s, [data, kernel, conv], simple_mode=True)


@pytest.mark.parametrize("n_vthreads,seed", [(1, None), (2, None), (2, 1), (2, 2), (2, 3)])
def test_conv_bias_relu_requantize_on_the_alu(vdla, n_vthreads, seed):
    """The element-wise chain after the GEMM runs on the ALU in the accumulators (bias tile
    loaded by the compute module, broadcast over the pixels), stored narrowed to int8."""
    from tensorforge_vdla.isa import Alu, AluOp, MemId, Store
    from tensorforge_vdla.strategies import conv2d_te, schedule_conv2d

    cfg = VDLAConfig()
    data, kernel, conv = conv2d_te(SMALL, cfg)
    bias = te.placeholder((1, SMALL.ocb, 1, 1, 16), "int32", name="bias")
    b = te.compute(conv.shape, lambda n, c, y, x, o: conv[n, c, y, x, o] + bias[0, c, 0, 0, o],
                   name="bias_add")
    r = te.compute(conv.shape, lambda *i: te.max_expr(b[i], 0), name="relu")
    q = te.compute(conv.shape, lambda *i: te.min_expr(te.floordiv(r[i] * 3 + 64, 128), 127),
                   name="requant")
    out = te.compute(conv.shape, lambda *i: q[i].astype("int8"), name="out")
    s = schedule_conv2d([out], vdla(), None, n_vthreads)
    mod = tensorforge.build(s, [data, kernel, bias, out], target="vdla")
    mod.use_driver(SimDriver(cfg, jitter_seed=seed))  # seed: a perturbed schedule
    insns = mod.programs[0].insns
    ops = [i.op for i in insns if isinstance(i, Alu)]
    assert {AluOp.ADD, AluOp.MAX, AluOp.MUL, AluOp.SHR, AluOp.MIN} <= set(ops)
    assert any(isinstance(i, Store) and i.mem == MemId.OUT for i in insns)
    a = conv_arrays(SMALL, cfg)
    bb = np.random.default_rng(0).integers(-50000, 50000, (1, 4, 1, 1, 16)).astype(np.int32)
    got = np.zeros((1, 4, 8, 8, 16), np.int8)
    mod(a["data"], a["kernel"], bb, got)
    ref = conv_reference(SMALL, a["x"], a["w"], 16).astype(np.int64) + bb
    np.testing.assert_array_equal(got, np.minimum((np.maximum(ref, 0) * 3 + 64) // 128, 127))


def test_removing_any_one_token_is_caught(vdla):
    """Each token pair of a compiled program is needed: dropping a pair (push and pop) leaves a
    dependency unordered, which verify_tokens reports for every timing; dropping a single push
    deadlocks and a single pop leaves a token behind (test_sim.py)."""
    from tensorforge_vdla.tokens import verify_tokens

    mod, _ = _build(SMALL, vdla(), Tile(4, 8, 1, 1))
    prog = mod.programs[0]
    verify_tokens(prog)
    original = list(prog.insns)
    pairs = []  # (push index, flag, pop index, flag), matched FIFO per queue
    from collections import deque

    from tensorforge_vdla.isa import QUEUES, neighbours

    pending = {q: deque() for q in QUEUES}
    for j, insn in enumerate(original):
        b = insn.stage
        prev, nxt = neighbours(b)
        for flag, a in (("pop_prev", prev), ("pop_next", nxt)):
            if getattr(insn, flag):
                i, pflag = pending[(a, b)].popleft()
                pairs.append((i, pflag, j, flag))
        for flag, a in (("push_prev", prev), ("push_next", nxt)):
            if getattr(insn, flag):
                pending[(b, a)].append((j, flag))
    assert len(pairs) > 10
    for i, pflag, j, flag in pairs:
        prog.insns = list(original)
        prog.insns[i] = dataclasses.replace(prog.insns[i], **{pflag: False})
        prog.insns[j] = dataclasses.replace(prog.insns[j], **{flag: False})
        with pytest.raises(VDLAHazardError, match="no chain of tokens"):
            verify_tokens(prog)
