"""The OpenCL runtime over pyopencl, in the four parts of a GPU runtime:

- `Compiler`: OpenCL C source -> built `cl.Program`, cached per context by the source's hash
  (pocl also caches binaries on disk, so a second process skips its compile too);
- `Program`: the built kernels, launched by name with their arguments;
- `Allocator`: device buffers and blocking copies;
- `OpenCLDevice`: the glue `tensorforge.runtime.Device` asks for: a context and one in-order
  queue with profiling on, so `elapsed` reads kernel times from events.

pyopencl is imported when a device is first made, never at plugin discovery.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tensorforge.errors import TensorforgeError
from tensorforge.runtime.device import Device


def _cl() -> Any:
    try:
        import pyopencl as cl
    except ImportError as e:
        raise TensorforgeError(
            "running OpenCL kernels needs pyopencl and an OpenCL driver: pip install "
            "'tensorforge-target-opencl[runtime]' and, on Debian/Ubuntu, apt install "
            f"pocl-opencl-icd ocl-icd-libopencl1 ({e})") from e
    return cl


_platforms_probed = False


def _check_no_llvm_clash() -> None:
    """pocl's first platform probe in a process that already loaded TensorFlow crashes it
    (SIGSEGV: their bundled LLVMs clash; kernel builds fail if the order is reversed): say
    so instead of dying, where a pocl driver is installed."""
    global _platforms_probed
    if _platforms_probed or "tensorflow" not in sys.modules:
        _platforms_probed = True
        return
    vendors = os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors")
    try:
        icds = os.listdir(vendors) if os.path.isdir(vendors) else []
    except OSError:
        icds = []
    if any("pocl" in name.lower() for name in icds):
        raise TensorforgeError(
            "TensorFlow is loaded in this process and pocl's OpenCL driver crashes beside it "
            "(their LLVMs clash); run OpenCL models in a process that does not import "
            "TensorFlow (import a TensorFlow model once, export the .tfpkg, run it elsewhere)")


def find_device(platform: str = "", device: str = "") -> Any:
    """The first OpenCL device whose platform and device names contain the given strings."""
    cl = _cl()
    _check_no_llvm_clash()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise TensorforgeError(f"no OpenCL platform found ({e}); install a driver, e.g. "
                               "apt install pocl-opencl-icd ocl-icd-libopencl1") from e
    seen = []
    for p in platforms:
        for d in p.get_devices():
            seen.append(f"{p.name} / {d.name}")
            if platform.lower() in p.name.lower() and device.lower() in d.name.lower():
                return d
    raise TensorforgeError(f"no OpenCL device matches platform {platform!r} device {device!r}; "
                           f"found: {'; '.join(seen) or 'none'}")


class Compiler:
    """Builds programs, once per source text and context."""

    def __init__(self, context: Any, options: Sequence[str] = ()):
        self.context = context
        self.options = list(options)
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    def build(self, source: str) -> Any:
        cl = _cl()
        key = hashlib.sha256(source.encode()).hexdigest()
        with self._lock:
            prog = self._cache.get(key)
            if prog is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # pyopencl's "non-empty build log"
                    try:
                        prog = cl.Program(self.context, source).build(options=self.options)
                    except cl.RuntimeError as e:
                        raise TensorforgeError(
                            f"the OpenCL compiler rejected the generated kernels: {e}\n"
                            f"this is a code generation bug; the source was:\n{source}"
                        ) from None
                self._cache[key] = prog
            return prog


_SCALARS = {"float32": np.float32, "float64": np.float64, "float16": np.float32,
            "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
            "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
            "bool": np.bool_}


class Program:
    """Kernels of one built program; `launch` sets arguments and enqueues."""

    def __init__(self, built: Any, kernels: Sequence[Mapping[str, Any]]):
        cl = _cl()
        self.kernels = {k["name"]: cl.Kernel(built, k["name"]) for k in kernels}
        self.params = {k["name"]: k.get("params", []) for k in kernels}

    def launch(self, queue: Any, name: str, args: Sequence[Any], grid: Sequence[int],
               block: Sequence[int]) -> Any:
        cl = _cl()
        kern = self.kernels[name]
        params = self.params[name]
        conv = []
        for i, a in enumerate(args):
            p = params[i] if i < len(params) else {"kind": "buffer"}
            conv.append(a if p["kind"] == "buffer" else _SCALARS[p["dtype"]](a))
        kern.set_args(*conv)
        glob = tuple(int(g) * int(b) for g, b in zip(grid, block))
        return cl.enqueue_nd_range_kernel(queue, kern, glob, tuple(int(b) for b in block))


class Allocator:
    """Device buffers and blocking copies on one queue."""

    def __init__(self, context: Any, queue: Any):
        self.context, self.queue = context, queue

    def alloc(self, nbytes: int) -> Any:
        cl = _cl()
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(1, int(nbytes)))

    def copy_in(self, handle: Any, array: np.ndarray) -> None:
        a = np.asarray(array)
        _cl().enqueue_copy(self.queue, handle, a if a.flags.c_contiguous else a.copy(order="C"),
                           is_blocking=True)

    def copy_out(self, array: np.ndarray, handle: Any) -> None:
        _cl().enqueue_copy(self.queue, array, handle, is_blocking=True)


class OpenCLDevice(Device):
    """One OpenCL device with a profiling queue (see the module docstring)."""

    kind = "opencl"

    def __init__(self, platform: str = "", device: str = ""):
        cl = _cl()
        os.environ.setdefault("PYOPENCL_COMPILER_OUTPUT", "0")
        self.cl_device = find_device(platform, device)
        self.name = f"opencl:{self.cl_device.name.strip()}"
        self.context = cl.Context([self.cl_device])
        self.queue = cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.compiler = Compiler(self.context)
        self.allocator = Allocator(self.context, self.queue)

    @property
    def extensions(self) -> set[str]:
        return set(self.cl_device.extensions.split())

    def alloc(self, nbytes: int) -> Any:
        return self.allocator.alloc(nbytes)

    def copy_in(self, handle: Any, array: np.ndarray) -> None:
        self.allocator.copy_in(handle, array)

    def copy_out(self, array: np.ndarray, handle: Any) -> None:
        self.allocator.copy_out(array, handle)

    def synchronize(self) -> None:
        self.queue.finish()

    def load_program(self, source: str, kernels: Sequence[Mapping[str, Any]]) -> Program:
        return Program(self.compiler.build(source), kernels)

    def launch(self, program: Any, kernel: str, args: Sequence[Any], grid: Sequence[int],
               block: Sequence[int]) -> Any:
        return program.launch(self.queue, kernel, args, grid, block)

    def elapsed(self, first: Any, last: Any) -> float:
        first.wait()
        last.wait()
        return (last.profile.end - first.profile.start) * 1e-9
