"""The C printer is driven by the dialect table: a CUDA-like dialect written here as data
alone spells threads, barriers, shuffles, launch bounds and float4 differently, and a dialect
without vector arithmetic gets its vector stores split per lane."""

from __future__ import annotations

from dataclasses import replace

import pytest

import tensorforge
from tensorforge import te
from tensorforge.codegen import CodegenError, CPrinter, Dialect, Scope, SyncKind, ThreadAxis
from tensorforge.codegen.legalize import legalize
from tensorforge.testing.gpu_schedules import ToyGPUPlugin, row_sum, shared_matmul
from tensorforge.tir.transform.split_host_device import split_host_device


@pytest.fixture
def gpu(plugins):
    plugins.register(ToyGPUPlugin(), "toygpu", distribution="toy")
    return tensorforge.target.Target.parse("toygpu")

CUDA_LIKE = Dialect(
    name="cuda-like",
    kernel_qualifier='extern "C" __global__ void',
    param_qualifier={},
    alloc_qualifier={Scope.SHARED: "__shared__"},
    thread_index={**{(ThreadAxis.BLOCK, d): f"(int)blockIdx.{'xyz'[d]}" for d in range(3)},
                  **{(ThreadAxis.THREAD, d): f"(int)threadIdx.{'xyz'[d]}" for d in range(3)}},
    barrier={SyncKind.SHARED: "__syncthreads()", SyncKind.GLOBAL: None,
             SyncKind.WARP: "__syncwarp()"},
    scope_in_pointer_type=False,
    restrict="__restrict__",
    kernel_attrs=lambda block: f" __launch_bounds__({block[0] * block[1] * block[2]})",
    type_names={"int64": "long long", "int8": "signed char", "uint8": "unsigned char"},
    vector_type="{type}{lanes}", vector_ctor="make_{vtype}({args})", lane_access=".{lane}",
    vector_lanes=(2, 4), vector_arith=False,
    vector_load="(*({vtype}*)({ptr} + {offset}))", vector_load_unaligned=None,
    vector_store="*({vtype}*)({ptr} + {offset}) = {value}", vector_store_unaligned=None,
    math={("exp", "float32"): "__expf({0})", ("sqrt", "float32"): "sqrtf({0})"},
    shuffle_down="__shfl_down_sync(0xffffffff, {value}, {offset}, {width})",
    shuffle_idx="__shfl_sync(0xffffffff, {value}, {offset}, {width})",
    unroll_pragma="#pragma unroll",
)


def _kernels(s, args, target, dialect=CUDA_LIKE):
    prog = split_host_device(tensorforge.lower(s, args, target=target))
    for k in prog.kernels:
        k.body = legalize(k.body, dialect)
    return prog.kernels


def test_a_dialect_is_data(gpu):
    s, args = shared_matmul()
    src = CPrinter(CUDA_LIKE).print_module(_kernels(s, args, gpu))
    assert 'extern "C" __global__ void __launch_bounds__(256) main(' in src
    assert "float* __restrict__ C" in src and "const float* __restrict__ A" in src
    assert "const int threadIdx_x = (int)threadIdx.x;" in src
    assert "__shared__ float A_shared[256];" in src
    assert src.count("__syncthreads();") == 2


def test_shuffle_spelling(gpu):
    from tensorforge.tir.transform.lower_allreduce import lower_thread_allreduce
    from tensorforge.tir.transform.lower_thread_binding import lower_thread_bindings
    from tensorforge.tir.transform.storage_flatten import storage_flatten

    s, args = row_sum(32)
    f = lower_thread_allreduce(lower_thread_bindings(storage_flatten(
        tensorforge.lower(s, args, simple_mode=True))), warp_size=32)
    prog = split_host_device(f)
    src = CPrinter(CUDA_LIKE).print_module(prog.kernels)
    assert "__shfl_down_sync(0xffffffff, S_red[0], 16, 32)" in src
    assert "__shfl_sync(0xffffffff, S_red[0], 0, 32)" in src


def test_vector_stores_split_per_lane_without_vector_arithmetic(gpu):
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 8), lambda i, j: te.exp(A[i, j]) * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    o, i = s[B].split(B.op.axis[1], factor=4)
    s[B].vectorize(i)
    src = CPrinter(CUDA_LIKE).print_module(_kernels(s, [A, B], gpu))
    assert "float4" not in src
    assert src.count("__expf(A[") == 4


def test_a_missing_spelling_names_the_dialect(gpu):
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: te.erf(A[i]), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    no_erf = replace(CUDA_LIKE, math={("erf", ""): None})  # type: ignore[dict-item]
    with pytest.raises(CodegenError, match=r"cuda-like has no spelling for erf\(float32\)"):
        CPrinter(no_erf).print_module(_kernels(s, [A, B], gpu))


def test_dialect_must_say_every_thread_index():
    with pytest.raises(ValueError, match="thread_index lacks threadIdx.z"):
        replace(CUDA_LIKE, thread_index={k: v for k, v in CUDA_LIKE.thread_index.items()
                                         if k != (ThreadAxis.THREAD, 2)})


def test_vector_loads_need_proven_alignment_where_the_dialect_says_so(gpu):
    """CUDA-like: a float4 pointer cast only where the offset is a proven multiple of 4."""
    with_vectors = replace(CUDA_LIKE, vector_arith=True)
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 4), lambda i, j: A[i, j] + A[i, j + 1], name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    s[B].vectorize(B.op.axis[1])
    src = CPrinter(with_vectors).print_module(_kernels(s, [A, B], gpu, with_vectors))
    assert "(*(float4*)(A + (threadIdx_x * 8)))" in src  # offset 8i: aligned
    assert "make_float4(A[(threadIdx_x * 8) + 1], " in src  # offset 8i + 1: lane by lane
    assert "*(float4*)(B + (threadIdx_x * 4)) = " in src


def test_lets_are_declared_once_not_substituted(gpu):
    """Integer power's chain of squares is let-bound: each step a constant declared before
    the store (linear source), not substituted (the text would double at every step); under
    if_then_else, which C evaluates only on its branch, a let stays in the branch."""
    from tensorforge.expr import Let, Var
    from tensorforge.ops.arith import int_pow

    A = te.placeholder((16,), "int64", name="A")
    E = te.placeholder((16,), "int64", name="E")
    B = te.compute((16,), lambda i: int_pow(A[i], E[i]), name="B")
    sq = Var("sq", "int64")
    C = te.compute((16,), lambda i: te.if_then_else(
        i < 8, Let(sq, A[i + 8] * A[i + 8], sq + sq), A[i]), name="C")
    s = te.create_schedule([B.op, C.op])
    for t in (B, C):
        s[t].bind(t.op.axis[0], te.thread_axis("threadIdx.x"))
    src = CPrinter(CUDA_LIKE).print_module(_kernels(s, [A, E, B, C], gpu))
    assert len(src) < 20000, len(src)
    assert src.count("const long long pow_r") >= 60  # B's steps, declared
    assert "const long long sq" not in src  # C's let: substituted inside its branch
    assert "(threadIdx_x < 8) ? ((A[threadIdx_x + 8] * A[threadIdx_x + 8])" in src
