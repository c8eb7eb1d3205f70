"""Probes for the hardware tests need, each run once per process: a test marked `opencl`
(`cuda`) skips with the reason when `has_opencl()` (`has_cuda()`) is false (see
`pytest_plugin`)."""

from __future__ import annotations

import sys
from functools import cache

#: TensorFlow's bundled LLVM and pocl's clash in one process: once TensorFlow is loaded, pocl's
#: platform probe crashes the process and its kernel builds fail (`.ci/run` runs the opencl
#: tests in a process of their own)
TF_CLASH = ("TensorFlow is loaded in this process and its LLVM clashes with pocl's; run the "
            "opencl tests in a process without it, as .ci/run does")


def opencl_status() -> str:
    """"" when an OpenCL device is usable, else why not."""
    if "tensorflow" in sys.modules:
        return TF_CLASH
    return _probe_opencl()


@cache
def _probe_opencl() -> str:
    try:
        import pyopencl as cl
    except ImportError:
        return "pyopencl is not installed (pip install pyopencl)"
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except Exception as e:  # noqa: BLE001 - any driver failure means no device
        return f"no OpenCL platform ({e}); apt install pocl-opencl-icd ocl-icd-libopencl1"
    return "" if devices else "no OpenCL device found"


def has_opencl() -> bool:
    return not opencl_status()


@cache
def cuda_status() -> str:
    """"" when a CUDA device is usable (driver + GPU), else why not."""
    try:
        from tensorforge_cuda.runtime import cuda_status as probe
    except ImportError:
        return "tensorforge-target-cuda is not installed"
    return probe()


def has_cuda() -> bool:
    return not cuda_status()
