"""The VDLA loop-IR passes and code generation on small hand-written schedules."""

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge_vdla.config import VDLAConfig
from tensorforge_vdla.errors import VDLACompileError
from tensorforge_vdla.isa import Load, MemId, Store
from tensorforge_vdla.strategies import ConvShape, Tile, conv2d_schedule
from tensorforge_vdla.workloads import conv_arrays, conv_reference


def test_store_of_a_narrow_tile_keeps_a_host_loop(vdla):
    """Tile columns 4 of 8: rows of the output are not contiguous across channel blocks, so
    the store of a tile is one DMA per channel block (a host loop), still exact."""
    shape = ConvShape(h=8, w=8, icb=1, ocb=2, kh=3, kw=3, stride=1, pad=1)
    s, args = conv2d_schedule(shape, vdla(), Tile(4, 4, 2, 1), 1)
    text = str(tensorforge.lower(s, args, target="vdla"))
    assert "vdla.store(3" in text and "vdla.load(2" in text and "vdla.gemm_loop(" in text
    mod = tensorforge.build(s, args, target="vdla")
    stores = [i for i in mod.programs[0].insns if isinstance(i, Store)]
    assert len(stores) == 4 * 2 and {(i.y_size, i.x_size, i.x_stride) for i in stores} == {
        (4, 4, 8)}
    loads = [i for i in mod.programs[0].insns if isinstance(i, Load) and i.mem == MemId.INP]
    assert {(i.y_pad0, i.y_pad1, i.x_pad0, i.x_pad1) for i in loads} == {
        (1, 0, 1, 0), (1, 0, 0, 1), (0, 1, 1, 0), (0, 1, 0, 1)}  # the corners of the image
    a = conv_arrays(shape, VDLAConfig())
    out = np.zeros((1, 2, 8, 8, 16), np.int32)
    mod(a["data"], a["kernel"], out)
    np.testing.assert_array_equal(out, conv_reference(shape, a["x"], a["w"], 16))


def test_copy_that_is_not_whole_tiles_is_an_error(vdla):
    A = te.placeholder((4, 16), "int8", name="A")
    B = te.compute((16, 4), lambda i, j: A[j, i], name="B")  # a transpose
    C = te.compute((16, 4), lambda i, j: B[i, j].astype("int32"), name="C")
    s = te.create_schedule(C.op)
    s[B].set_scope("inp_buffer")
    s[B].pragma(s[B].op.axis[0], "dma_copy")
    with pytest.raises(VDLACompileError, match="innermost loops must walk whole 16-element "
                                               "tiles"):
        tensorforge.lower(s, [A, C], target=vdla())


def test_a_loop_nest_left_for_the_host_is_an_error(vdla):
    A = te.placeholder((16,), "int32", name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(VDLACompileError, match="was not scheduled for VDLA"):
        tensorforge.build(s, [A, B], target=vdla())


def test_passes_registered_for_vdla_only(vdla):
    from tensorforge.plugins import get_registry

    reg = get_registry()
    names = [p.name for p in reg.passes(vdla(), "tir.after_flatten")]
    assert names == ["vdla.inject_dma", "vdla.inject_alu", "vdla.fold_uops"]
    assert reg.passes(vdla(), "tir.before_codegen") == []
    assert set(reg.intrinsics(vdla())) >= {"gemm_1x16x16_int8_acc32", "alu_max_1x16_acc32"}


def test_get_intrin_names_what_the_target_has(vdla):
    from tensorforge.errors import TensorforgeError

    intrin = te.get_intrin("alu_max_1x16_acc32", vdla())
    assert intrin.buffers[intrin.inputs[0]].scope == "acc_buffer"
    with pytest.raises(TensorforgeError, match="no tensor intrinsic 'gemm_1x8x8_int8_acc32' "
                                               "for target vdla.*gemm_1x16x16_int8_acc32"):
        te.get_intrin("gemm_1x8x8_int8_acc32", vdla())
