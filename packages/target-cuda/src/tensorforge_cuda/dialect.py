"""CUDA C++ as a `Dialect`: `extern "C" __global__` kernels with `__launch_bounds__`,
`__shared__` tiles, `blockIdx`/`threadIdx`, `__syncthreads`, warp shuffles, `float4` copies
(CUDA's vector types have no operators: arithmetic is split per lane by legalize), and half
as storage (`cuda_fp16.h`, included only when a kernel uses float16, like `mma.h` for the
tensor-core calls of `intrinsics.py`)."""

from __future__ import annotations

from tensorforge.codegen import Capabilities, Dialect, Features, Scope, SyncKind, ThreadAxis
from tensorforge.codegen.dialect import floor_helpers, nan_minmax_helpers

from .intrinsics import WMMA_HELPERS, WMMA_MATH

#: C++ names where the C ones differ (char's sign is the compiler's choice: say signed)
TYPES = {"int8": "signed char", "uint8": "unsigned char", "int16": "short",
         "uint16": "unsigned short", "uint32": "unsigned int", "int64": "long long",
         "uint64": "unsigned long long"}

#: single-precision spellings (CUDA's `exp(float)` overload exists, `expf` says it plainly)
MATH = {**{(op, "float32"): f"{op}f({{0}})" for op in (
    "exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "tanh", "erf", "floor", "ceil",
    "trunc", "sin", "cos", "tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh",
    "atanh", "log1p", "expm1", "fabs")},
        ("round", "float32"): "rintf({0})", ("nearbyint", "float32"): "rintf({0})",
        ("abs", "float32"): "fabsf({0})", ("pow", "float32"): "powf({0}, {1})",
        ("fma", "float32"): "fmaf({0}, {1}, {2})", ("fmod", "float32"): "fmodf({0}, {1})",
        ("sigmoid", "float32"): "(1.0f / (1.0f + expf(-({0}))))",
        **WMMA_MATH}

HELPER = "static __device__ __forceinline__"
BITCAST = (f"template <typename T, typename F> {HELPER} T tf_bitcast(F x) {{\n"
           "  T y;\n  memcpy(&y, &x, sizeof(T));\n  return y;\n}")


def preamble(f: Features) -> str:
    """Headers (only those used: NVRTC finds them in the NVIDIA wheels) and helpers."""
    lines = []
    if f.float16:
        lines.append("#include <cuda_fp16.h>")
    if any(op.startswith("cuda.wmma") for op, _ in f.calls):
        lines += ["#include <mma.h>", WMMA_HELPERS]
    if f.uses("reinterpret"):
        lines.append(BITCAST)
    lines += floor_helpers(f, CUDA, HELPER) + nan_minmax_helpers(f, CUDA, HELPER)
    return "\n".join(lines)


def launch_bounds(block: tuple[int, int, int]) -> str:
    return f" __launch_bounds__({block[0] * block[1] * block[2]})"


CUDA = Dialect(
    name="cuda",
    kernel_qualifier='extern "C" __global__ void',
    kernel_attrs=launch_bounds,
    param_qualifier={},
    alloc_qualifier={Scope.SHARED: "__shared__"},
    scope_in_pointer_type=False,
    restrict="__restrict__",
    thread_index={**{(ThreadAxis.BLOCK, d): f"(int)blockIdx.{'xyz'[d]}" for d in range(3)},
                  **{(ThreadAxis.THREAD, d): f"(int)threadIdx.{'xyz'[d]}" for d in range(3)}},
    barrier={SyncKind.SHARED: "__syncthreads()", SyncKind.GLOBAL: "__syncthreads()",
             SyncKind.WARP: "__syncwarp()"},
    type_names=TYPES,
    bool_storage="unsigned char",
    vector_ctor="make_{vtype}({args})",
    vector_broadcast="make_{vtype}({value})",
    lane_access=("x", "y", "z", "w"),
    vector_lanes=(2, 4),
    vector_arith=False,
    vector_copy=("float32", "int32"),
    vector_load="(*(const {vtype}*)({ptr} + {offset}))",
    vector_store="*(({vtype}*)({ptr} + {offset})) = {value}",
    vector_load_unaligned=None,
    vector_store_unaligned=None,
    vector_convert=None,
    math=MATH,
    inf="__int_as_float(0x7f800000)",
    nan="__int_as_float(0x7fffffff)",
    half_storage_only=True,
    half_load="__half2float({ptr}[{offset}])",
    half_store="{ptr}[{offset}] = __float2half({value})",
    int64_suffix="LL",
    reinterpret="tf_bitcast<{type}>({0})",
    shuffle_down="__shfl_down_sync(__activemask(), {value}, {offset}, {width})",
    shuffle_idx="__shfl_sync(__activemask(), {value}, {offset}, {width})",
    unroll_pragma="#pragma unroll",
    preamble=preamble,
    capabilities=Capabilities(warp_size=32, max_threads_per_block=1024,
                              max_shared_bytes=48 * 1024, shuffle=True,
                              dtypes=("float32", "float64", "float16", "int32", "int64",
                                      "int8", "uint8", "int16", "bool")),
)
