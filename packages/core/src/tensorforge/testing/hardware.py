"""Probes for the hardware tests need, each run once per process: a test marked `opencl`
skips with the reason when `has_opencl()` is false (see `pytest_plugin`)."""

from __future__ import annotations

from functools import cache


@cache
def opencl_status() -> str:
    """"" when an OpenCL device is usable, else why not."""
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
