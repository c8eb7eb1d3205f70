"""Runtime: compiled modules and kernels, and loading exported libraries without the compiler.

Nothing here imports llvmlite or any code generator: an exported model runs with numpy and
ctypes alone.
"""

from .arena import ClosedError
from .cfunction import CFunction, KernelError, Param, params_from_json, params_to_json
from .device import Device, DeviceArray, DeviceModule, TimeResult, get_device
from .module import LIBRARY_FORMAT, LibraryModule, Module, load_module

__all__ = [
    "LIBRARY_FORMAT",
    "CFunction",
    "ClosedError",
    "KernelError",
    "Device",
    "DeviceArray",
    "DeviceModule",
    "TimeResult",
    "get_device",
    "LibraryModule",
    "Module",
    "Param",
    "load_module",
    "params_from_json",
    "params_to_json",
]
