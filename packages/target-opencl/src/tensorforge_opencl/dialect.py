"""OpenCL C as a `Dialect`: address spaces, work-item functions, `barrier`, vector types with
`vloadn`/`vstoren`, and half through `vload_half`/`vstore_half` unless the device has
`cl_khr_fp16` (the `-fp16` target option)."""

from __future__ import annotations

from dataclasses import replace

from tensorforge.codegen import Capabilities, Dialect, Features, Scope, SyncKind, ThreadAxis
from tensorforge.codegen.dialect import floor_helpers, nan_minmax_helpers


def preamble(f: Features, half_storage_only: bool = True) -> str:
    """Extension pragmas and helpers the kernels use (from the feature pre-scan)."""
    lines = []
    if f.float64:
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if f.float16 and not half_storage_only:
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    dialect = OPENCL if half_storage_only else OPENCL_FP16
    lines += floor_helpers(f, dialect) + nan_minmax_helpers(f, dialect)
    return "\n".join(lines)


OPENCL = Dialect(
    name="opencl",
    kernel_qualifier="__kernel void",
    param_qualifier={Scope.GLOBAL: "__global"},
    alloc_qualifier={Scope.SHARED: "__local"},
    thread_index={**{(ThreadAxis.BLOCK, d): f"(int)get_group_id({d})" for d in range(3)},
                  **{(ThreadAxis.THREAD, d): f"(int)get_local_id({d})" for d in range(3)}},
    barrier={SyncKind.SHARED: "barrier(CLK_LOCAL_MEM_FENCE)",
             SyncKind.GLOBAL: "barrier(CLK_GLOBAL_MEM_FENCE)",
             SyncKind.WARP: "barrier(CLK_LOCAL_MEM_FENCE)"},
    half_storage_only=True,
    unroll_pragma="#pragma unroll",
    preamble=preamble,
    capabilities=Capabilities(warp_size=1, max_threads_per_block=256),
)

#: for devices with cl_khr_fp16: half arithmetic in the kernels
OPENCL_FP16 = replace(OPENCL, name="opencl-fp16", half_storage_only=False,
                      preamble=lambda f: preamble(f, half_storage_only=False))
