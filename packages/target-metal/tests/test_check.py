"""The clang checker of generated Metal fails on what Metal would reject."""

import pytest

from tensorforge import te

pytest.importorskip("tensorforge_metal.check")
from tensorforge_metal.check import MetalCheckError, check_source, find_clang  # noqa: E402

needs_clang = pytest.mark.skipif(find_clang() is None, reason="clang is not installed")


@pytest.fixture
def metal(plugins):
    plugins.register("tensorforge_metal.plugin", "metal", distribution="tensorforge-target-metal")
    from tensorforge.target import Target

    return Target.parse("metal")


def _softmax_source(metal, n=32):
    import tensorforge
    from tensorforge.ops import nn
    from tensorforge.ops.schedules_gpu import schedule_row_reduce_gpu

    x = te.placeholder((4, n), "float32", name="x")
    y = nn.softmax(x)
    return tensorforge.build(schedule_row_reduce_gpu([y], metal), [x, y],
                             target=metal).get_source()


@needs_clang
def test_a_generated_kernel_passes(metal):
    src = _softmax_source(metal)
    assert "kernel void" in src and "[[buffer(1)]]" in src and "precise::exp(" in src
    check_source(src)


@needs_clang
def test_a_planted_type_error_fails_with_clangs_message(metal):
    src = _softmax_source(metal)
    bad = src.replace("const int threadIdx_x = (int)tf_thread.x;",
                      "const int threadIdx_x = float4(1.0f);", 1)
    assert bad != src
    with pytest.raises(MetalCheckError, match="error: .*float4|no viable conversion"):
        check_source(bad)
    with pytest.raises(MetalCheckError, match="error"):
        check_source(src.replace("precise::exp(", "precise::expp(", 1))


def test_attribute_spellings_clang_would_ignore_are_caught(metal):
    src = _softmax_source(metal)
    with pytest.raises(MetalCheckError, match=r"unknown Metal attribute \[\[bufer\]\]"):
        check_source(src.replace("[[buffer(1)]]", "[[bufer(1)]]", 1))
    with pytest.raises(MetalCheckError, match="buffer indices"):
        check_source(src.replace("[[buffer(1)]]", "[[buffer(0)]]", 1))
    with pytest.raises(MetalCheckError, match="Metal has no double"):
        check_source(src.replace("float", "double", 1))


@needs_clang
def test_own_erf_log1p_expm1_since_msl_has_none(metal):
    import tensorforge

    x = te.placeholder((64,), "float32", name="x")
    y = te.compute((64,), lambda i: te.erf(x[i]) + te.log1p(x[i]) + te.expm1(x[i]), name="y")
    s = te.create_schedule(y.op)
    bx, tx = s[y].split(y.op.axis[0], factor=32)
    s[y].bind(bx, te.thread_axis("blockIdx.x"))
    s[y].bind(tx, te.thread_axis("threadIdx.x"))
    src = tensorforge.build(s, [x, y], target=metal).get_source()
    assert "inline float tf_erf(" in src and "tf_log1p(" in src and "tf_expm1(" in src
    check_source(src)


def test_the_runtime_says_why_it_cannot_run_off_macos():
    import sys

    from tensorforge.runtime.device import DeviceUnavailable
    from tensorforge_metal.runtime import MetalDevice, scalar_bytes

    assert scalar_bytes("int32", 7) == (7).to_bytes(4, "little")
    if sys.platform == "darwin":
        pytest.skip("this is macOS")
    with pytest.raises(DeviceUnavailable, match="Metal runs on macOS only"):
        MetalDevice()
