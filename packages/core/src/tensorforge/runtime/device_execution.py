"""Running a model's kernels on devices: device memory and the copies between host and device.

The graph executor hands over its kernel calls (function, host arrays) in order; for every
kernel that is a `DeviceFunction` (it runs on an accelerator) this module binds device arrays
instead and inserts the copies, decided once from the model description:

- constants a device kernel reads are uploaded once per device (`DeviceConstants`, shared by
  every call of the model);
- intermediates a device kernel writes live in device storage pools (one `DeviceArray` per
  storage of the memory plan, values viewing its start), never on the host unless a host
  kernel reads them (then one download, right after the producer); the values of a storage
  that holds a zero-copy concat (parts at offsets, all made on the host) get device arrays of
  their own, since the whole and its parts are alive at once;
- a graph input or a host-produced value a device kernel reads is uploaded once, before the
  first device reader; a graph output a device kernel writes is downloaded after it.

Host kernels keep their host arrays. The copies are decided when a call is bound (one
`KernelStep` per kernel: its uploads, the kernel, its downloads), not while running.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .device import DeviceArray, DeviceFunction

__all__ = ["DeviceConstants", "KernelStep", "bind_devices", "is_device_function"]


def is_device_function(fn: Any) -> bool:
    return isinstance(fn, DeviceFunction)


class DeviceConstants:
    """Constants uploaded once per (value, device), shared by every call of a model."""

    def __init__(self) -> None:
        self._arrays: dict[tuple[int, int], DeviceArray] = {}
        self._lock = threading.Lock()

    def get(self, value: int, device: Any, host: np.ndarray) -> DeviceArray:
        key = (value, id(device))
        with self._lock:
            arr = self._arrays.get(key)
            if arr is None:
                arr = self._arrays[key] = DeviceArray.from_numpy(device, host)
            return arr


def _view(base: DeviceArray, shape: Sequence[int], dtype: Any) -> DeviceArray:
    """A typed device array over the start of `base` (values view their storage's start)."""
    return DeviceArray(base.device, shape, dtype, handle=base.handle)


class KernelStep:
    """One kernel of a call with its copies: the uploads it needs first, the kernel (on its
    device, with device arrays, or on the host, with host arrays), then its downloads.
    `synchronize()` waits for the device (the executor's profile times whole steps)."""

    def __init__(self, fn: Any, args: list[Any], device: Any = None, context: str = "",
                 nodes: Sequence[str] | None = None):
        self.fn, self.args, self.device = fn, args, device
        self.context, self.nodes = context, nodes  # name the graph kernel in errors
        self.before: list[tuple[str, Any, Any]] = []  # ("up"|"down", device side, host side)
        self.after: list[tuple[str, Any, Any]] = []

    @staticmethod
    def _copy(what: str, dev: DeviceArray, host: np.ndarray) -> None:
        if what == "up":
            dev.copy_from(host)
        else:
            dev.copy_to(host)

    def __call__(self) -> None:
        for c in self.before:
            self._copy(*c)
        if self.device is not None:
            self.fn.run(self.args, self.context, self.nodes)
        else:
            self.fn(*self.args)
        for c in self.after:
            self._copy(*c)

    def synchronize(self) -> None:
        if self.device is not None:
            self.device.synchronize()

    @property
    def copies(self) -> int:
        return len(self.before) + len(self.after)


def bind_devices(desc: Mapping[str, Any], calls: Sequence[tuple[Any, list[np.ndarray]]],
                 arrays: Sequence[np.ndarray], constants: DeviceConstants
                 ) -> tuple[list[KernelStep], dict[int, DeviceArray]]:
    """One `KernelStep` per kernel of `desc["kernels"]` (`calls[i]` is kernel i with its host
    arrays; `arrays` the call's host arrays by value index), device kernels bound to device
    arrays and the copies in place; and the device array of every intermediate a device
    kernel writes (to read one back out of plan: `tforge run --verify`)."""
    values = desc["values"]
    storages: dict[tuple[int, int], DeviceArray] = {}  # (storage, device) -> pool
    views = {v["storage"] for v in values if v.get("offset")}  # storages of concat views
    on_device: dict[tuple[int, int], DeviceArray] = {}  # (value, device) -> array there

    def device_array(vi: int, dev: Any) -> DeviceArray:
        """Where value `vi` lives (or will live) on `dev`."""
        key = (vi, id(dev))
        arr = on_device.get(key)
        if arr is None:
            v = values[vi]
            if v["kind"] == "const":
                arr = constants.get(vi, dev, arrays[vi])
            elif v["kind"] == "intermediate" and v.get("storage") is not None and \
                    v["storage"] not in views:
                skey = (v["storage"], id(dev))
                pool = storages.get(skey)
                if pool is None:
                    pool = storages[skey] = DeviceArray(
                        dev, (int(desc["storages"][v["storage"]]),), "uint8")
                arr = _view(pool, v["shape"], v["dtype"])
            else:
                arr = DeviceArray(dev, v["shape"], v["dtype"])
            on_device[key] = arr
        return arr

    # where[v]: the places holding value v's current contents ("host" or id(device))
    where: dict[int, set[Any]] = {i: {"host"} for i, v in enumerate(values)
                                  if v["kind"] in ("input", "const")}
    devices: dict[int, Any] = {}
    steps: list[KernelStep] = []
    written: dict[int, DeviceArray] = {}

    def to_host(vi: int, into: list[tuple[str, Any, Any]]) -> None:
        if "host" not in where.get(vi, {"host"}):
            src = next(iter(where[vi]))
            into.append(("down", device_array(vi, devices[src]), arrays[vi]))
            where[vi].add("host")

    for (fn, args), k in zip(calls, desc["kernels"]):
        n_in = len(k["args"]) - k["outputs"]
        ins, outs = k["args"][:n_in], k["args"][n_in:]
        if not is_device_function(fn):
            step = KernelStep(fn, args)
            for vi in ins:
                to_host(vi, step.before)
            for vi in outs:
                where[vi] = {"host"}
            steps.append(step)
            continue
        dev = fn.module.device
        devices[id(dev)] = dev
        from .graph_executor import _where  # (it imports this module)

        step = KernelStep(fn, [device_array(vi, dev) for vi in k["args"]], dev, _where(k),
                          k.get("nodes"))
        for vi in ins:
            if id(dev) in where.get(vi, set()):
                continue
            if values[vi]["kind"] != "const":  # constants are uploaded once, at bind time
                to_host(vi, step.before)
                step.before.append(("up", device_array(vi, dev), arrays[vi]))
            where.setdefault(vi, set()).add(id(dev))
        for vi in outs:
            where[vi] = {id(dev)}
            if values[vi]["kind"] == "output":
                to_host(vi, step.after)
            else:  # its host copy is made only when a host kernel reads it
                written[vi] = device_array(vi, dev)
        steps.append(step)
    return steps, written
