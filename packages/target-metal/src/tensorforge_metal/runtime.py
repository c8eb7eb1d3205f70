"""The Metal runtime over PyObjC's Metal bindings (macOS only), in the four parts of a GPU
runtime:

- `Compiler`: MSL source -> `MTLLibrary` (fast math off: the source asks for `precise::`
  anyway), cached by source;
- `Program`: one compute pipeline per kernel; `launch` encodes buffers (`setBuffer`) and
  scalars (`setBytes`, packed by `scalar_bytes`) at their `[[buffer(i)]]` indices and
  dispatches threadgroups in its own command buffer;
- `Allocator`: shared-storage `MTLBuffer`s (host-visible: copies are memory copies);
- `MetalDevice`: the system default device and one command queue; `elapsed` reads the
  command buffers' GPU start and end times.

On another OS making a device raises `DeviceUnavailable`; the sources are then checked with
clang instead (`check.py`). Not run in CI (no Mac there).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tensorforge.errors import TensorforgeError
from tensorforge.runtime.device import Device, DeviceUnavailable

SCALARS = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "uint8": np.uint8,
           "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
           "int64": np.int64, "uint64": np.uint64, "bool": np.bool_}


def scalar_bytes(dtype: str, value: Any) -> bytes:
    """A scalar argument's bytes as its `constant T&` parameter reads them."""
    if dtype not in SCALARS:
        raise TensorforgeError(f"Metal kernels take no {dtype} scalars")
    return np.array([value], dtype=SCALARS[dtype]).tobytes()


def _metal() -> Any:
    if sys.platform != "darwin":
        raise DeviceUnavailable(f"Metal runs on macOS only (this is {sys.platform}); the "
                                "generated sources are checked with clang here instead")
    try:
        import Metal
    except ImportError as e:
        raise DeviceUnavailable("running Metal kernels needs PyObjC's Metal bindings: pip "
                                f"install pyobjc-framework-Metal ({e})") from e
    return Metal


class Compiler:
    def __init__(self, metal: Any, device: Any):
        self.metal, self.device, self._cache = metal, device, {}

    def build(self, source: str) -> Any:
        key = hashlib.sha256(source.encode()).hexdigest()
        if key not in self._cache:
            opts = self.metal.MTLCompileOptions.new()
            opts.setFastMathEnabled_(False)
            lib, err = self.device.newLibraryWithSource_options_error_(source, opts, None)
            if lib is None:
                raise TensorforgeError(f"the Metal compiler rejected the generated kernels: "
                                       f"{err}\nthis is a code generation bug")
            self._cache[key] = lib
        return self._cache[key]


class Program:
    def __init__(self, metal: Any, device: Any, library: Any,
                 kernels: Sequence[Mapping[str, Any]]):
        self.metal = metal
        self.pipelines, self.params = {}, {}
        for k in kernels:
            fn = library.newFunctionWithName_(k["name"])
            pso, err = device.newComputePipelineStateWithFunction_error_(fn, None)
            if pso is None:
                raise TensorforgeError(f"Metal pipeline for {k['name']}: {err}")
            self.pipelines[k["name"]], self.params[k["name"]] = pso, k.get("params", [])

    def launch(self, queue: Any, name: str, args: Sequence[Any], grid: Sequence[int],
               block: Sequence[int]) -> Any:
        cb = queue.commandBuffer()
        enc = cb.computeCommandEncoder()
        enc.setComputePipelineState_(self.pipelines[name])
        params = list(self.params[name]) + [{"kind": "buffer"}] * len(args)
        for i, (p, a) in enumerate(zip(params, args)):
            if p["kind"] == "buffer":
                enc.setBuffer_offset_atIndex_(a, 0, i)
            else:
                data = scalar_bytes(p["dtype"], a)
                enc.setBytes_length_atIndex_(data, len(data), i)
        size = self.metal.MTLSizeMake
        enc.dispatchThreadgroups_threadsPerThreadgroup_(size(*grid), size(*block))
        enc.endEncoding()
        cb.commit()
        return cb


class Allocator:
    def __init__(self, metal: Any, device: Any):
        self.metal, self.device = metal, device

    def alloc(self, nbytes: int) -> Any:
        return self.device.newBufferWithLength_options_(
            max(1, int(nbytes)), self.metal.MTLResourceStorageModeShared)

    def copy_in(self, handle: Any, array: np.ndarray) -> None:
        a = np.ascontiguousarray(array)
        handle.contents().as_buffer(a.nbytes)[:] = a.tobytes()

    def copy_out(self, array: np.ndarray, handle: Any) -> None:
        raw = handle.contents().as_buffer(array.nbytes)
        array.reshape(-1).view(np.uint8)[:] = np.frombuffer(raw, np.uint8)


class MetalDevice(Device):
    kind = "metal"

    def __init__(self) -> None:
        self.metal = _metal()
        self.device = self.metal.MTLCreateSystemDefaultDevice()
        if self.device is None:
            raise DeviceUnavailable("no Metal device on this Mac")
        self.name = f"metal:{self.device.name()}"
        self.queue = self.device.newCommandQueue()
        self.compiler = Compiler(self.metal, self.device)
        self.allocator = Allocator(self.metal, self.device)
        self._last: Any = None

    def alloc(self, nbytes: int) -> Any:
        return self.allocator.alloc(nbytes)

    def copy_in(self, handle: Any, array: np.ndarray) -> None:
        self.synchronize()
        self.allocator.copy_in(handle, array)

    def copy_out(self, array: np.ndarray, handle: Any) -> None:
        self.synchronize()
        self.allocator.copy_out(array, handle)

    def synchronize(self) -> None:
        if self._last is not None:
            self._last.waitUntilCompleted()
            self._last = None

    def load_program(self, source: str, kernels: Sequence[Mapping[str, Any]]) -> Program:
        return Program(self.metal, self.device, self.compiler.build(source), kernels)

    def launch(self, program: Any, kernel: str, args: Sequence[Any], grid: Sequence[int],
               block: Sequence[int]) -> Any:
        self._last = program.launch(self.queue, kernel, args, grid, block)
        return self._last

    def elapsed(self, first: Any, last: Any) -> float:
        last.waitUntilCompleted()
        return float(last.GPUEndTime() - first.GPUStartTime())
