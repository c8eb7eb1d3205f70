"""Runtime: compiled modules and kernels, and loading exported libraries without the compiler.

Nothing here imports llvmlite or any code generator: an exported model runs with numpy and
ctypes alone.
"""

from .arena import ClosedError
from .cfunction import CFunction, KernelError, Param, params_from_json, params_to_json
from .module import LIBRARY_FORMAT, LibraryModule, Module, load_module

__all__ = [
    "LIBRARY_FORMAT",
    "CFunction",
    "ClosedError",
    "KernelError",
    "LibraryModule",
    "Module",
    "Param",
    "load_module",
    "params_from_json",
    "params_to_json",
]
