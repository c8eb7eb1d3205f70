"""The CUDA runtime over the driver API (`cuda.bindings.driver`), in the four parts of a GPU
runtime:

- `Compiler`: CUDA C++ -> a cubin for the device's own compute capability (NVRTC, `nvrtc.py`);
  never PTX, which a driver older than the pip NVRTC cannot JIT;
- `Program`: `cuModuleLoadData` of the cubin and `cuLaunchKernel` by name, the arguments
  packed by `pack_args` (a pure function: tested without a device);
- `Allocator`: `cuMemAlloc` (freed with its handle) and blocking copies;
- `CUDADevice`: the primary context of one device, one stream, CUDA events for `elapsed`.

`cuda.bindings` is imported when a device is first made, never at plugin discovery. Without
a driver, making a device raises `NoCudaDevice` saying why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tensorforge.errors import TensorforgeError
from tensorforge.runtime.device import Device, DeviceUnavailable

from .nvrtc import compile_source


class NoCudaDevice(DeviceUnavailable):
    """No NVIDIA driver or no device: CUDA kernels compile here but cannot run."""


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise NoCudaDevice("running CUDA kernels needs cuda-bindings: pip install "
                           f"'tensorforge[cuda]' ({e})") from e
    return driver


def check(result: Any, what: str) -> Any:
    """The value of a driver call's (CUresult, value...) tuple, or a TensorforgeError."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise TensorforgeError(f"CUDA driver: {what} failed: {getattr(err, 'name', err)}")
    return rest[0] if len(rest) == 1 else rest


def cuda_status(index: int = 0) -> str:
    """"" when CUDA device `index` is usable, else why not (tests skip with this)."""
    try:
        driver = _driver()
        check(driver.cuInit(0), "cuInit")
        count = check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
    except Exception as e:  # noqa: BLE001 - no library, no driver, no device: all say why
        return f"no NVIDIA driver or GPU here ({str(e).splitlines()[0][:200]})"
    return "" if count > index else f"CUDA device {index} not found ({count} devices)"


#: numpy type of each scalar kernel parameter (float16 scalars travel as float)
SCALARS = {"float32": np.float32, "float64": np.float64, "float16": np.float32,
           "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
           "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
           "bool": np.bool_}


def pack_args(params: Sequence[Mapping[str, Any]], args: Sequence[Any]) -> tuple[list, Any]:
    """`cuLaunchKernel`'s kernelParams: an array of pointers to each argument's bytes (device
    pointers as 64-bit values, scalars in their parameter's type). Returns (the arrays to keep
    alive until the launch returns, the pointer array)."""
    if len(args) != len(params):
        raise TensorforgeError(f"kernel takes {len(params)} arguments, got {len(args)}")
    values = []
    for p, a in zip(params, args):
        if p["kind"] == "buffer":
            values.append(np.array([int(a)], dtype=np.uint64))
        else:
            values.append(np.array([a], dtype=SCALARS[p["dtype"]]))
    ptrs = np.array([v.ctypes.data for v in values], dtype=np.uint64)
    return values, ptrs


def launch_shape(grid: Sequence[int], block: Sequence[int]) -> tuple[int, ...]:
    """(grid x, y, z, block x, y, z), checked against CUDA's limits."""
    g = [int(x) for x in (list(grid) + [1, 1, 1])[:3]]
    b = [int(x) for x in (list(block) + [1, 1, 1])[:3]]
    if b[0] * b[1] * b[2] > 1024 or min(g + b) < 1 or g[1] > 65535 or g[2] > 65535:
        raise TensorforgeError(f"CUDA launch grid {g} block {b} is outside the limits "
                               "(1024 threads per block, grid y and z up to 65535)")
    return (*g, *b)


class DeviceMemory:
    """A `cuMemAlloc` allocation, freed when the handle is dropped; `int()` is the pointer."""

    def __init__(self, driver: Any, nbytes: int):
        self._driver = driver
        self.ptr = check(driver.cuMemAlloc(max(1, int(nbytes))), "cuMemAlloc")

    def __int__(self) -> int:
        return int(self.ptr)

    def __del__(self) -> None:
        try:
            self._driver.cuMemFree(self.ptr)
        except Exception:  # noqa: BLE001 - interpreter shutdown: the context is gone anyway
            pass


class Event:
    """A CUDA event (timing on), destroyed with its handle."""

    def __init__(self, driver: Any):
        self._driver = driver
        self.handle = check(driver.cuEventCreate(0), "cuEventCreate")

    def __del__(self) -> None:
        try:
            self._driver.cuEventDestroy(self.handle)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class Compiler:
    """Cubins for one compute capability, cached by source (`nvrtc.compile_source`)."""

    def __init__(self, arch: str):
        self.arch = arch

    def build(self, source: str) -> bytes:
        return compile_source(source, self.arch, "cubin")


class Program:
    """A loaded cubin: its kernels by name, launched on a stream."""

    def __init__(self, driver: Any, cubin: bytes, kernels: Sequence[Mapping[str, Any]]):
        self.driver = driver
        self.module = check(driver.cuModuleLoadData(cubin), "cuModuleLoadData")
        self.functions = {k["name"]: check(driver.cuModuleGetFunction(
            self.module, k["name"].encode()), f"cuModuleGetFunction({k['name']})")
            for k in kernels}
        self.params = {k["name"]: k.get("params", []) for k in kernels}

    def launch(self, stream: Any, name: str, args: Sequence[Any], grid: Sequence[int],
               block: Sequence[int]) -> None:
        params = list(self.params[name])
        params += [{"kind": "buffer"}] * (len(args) - len(params))  # the status buffer
        _keep, ptrs = pack_args(params, args)
        check(self.driver.cuLaunchKernel(self.functions[name], *launch_shape(grid, block), 0,
                                         stream, ptrs.ctypes.data, 0), f"launch of {name}")


class Allocator:
    """Device memory and blocking copies (host arrays are C-contiguous)."""

    def __init__(self, driver: Any):
        self.driver = driver

    def alloc(self, nbytes: int) -> DeviceMemory:
        return DeviceMemory(self.driver, nbytes)

    def copy_in(self, handle: DeviceMemory, array: np.ndarray) -> None:
        a = np.ascontiguousarray(array)
        check(self.driver.cuMemcpyHtoD(handle.ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def copy_out(self, array: np.ndarray, handle: DeviceMemory) -> None:
        check(self.driver.cuMemcpyDtoH(array.ctypes.data, handle.ptr, array.nbytes),
              "cuMemcpyDtoH")


class CUDADevice(Device):
    """CUDA device `device` (see the module docstring)."""

    kind = "cuda"

    def __init__(self, device: int = 0, driver: Any = None):
        """`driver`: the `cuda.bindings.driver` module (default), or a stand-in with its
        calls (the tests' recording driver, to follow the launch path without a GPU)."""
        if driver is None:
            why = cuda_status(int(device))
            if why:
                raise NoCudaDevice(f"cannot run CUDA kernels: {why}; the kernels still "
                                   "compile (tensorforge_cuda.nvrtc) and run on a machine "
                                   "with a GPU")
        d = self.driver = driver or _driver()
        self.handle = check(d.cuDeviceGet(int(device)), "cuDeviceGet")
        attr = d.CUdevice_attribute
        major = check(d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.handle), "capability")
        minor = check(d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.handle), "capability")
        self.arch = f"sm_{major}{minor}"
        raw = check(d.cuDeviceGetName(256, self.handle), "cuDeviceGetName")
        model = raw.split(b"\0")[0].decode()
        self.name = f"cuda:{model} ({self.arch})"
        self.context = check(d.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self._current()
        self.stream = check(d.cuStreamCreate(0), "cuStreamCreate")
        self.compiler = Compiler(self.arch)
        self.allocator = Allocator(d)

    def _current(self) -> None:
        check(self.driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def alloc(self, nbytes: int) -> Any:
        self._current()
        return self.allocator.alloc(nbytes)

    def copy_in(self, handle: Any, array: np.ndarray) -> None:
        self._current()
        self.synchronize()
        self.allocator.copy_in(handle, array)

    def copy_out(self, array: np.ndarray, handle: Any) -> None:
        self._current()
        self.synchronize()
        self.allocator.copy_out(array, handle)

    def synchronize(self) -> None:
        check(self.driver.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def load_program(self, source: str, kernels: Sequence[Mapping[str, Any]]) -> Program:
        self._current()
        return Program(self.driver, self.compiler.build(source), kernels)

    def _event(self) -> Event:
        ev = Event(self.driver)
        check(self.driver.cuEventRecord(ev.handle, self.stream), "cuEventRecord")
        return ev

    def launch(self, program: Any, kernel: str, args: Sequence[Any], grid: Sequence[int],
               block: Sequence[int]) -> Any:
        self._current()
        start = self._event()
        program.launch(self.stream, kernel, args, grid, block)
        return start, self._event()

    def elapsed(self, first: Any, last: Any) -> float:
        check(self.driver.cuEventSynchronize(last[1].handle), "cuEventSynchronize")
        ms = check(self.driver.cuEventElapsedTime(first[0].handle, last[1].handle),
                   "cuEventElapsedTime")
        return float(ms) * 1e-3
