"""Metal Shading Language as a `Dialect`: `kernel` functions whose buffers are `device`
pointers bound by `[[buffer(i)]]` (scalars as `constant T&`), launch positions as implicit
parameters (`[[threadgroup_position_in_grid]]` ...), `threadgroup` tiles and barriers,
SIMD-group shuffles, `half` arithmetic, and `precise::` math because Metal compiles with fast
math by default. MSL has no `erf`, `log1p` or `expm1`: the preamble defines them when used."""

from __future__ import annotations

from tensorforge.codegen import Capabilities, Dialect, Features, Scope, SyncKind, ThreadAxis
from tensorforge.codegen.dialect import floor_helpers, nan_minmax_helpers

#: float32 math through precise:: (Metal's default is fast math)
PRECISE = ("exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "tanh", "sin", "cos", "tan",
           "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "fabs")
MATH = {**{(op, "float32"): f"precise::{op}({{0}})" for op in PRECISE},
        ("abs", "float32"): "precise::fabs({0})", ("pow", "float32"): "precise::pow({0}, {1})",
        ("fmod", "float32"): "precise::fmod({0}, {1})",
        ("sigmoid", "float32"): "(1.0f / (1.0f + precise::exp(-({0}))))",
        ("erf", "float"): "tf_erf({0})", ("log1p", "float"): "tf_log1p({0})",
        ("expm1", "float"): "tf_expm1({0})"}

#: erf (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7), log1p and expm1 (exact near 0)
OWN_MATH = {
    "erf": """inline float tf_erf(float x) {
  float t = 1.0f / (1.0f + 0.3275911f * precise::fabs(x));
  float y = 1.0f - (((((1.061405429f * t - 1.453152027f) * t) + 1.421413741f) * t
                     - 0.284496736f) * t + 0.254829592f) * t * precise::exp(-x * x);
  return x < 0.0f ? -y : y;
}""",
    "log1p": """inline float tf_log1p(float x) {
  float u = 1.0f + x;
  return u == 1.0f ? x : precise::log(u) * (x / (u - 1.0f));
}""",
    "expm1": """inline float tf_expm1(float x) {
  float u = precise::exp(x);
  if (u == 1.0f) return x;
  if (u - 1.0f == -1.0f) return -1.0f;
  return (u - 1.0f) * (x / precise::log(u));
}"""}


def preamble(f: Features) -> str:
    lines = ["#include <metal_stdlib>", "using namespace metal;"]
    lines += [OWN_MATH[op] for op in OWN_MATH if f.uses(op)]
    lines += floor_helpers(f, METAL) + nan_minmax_helpers(f, METAL)
    return "\n".join(lines)


METAL = Dialect(
    name="metal",
    kernel_qualifier="kernel void",
    param_qualifier={Scope.GLOBAL: "device"},
    alloc_qualifier={Scope.SHARED: "threadgroup"},
    restrict="",
    buffer_param="{qual}{const}{type}* {name} [[buffer({index})]]",
    scalar_param="constant {type}& {name} [[buffer({index})]]",
    implicit_params=("uint3 tf_block [[threadgroup_position_in_grid]]",
                     "uint3 tf_thread [[thread_position_in_threadgroup]]",
                     "uint tf_lane [[thread_index_in_simdgroup]]"),
    thread_index={**{(ThreadAxis.BLOCK, d): f"(int)tf_block.{'xyz'[d]}" for d in range(3)},
                  **{(ThreadAxis.THREAD, d): f"(int)tf_thread.{'xyz'[d]}" for d in range(3)}},
    barrier={SyncKind.SHARED: "threadgroup_barrier(mem_flags::mem_threadgroup)",
             SyncKind.GLOBAL: "threadgroup_barrier(mem_flags::mem_device)",
             SyncKind.WARP: "simdgroup_barrier(mem_flags::mem_threadgroup)"},
    type_names={"int64": "long", "uint64": "ulong"},
    vector_ctor="{vtype}({args})",
    vector_broadcast="{vtype}({value})",
    lane_access=("x", "y", "z", "w"),
    vector_lanes=(2, 3, 4),
    vector_load=None, vector_store=None,  # no vload: gathered into a vector constructor
    vector_load_unaligned=None, vector_store_unaligned=None,
    vector_convert="{vtype}({value})",
    math=MATH,
    half_storage_only=False,
    reinterpret="as_type<{type}>({0})",
    shuffle_down="simd_shuffle_down({value}, (ushort)({offset}))",
    # lane `offset` of this thread's `width`-lane segment of the SIMD group
    shuffle_idx="simd_shuffle({value}, (ushort)((tf_lane / {width}) * {width} + {offset}))",
    preamble=preamble,
    capabilities=Capabilities(warp_size=32, max_threads_per_block=1024,
                              max_shared_bytes=32 * 1024, shuffle=True,
                              dtypes=("float32", "float16", "int32", "int64", "int8", "uint8",
                                      "int16", "bool")),
)
