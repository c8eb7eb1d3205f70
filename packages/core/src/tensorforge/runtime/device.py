"""Devices and device modules: kernels that run on an accelerator, called with numpy arrays or
with arrays that stay in device memory.

- `Device` is what a target's runtime implements (the four parts of a GPU runtime: compile
  source to a program, load and launch kernels, allocate and copy memory, synchronize and
  time with device events). `tensorforge_opencl.runtime.OpenCLDevice` is one.
- `DeviceArray` is an array in a device's memory (`to_device`, `.numpy()`).
- `DeviceModule` holds the generated source and, per function, the launch plan the host/device
  split produced (workspaces, then launches and loops): calling a function replays the plan.
  Arguments may be numpy arrays (copied in, and the written ones copied back) or
  `DeviceArray`s (nothing copied). `time_evaluator` times a function with device events.
- Exported, a device module is its source (the library file) plus a JSON sidecar
  (`"format": "tensorforge.device-library"`, the `loader` `load_module` calls, and the
  `runtime` whose device runs it), so a package runs after `tensorforge.load` with only numpy
  and the target's runtime (e.g. pyopencl).

Nothing here imports the compiler.
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorforge.errors import TensorforgeError

from .cfunction import Param, params_from_json, params_to_json
from .module import Module

__all__ = ["DEVICE_LIBRARY_FORMAT", "Device", "DeviceArray", "DeviceFunction", "DeviceModule",
           "DeviceUnavailable", "TimeResult", "get_device", "load_device_module"]

DEVICE_LIBRARY_FORMAT = "tensorforge.device-library"
DEVICE_LIBRARY_VERSION = 1


class DeviceUnavailable(TensorforgeError):
    """This machine has no usable device of the kind (no driver, no GPU). Raised by a
    runtime's `Device()`; a model compiled for that device still exports."""


class Device:
    """A device a target's runtime drives. Subclasses implement the methods below; `handle`
    values are whatever the runtime uses for device memory (a cl.Buffer, a CUdeviceptr)."""

    kind = "device"
    name = "device"

    def alloc(self, nbytes: int) -> Any:
        raise NotImplementedError

    def copy_in(self, handle: Any, array: np.ndarray) -> None:
        """Copy a C-contiguous host array into device memory (blocking)."""
        raise NotImplementedError

    def copy_out(self, array: np.ndarray, handle: Any) -> None:
        """Copy device memory into a C-contiguous host array (blocking)."""
        raise NotImplementedError

    def synchronize(self) -> None:
        raise NotImplementedError

    def load_program(self, source: str, kernels: Sequence[Mapping[str, Any]]) -> Any:
        """Compile `source` (cached by content) and return a program whose kernels `launch`
        finds by name; `kernels` describe their parameters (dtypes)."""
        raise NotImplementedError

    def launch(self, program: Any, kernel: str, args: Sequence[Any],
               grid: Sequence[int], block: Sequence[int]) -> Any:
        """Enqueue one kernel; returns an event for `elapsed` (or None)."""
        raise NotImplementedError

    def elapsed(self, first: Any, last: Any) -> float:
        """Seconds from the start of event `first` to the end of event `last`."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class DeviceArray:
    """An array in device memory. `device.alloc`ed on creation; `numpy()` copies it back."""

    def __init__(self, device: Device, shape: Sequence[int], dtype: Any, handle: Any = None):
        self.device = device
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.handle = handle if handle is not None else device.alloc(max(1, self.nbytes))

    @classmethod
    def from_numpy(cls, device: Device, array: np.ndarray) -> DeviceArray:
        a = _contiguous(array)
        out = cls(device, a.shape, a.dtype)
        out.copy_from(a)
        return out

    def copy_from(self, array: np.ndarray) -> None:
        a = _contiguous(array, self.dtype)
        if a.shape != self.shape:
            raise TensorforgeError(f"cannot copy an array of shape {a.shape} into a device "
                                   f"array of shape {self.shape}")
        if self.nbytes:
            self.device.copy_in(self.handle, a)

    def copy_to(self, array: np.ndarray) -> None:
        if self.nbytes:
            self.device.copy_out(array, self.handle)

    def numpy(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self.copy_to(out)
        return out

    def __repr__(self) -> str:
        return f"<DeviceArray {self.dtype}{list(self.shape)} on {self.device.name}>"


def _contiguous(array: Any, dtype: Any = None) -> np.ndarray:
    """`array` as a C-contiguous array of `dtype`, keeping its shape (numpy's
    `ascontiguousarray` turns a 0-d array into a 1-d one)."""
    a = np.asarray(array, dtype=dtype)
    return a if a.flags.c_contiguous else a.copy(order="C")


def _import(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise TensorforgeError(f"cannot load the device runtime {ref!r}: {e}; install the "
                               "target's runtime (e.g. pip install 'tensorforge-target-opencl"
                               "[runtime]')") from e
    return obj


#: device kinds a package may name, and the runtime class that drives each: a package names
#: the kind, never an import path (loading a package must not import what it says)
DEVICE_RUNTIMES: dict[str, str] = {"opencl": "tensorforge_opencl.runtime:OpenCLDevice",
                                   "cuda": "tensorforge_cuda.runtime:CUDADevice",
                                   "metal": "tensorforge_metal.runtime:MetalDevice"}


def register_device_runtime(kind: str, runtime: str) -> None:
    """Let packages with modules of device `kind` load through `runtime` ("module:Class", a
    `Device` subclass): a GPU plugin calls this when imported."""
    DEVICE_RUNTIMES[kind] = runtime


_DEVICES: dict[tuple[str, str], Device] = {}
_DEVICES_LOCK = threading.Lock()


def get_device(runtime: str, options: Mapping[str, Any] | None = None) -> Device:
    """The process-wide device of runtime `runtime` ("module:DeviceClass") for `options`
    (platform/device selection); created on first use."""
    key = (runtime, json.dumps(dict(options or {}), sort_keys=True))
    with _DEVICES_LOCK:
        dev = _DEVICES.get(key)
        if dev is None:
            dev = _DEVICES[key] = _import(runtime)(**dict(options or {}))
        return dev


@dataclass
class TimeResult:
    """Seconds per call of each repeat (`results`), with `mean` and `median`."""

    results: list[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    def __str__(self) -> str:
        return f"median {self.median * 1e3:.4f} ms over {len(self.results)} repeats"


class DeviceFunction:
    """One function of a device module: a launch plan over its kernels."""

    def __init__(self, module: DeviceModule, plan: Mapping[str, Any]):
        self.module = module
        self.name = plan["name"]
        self.params: tuple[Param, ...] = tuple(params_from_json(plan["params"]))
        self.plan = plan
        self.kernels = {k["name"]: k for k in plan["kernels"]}
        #: messages of the kernels' assertions and data checks, in status order
        self.asserts: tuple[str, ...] = tuple(plan.get("asserts") or [
            m for k in plan["kernels"] for m in k.get("asserts", [])])
        self._workspaces: list[DeviceArray] | None = None
        self._lock = threading.Lock()

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(p.describe() for p in self.params)})"

    def __repr__(self) -> str:
        return f"<DeviceFunction {self.signature}>"

    # arguments ----------------------------------------------------------------------------
    def _check(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.params):
            raise TensorforgeError(
                f"kernel {self.signature} takes {len(self.params)} arguments, got {len(args)}; "
                "pass one array per buffer and one number per scalar, in this order")
        for i, (p, a) in enumerate(zip(self.params, args)):
            if p.kind != "buffer":
                continue
            if not isinstance(a, (np.ndarray, DeviceArray)):
                raise TensorforgeError(
                    f"kernel {self.name!r}: argument {i} ({p.describe()}) expects a numpy "
                    f"array or a DeviceArray, got {type(a).__name__}")
            if a.dtype != np.dtype(p.dtype):
                raise TensorforgeError(
                    f"kernel {self.name!r}: argument {i} ({p.describe()}) expects dtype "
                    f"{p.dtype}, got {a.dtype}; convert it with .astype('{p.dtype}')")
            want = tuple(p.shape)
            if all(isinstance(d, int) for d in want) and tuple(a.shape) != want:
                raise TensorforgeError(
                    f"kernel {self.name!r}: argument {i} ({p.describe()}) expects shape "
                    f"{want}, got {tuple(a.shape)}")
            if isinstance(a, DeviceArray) and a.device is not self.module.device:
                raise TensorforgeError(f"kernel {self.name!r}: argument {i} lives on "
                                       f"{a.device.name}, not {self.module.device.name}")
            if isinstance(a, np.ndarray) and p.writes and not a.flags.writeable:
                raise TensorforgeError(f"kernel {self.name!r}: argument {i} ({p.describe()}) "
                                       "is read-only but the kernel writes into it")

    def __call__(self, *args: Any) -> None:
        """Run with numpy arrays (copied in and, when written, back) or DeviceArrays."""
        self._check(args)
        dev = self.module.device
        dargs: list[Any] = []
        copies: list[tuple[np.ndarray, DeviceArray]] = []
        for p, a in zip(self.params, args):
            if isinstance(a, np.ndarray) and p.kind == "buffer":
                d = DeviceArray.from_numpy(dev, a)
                dargs.append(d)
                if p.writes:
                    copies.append((a, d))
            else:
                dargs.append(a)
        self.run(dargs)
        for host, d in copies:
            if not host.flags.c_contiguous:
                tmp = d.numpy()
                host[...] = tmp
            else:
                d.copy_to(host)

    def run(self, args: Sequence[Any], context: str = "",
            nodes: Sequence[str] | None = None) -> list[Any]:
        """Launch the plan on device arrays and scalars (no copies); returns the events. A
        failed assertion or data check raises `error(...)` (`context` and `nodes` name the
        graph kernel, as the executor knows it)."""
        with self._lock:
            events, code = self._run(args)
        if code:
            host = [a.numpy() if isinstance(a, DeviceArray) else a for a in args]
            raise self.error(code, context, host, nodes)
        return events

    def error(self, status: int, context: str = "", args: Sequence[Any] = (),
              nodes: Sequence[str] | None = None) -> Exception:
        """The exception for status `status` (as `CFunction.error`: a failed data check is a
        `KernelCheckError` naming the node and the offending value found in `args`)."""
        from .cfunction import KernelError
        from .checks import check_error

        err = check_error(self, status, context, args, nodes)
        if err is not None:
            return err
        what = self.asserts[status - 1] if 0 < status <= len(self.asserts) else \
            f"status {status}"
        msg = f"kernel {self.name!r}: assertion failed: {what}"
        return KernelError(f"{context}: {msg}" if context else msg, self.name, status, context)

    def _run(self, args: Sequence[Any]) -> tuple[list[Any], int]:
        mod = self.module
        dev = mod.device
        program = mod.program
        if self._workspaces is None:
            self._workspaces = [DeviceArray(dev, (w["nbytes"],), "uint8")
                                for w in self.plan["workspaces"]]
        ws = self._workspaces
        events: list[Any] = []
        status: DeviceArray | None = None

        def value(ref: Sequence[Any], env: dict[str, int]) -> Any:
            kind, what = ref
            if kind == "param":
                a = args[what]
                return a.handle if isinstance(a, DeviceArray) else a
            if kind == "workspace":
                return ws[what].handle
            return env[what]

        def steps(items: Sequence[Mapping[str, Any]], env: dict[str, int]) -> None:
            nonlocal status
            for st in items:
                if "launch" in st:
                    k = self.kernels[st["launch"]]
                    kargs = [value(r, env) for r in st["args"]]
                    if k.get("asserts"):
                        if status is None:
                            status = DeviceArray.from_numpy(dev, np.zeros(1, "int32"))
                        kargs.append(status.handle)
                    events.append(dev.launch(program, k["name"], kargs, k["grid"], k["block"]))
                else:
                    for i in range(st["min"], st["min"] + st["extent"]):
                        steps(st["body"], {**env, st["loop"]: i})

        steps(self.plan["steps"], {})
        return events, int(status.numpy()[0]) if status is not None else 0

    def time(self, args: Sequence[Any], number: int = 1, repeat: int = 3,
             min_repeat_ms: float = 0.0) -> TimeResult:
        """Device-event seconds per call: `repeat` measurements of `number` calls each, the
        number raised until one measurement lasts `min_repeat_ms`."""
        dev = self.module.device
        self.run(args)  # warm-up: first launches compile and load
        dev.synchronize()

        def measure(n: int) -> float:
            first = last = None
            t0 = time.perf_counter()
            for _ in range(n):
                ev = self.run(args)
                if ev and ev[0] is not None:
                    first = first if first is not None else ev[0]
                    last = ev[-1]
            dev.synchronize()
            if first is None:  # a runtime without events: wall time
                return (time.perf_counter() - t0) / n
            return dev.elapsed(first, last) / n

        number = max(1, number)
        if min_repeat_ms > 0:
            one = max(measure(1), 1e-7)
            number = max(number, int(np.ceil(min_repeat_ms / 1000.0 / one)))
        return TimeResult([measure(number) for _ in range(max(1, repeat))])


class DeviceModule(Module):
    """Kernels of one `build` for a device target (see the module docstring)."""

    type_key = "device"
    #: how the tuner times it: device events around the kernels
    timing = "device"

    def __init__(self, desc: Mapping[str, Any], source: str):
        self.desc = dict(desc)
        self.source = source
        self.type_key = self.desc.get("target_kind", "device")
        self._device: Device | None = None
        self._program: Any = None
        self._lock = threading.Lock()
        functions = {f["name"]: DeviceFunction(self, f) for f in self.desc["functions"]}
        super().__init__(functions, self.desc.get("entry_name"))

    @property
    def device(self) -> Device:
        if self._device is None:
            self._device = get_device(self.desc["runtime"], self.desc.get("device_options"))
        return self._device

    @property
    def program(self) -> Any:
        with self._lock:
            if self._program is None:
                kernels = [k for f in self.desc["functions"] for k in f["kernels"]]
                self._program = self.device.load_program(self.source, kernels)
            return self._program

    def get_source(self, fmt: str = "") -> str:
        return self.source

    def to_device(self, array: np.ndarray) -> DeviceArray:
        return DeviceArray.from_numpy(self.device, array)

    def time_evaluator(self, name: str, number: int = 1, repeat: int = 3,
                       min_repeat_ms: float = 0.0) -> Callable[..., TimeResult]:
        """`f(*args) -> TimeResult`: device-event seconds per call of function `name`; numpy
        arguments are copied to the device once, before timing."""
        fn = self.get_function(name)
        assert isinstance(fn, DeviceFunction)

        def evaluate(*args: Any) -> TimeResult:
            fn._check(args)
            dargs = [self.to_device(a) if isinstance(a, np.ndarray) and p.kind == "buffer"
                     else a for p, a in zip(fn.params, args)]
            return fn.time(dargs, number, repeat, min_repeat_ms)

        return evaluate

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write the source to `path` and the launch plans to `path`.json."""
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.source)
        meta = {"format": DEVICE_LIBRARY_FORMAT, "version": DEVICE_LIBRARY_VERSION,
                "loader": f"{__name__}:load_device_module", **self.desc}
        with open(path + ".json", "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)


def device_library_desc(target: Any, runtime: str, functions: list[dict[str, Any]],
                        device_options: Mapping[str, Any] | None = None,
                        language: str = "") -> dict[str, Any]:
    """The description a device module is made from (also its exported sidecar)."""
    return {"target": str(target), "target_kind": getattr(getattr(target, "kind", None),
                                                         "name", "device"),
            "runtime": runtime, "language": language,
            "device_options": dict(device_options or {}), "functions": functions,
            "entry_name": functions[0]["name"] if functions else None}


def load_device_module(path: str | os.PathLike[str], meta: Mapping[str, Any]) -> DeviceModule:
    """A device module from an exported source file and its parsed sidecar."""
    if int(meta.get("version", 0)) > DEVICE_LIBRARY_VERSION:
        raise TensorforgeError(f"{os.fspath(path)!r} was written by a newer tensorforge "
                               f"(device library version {meta['version']}); upgrade to load it")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    desc = {k: v for k, v in meta.items() if k not in ("format", "version", "loader")}
    return DeviceModule(desc, source)


__all__ += ["device_library_desc", "params_to_json"]
