"""The opencl target: printed OpenCL C (no device needed), and kernels on pocl: device
arrays, event timing, export and load without the compiler, float16 as storage only."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.errors import TensorforgeError
from tensorforge.testing.gpu_schedules import shared_matmul

GOLDEN_KERNEL = """\
__kernel void mm(
    __global const float* restrict A,
    __global const float* restrict B,
    __global float* restrict C) {
  const int blockIdx_x = (int)get_group_id(0);
  const int blockIdx_y = (int)get_group_id(1);
  const int threadIdx_x = (int)get_local_id(0);
  const int threadIdx_y = (int)get_local_id(1);
  __local float A_shared[256];
  __local float B_shared[256];
  C[(((blockIdx_y * 1024) + (threadIdx_y * 64)) + (blockIdx_x * 16)) + threadIdx_x] = 0.0f;
  for (int k_outer = 0; k_outer < 4; ++k_outer) {
    A_shared[(threadIdx_y * 16) + threadIdx_x] = \
A[(((blockIdx_y * 1024) + (threadIdx_y * 64)) + (k_outer * 16)) + threadIdx_x];
    B_shared[(threadIdx_y * 16) + threadIdx_x] = \
B[(((k_outer * 1024) + (threadIdx_y * 64)) + (blockIdx_x * 16)) + threadIdx_x];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k_inner = 0; k_inner < 16; ++k_inner) {
      C[(((blockIdx_y * 1024) + (threadIdx_y * 64)) + (blockIdx_x * 16)) + threadIdx_x] = \
C[(((blockIdx_y * 1024) + (threadIdx_y * 64)) + (blockIdx_x * 16)) + threadIdx_x] + \
(A_shared[(threadIdx_y * 16) + k_inner] * B_shared[(k_inner * 16) + threadIdx_x]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
"""


def test_printed_opencl_golden(opencl_target):
    """Building needs no device: the source is printed, the program built on first call."""
    s, args = shared_matmul()
    mod = tensorforge.build(s, args, target=opencl_target, name="mm")
    assert mod.get_source() == GOLDEN_KERNEL


def test_floor_division_is_plain_c_only_where_proven_non_negative(opencl_target):
    A = te.placeholder((32,), name="A")
    off = te.var("off")
    B = te.compute((32,), lambda i: A[i // 4 * 4] + A[(i - off) // 3], name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    src = tensorforge.build(s, [A, off, B], target=opencl_target).get_source()
    assert "A[(threadIdx_x / 4) * 4]" in src  # i >= 0: C division
    assert "tf_floordiv_int(threadIdx_x - off, 3)" in src  # may be negative: the helper
    assert "inline int tf_floordiv_int(int a, int b)" in src


def test_vector_access_only_for_contiguous_ramps(opencl_target):
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 8), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((8, 16), lambda i, j: A[j, i] + 1.0, name="C")
    s = te.create_schedule([B.op, C.op])
    for T in (B, C):
        s[T].bind(T.op.axis[0], te.thread_axis("threadIdx.x"))
        o, i = s[T].split(T.op.axis[1], factor=4)
        s[T].vectorize(i)
    src = tensorforge.build(s, [A, B, C], target=opencl_target).get_source()
    assert "vstore4(" in src and "vload4(0, A + " in src  # B: stride 1
    assert "((float4)(A[" in src  # C reads a column: gathered lane by lane


def test_float16_is_storage_only_without_cl_khr_fp16(opencl_target):
    A = te.placeholder((8,), "float16", name="A")
    B = te.compute((8,), lambda i: A[i] * A[i], name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    src = tensorforge.build(s, [A, B], target=opencl_target).get_source()
    assert "vstore_half(vload_half(threadIdx_x, A) * vload_half(threadIdx_x, A), " \
           "threadIdx_x, B);" in src
    assert "cl_khr_fp16" not in src
    src16 = tensorforge.build(s, [A, B], target="opencl -fp16=1").get_source()
    assert "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" in src16 and "vload_half" not in src16


@pytest.mark.opencl
def test_matmul_runs_with_numpy_and_device_arrays(opencl_target):
    s, args = shared_matmul()
    mod = tensorforge.build(s, args, target=opencl_target)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64), "float32"), rng.standard_normal((64, 64), "float32")
    c = np.zeros((64, 64), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)
    da, db, dc = mod.to_device(a), mod.to_device(b), mod.to_device(np.zeros((64, 64), "f4"))
    mod(da, db, dc)  # nothing copied: the arrays live on the device
    np.testing.assert_allclose(dc.numpy(), a @ b, rtol=1e-5, atol=1e-4)
    with pytest.raises(TensorforgeError, match=r"argument 1 \(B: float32\[64, 64\]\) expects "
                                               r"shape \(64, 64\), got \(64, 32\)"):
        mod(a, b[:, :32].copy(), c)


@pytest.mark.opencl
def test_time_evaluator_uses_device_events(opencl_target):
    s, args = shared_matmul()
    mod = tensorforge.build(s, args, target=opencl_target)
    arrays = [np.ones((64, 64), "float32") for _ in range(3)]
    res = mod.time_evaluator(mod.entry_name, number=2, repeat=3)(*arrays)
    assert len(res.results) == 3 and all(0 < t < 1 for t in res.results)
    events = mod.get_function(mod.entry_name).run([mod.to_device(x) for x in arrays])
    mod.device.synchronize()
    assert len(events) == 1 and events[0].profile.end > events[0].profile.start


@pytest.mark.opencl
def test_exported_module_runs_without_the_compiler(opencl_target, tmp_path):
    s, args = shared_matmul()
    mod = tensorforge.build(s, args, target=opencl_target)
    path = tmp_path / "mm.cl"
    mod.export_library(path)
    code = textwrap.dedent(f"""
        import sys
        for m in ("tensorforge.tir", "tensorforge.codegen", "tensorforge.te",
                  "tensorforge.schedule", "llvmlite"):
            sys.modules[m] = None  # importing any of them fails
        import numpy as np
        from tensorforge.runtime import load_module
        mod = load_module({str(path)!r})
        a = np.arange(64 * 64, dtype="float32").reshape(64, 64) / 4096
        c = np.zeros((64, 64), "float32")
        mod(a, a, c)
        assert np.allclose(c, a @ a, rtol=1e-5, atol=1e-3), abs(c - a @ a).max()
        print(type(mod).__name__, mod.type_key)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["DeviceModule", "opencl"]


@pytest.mark.opencl
def test_no_matching_device_is_a_clear_error(opencl_target):
    pytest.importorskip("pyopencl")
    from tensorforge_opencl.runtime import find_device

    with pytest.raises(TensorforgeError, match="no OpenCL device matches platform "
                                               "'no-such-platform'.*found:"):
        find_device("no-such-platform")


DENSE_CONFIGS = [
    {"tile_y": [4, 2, 8, 1], "tile_x": [2, 2, 8, 2], "tile_k": [8, 8], "double_buffer": True,
     "storage_align": True, "unroll": True, "shared": True},
    {"tile_y": [8, 1, 4, 2], "tile_x": [4, 1, 16, 1], "tile_k": [2, 32],
     "double_buffer": False, "storage_align": True, "unroll": False, "shared": False},
]
CONV_CONFIGS = [
    {"tile_f": [1, 2, 4, 2], "tile_y": [4, 1, 2, 2], "tile_x": [2, 1, 8, 1],
     "tile_rc": [2, 4], "tile_ry": [1, 3], "tile_rx": [3, 1], "unroll": True, "shared": True},
    {"tile_f": [2, 1, 8, 1], "tile_y": [2, 1, 4, 2], "tile_x": [1, 1, 4, 4],
     "tile_rc": [8, 1], "tile_ry": [3, 1], "tile_rx": [1, 3], "unroll": False,
     "shared": False},
]


@pytest.mark.opencl
@pytest.mark.parametrize("knobs", DENSE_CONFIGS + CONV_CONFIGS, ids=["dense_vthread_db",
                                                                     "dense_global_k32",
                                                                     "conv_vthread",
                                                                     "conv_global_rows"])
def test_templates_with_every_knob_compute_right(opencl_target, knobs):
    """Virtual threads, double-buffered shared tiles, padded rows, guarded fetches: each
    config of the tuning templates is checked against numpy (the tuner only compares with
    the default config)."""
    from tensorforge.autotune import Task
    from tensorforge.ops import reference as ref

    if "tile_f" in knobs:
        task = Task("conv2d.gpu", (1, 8, 16, 16, 16), opencl_target)
    else:
        task = Task("dense.gpu", (64, 64, 64), opencl_target)
    s, args = task.instantiate(task.config_space.from_json({"knobs": knobs}))
    mod = tensorforge.build(s, args, target=opencl_target)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(tuple(d.value for d in args[0].shape)).astype("float32")
    w = rng.standard_normal(tuple(d.value for d in args[1].shape)).astype("float32")
    out = np.zeros(tuple(d.value for d in args[2].shape), "float32")
    mod(x, w, out)
    want = ref.conv2d_nchw(x, w, 1, 1) if "tile_f" in knobs else x @ w.T
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@pytest.mark.opencl
def test_zero_dimensional_arrays(opencl_target):
    """A 0-d graph input (ONNX Clip's bounds) keeps its shape on its way to the device."""
    from tensorforge.graph import Graph

    g = Graph("clip")
    x = g.add_input("x", (5,), "float32")
    lo = g.add_input("lo", (), "float32")
    g.outputs = [g.add("maximum", x, lo)]
    compiled = tensorforge.compile(g, target=opencl_target)
    (y,) = compiled.run({"x": np.arange(5, dtype="float32"), "lo": np.array(2.5, "float32")})
    np.testing.assert_array_equal(y, np.maximum(np.arange(5), 2.5))


def test_tensorflow_in_the_process_is_a_clear_error_not_a_crash():
    """pocl's platform probe after TensorFlow loaded crashes the process: a subprocess that
    imports TensorFlow first gets a TensorforgeError naming the clash instead."""
    pytest.importorskip("pyopencl")
    pytest.importorskip("tensorflow")
    code = textwrap.dedent("""
        import tensorflow  # noqa: F401
        from tensorforge.errors import TensorforgeError
        from tensorforge_opencl.runtime import find_device
        try:
            find_device()
        except TensorforgeError as e:
            print("clear:", "TensorFlow" in str(e))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "clear: True" in out.stdout
