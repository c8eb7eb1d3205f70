"""Tensor cores by tensorization: the plugin's `wmma` intrinsic (TE semantics + CUDA call),
the float16 dense/matmul strategy that tensorizes with it, the loop IR (golden), NVRTC, and
the semantic check that refuses a nest computing something else."""

from pathlib import Path

import pytest

from tensorforge import te
from tensorforge.ops import nn
from tensorforge.schedule import ScheduleError

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def cuda(plugins):
    plugins.register("tensorforge_cuda.plugin", "cuda", distribution="tensorforge-target-cuda")
    from tensorforge.target import Target

    return Target.parse("cuda")


def _dense(m=64, n=48, k=32, dtype="float16"):
    a = te.placeholder((m, k), dtype, name="A")
    w = te.placeholder((n, k), dtype, name="W")
    return a, w, nn.dense(a, w, out_dtype="float32")


def test_the_intrinsics_are_registered_for_cuda_only(cuda, plugins):
    from tensorforge.plugins import get_registry
    from tensorforge.target import Target

    assert {"wmma_16x16x16_f16f32_nt", "wmma_16x16x16_f16f32_nn"} <= set(
        get_registry().intrinsics(cuda))
    plugins.register("tensorforge_opencl.plugin", "opencl",
                     distribution="tensorforge-target-opencl")
    assert not get_registry().intrinsics(Target.parse("opencl"))


def test_dense_float16_loop_ir_has_the_wmma_calls(cuda):
    import tensorforge
    from tensorforge_cuda.schedules import schedule_dense_tensorcore

    a, w, c = _dense()
    ir = str(tensorforge.lower(schedule_dense_tensorcore([c], cuda), [a, w, c], target=cuda))
    assert ir.strip() == (GOLDEN / "wmma_dense.txt").read_text().strip()


@pytest.mark.parametrize("op", ["dense", "matmul"])
def test_tensorcore_kernel_compiles_with_nvrtc(cuda, op):
    import tensorforge
    from tensorforge_cuda import nvrtc
    from tensorforge_cuda.schedules import schedule_dense_tensorcore

    if not nvrtc.has_nvrtc():
        pytest.skip(f"NVRTC is not installed: {nvrtc.INSTALL}")
    a = te.placeholder((32, 64), "float16", name="A")
    b = te.placeholder((64, 48) if op == "matmul" else (48, 64), "float16", name="B")
    c = getattr(nn, op)(a, b, out_dtype="float32")
    out = te.compute(c.shape, lambda i, j: te.max_expr(c[i, j], te.const(0.0, "float32")),
                     name="relu")  # an epilogue: a second kernel
    mod = tensorforge.build(schedule_dense_tensorcore([out], cuda), [a, b, out], target=cuda)
    src = mod.get_source()
    layout = "col_major" if op == "dense" else "row_major"
    assert "#include <mma.h>" in src and f"tf_wmma_mma<nvcuda::wmma::{layout}>" in src
    assert "const half* __restrict__ A" in src  # operands read through address_of(.., "r")
    for arch in ("sm_80", "sm_90"):
        binary = nvrtc.compile_cuda(src, arch)
        assert binary.cubin[:4] == b"\x7fELF" and len(binary.entries) == 2
        assert b"wmma.mma.sync" in binary.ptx or b"mma.sync" in binary.ptx


def test_other_dtypes_and_shapes_fall_back_to_the_gpu_template(cuda):
    import tensorforge
    from tensorforge_cuda.schedules import schedule_dense_tensorcore

    for a, w, c in (_dense(dtype="float32"), _dense(m=20)):
        src = tensorforge.build(schedule_dense_tensorcore([c], cuda), [a, w, c],
                                target=cuda).get_source()
        assert "wmma" not in src and "__shared__" in src


def test_a_nest_computing_something_else_is_refused_showing_both(cuda):
    """The `nn` (matmul) intrinsic on a dense nest: extents match, semantics do not."""
    import tensorforge

    a, w, c = _dense()
    s = te.create_schedule(c.op)
    i, j = c.op.axis
    io, ii = s[c].split(i, factor=16)
    jo, ji = s[c].split(j, factor=16)
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=16)
    s[c].reorder(io, jo, ko, ii, ji, ki)
    s[c].bind(io, te.thread_axis("blockIdx.y"))
    s[c].bind(jo, te.thread_axis("blockIdx.x"))
    s[c].tensorize(ii, te.get_intrin("wmma_16x16x16_f16f32_nn", cuda))
    with pytest.raises(ScheduleError) as err:
        tensorforge.lower(s, [a, w, c], target=cuda)
    msg = str(err.value)
    assert "does not compute what intrinsic 'wmma_16x16x16_f16f32_nn' computes" in msg
    nest = next(line for line in msg.splitlines() if line.strip().startswith("nest:"))
    intrin = next(line for line in msg.splitlines() if line.strip().startswith("intrinsic:"))
    assert "b[j, k]" in nest and "b[k, j]" in intrin, msg
