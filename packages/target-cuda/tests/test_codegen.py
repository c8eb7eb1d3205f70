"""The CUDA dialect's spellings over the shared printer, each checked by NVRTC too."""

import pytest

from tensorforge import te


@pytest.fixture
def cuda(plugins):
    plugins.register("tensorforge_cuda.plugin", "cuda", distribution="tensorforge-target-cuda")
    from tensorforge.target import Target

    return Target.parse("cuda")


def _source(cuda, make, dtype="float32", vector=4):
    import tensorforge

    a = te.placeholder((256,), dtype, name="a")
    b = te.compute((256,), lambda i: make(a, i), name="b")
    s = te.create_schedule(b.op)
    bx, r = s[b].split(b.op.axis[0], factor=64)
    tx, v = s[b].split(r, factor=vector)
    s[b].bind(bx, te.thread_axis("blockIdx.x"))
    s[b].bind(tx, te.thread_axis("threadIdx.x"))
    s[b].vectorize(v)
    src = tensorforge.build(s, [a, b], target=cuda).get_source()
    from tensorforge_cuda import nvrtc

    if nvrtc.has_nvrtc():
        nvrtc.compile_cuda(src, "sm_80")
    return src


def test_a_copy_moves_float4_and_arithmetic_goes_lane_by_lane(cuda):
    src = _source(cuda, lambda a, i: a[i])
    assert 'extern "C" __global__ void __launch_bounds__(16)' in src
    assert "*((float4*)(b + " in src and "(const float4*)(a + " in src
    src = _source(cuda, lambda a, i: a[i] * 2.0)
    assert "float4" not in src and src.count("* 2.0f;") == 4


def test_half_is_storage_with_its_header_only_when_used(cuda):
    src = _source(cuda, lambda a, i: a[i] * te.const(2.0, "float16"), "float16")
    assert src.startswith("#include <cuda_fp16.h>")
    assert "__half2float(a[" in src and "= __float2half(" in src
    assert "#include" not in _source(cuda, lambda a, i: te.exp(a[i]))


def test_math_is_single_precision_and_nan_aware(cuda):
    src = _source(cuda, lambda a, i: te.max_expr(te.exp(a[i]), te.const(0.0, "float32")))
    assert "expf(" in src and "static __device__ __forceinline__ float tf_fmax_float(" in src


def test_a_row_reduction_uses_warp_shuffles(cuda):
    import tensorforge
    from tensorforge.ops import nn
    from tensorforge.ops.schedules_gpu import schedule_row_reduce_gpu

    x = te.placeholder((4, 32), "float32", name="x")
    y = nn.softmax(x)
    src = tensorforge.build(schedule_row_reduce_gpu([y], cuda), [x, y],
                            target=cuda).get_source()
    assert "__shfl_down_sync(__activemask(), " in src and "__shfl_sync(__activemask(), " in src
