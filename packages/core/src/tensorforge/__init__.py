"""tensorforge: a deep-learning compiler after TVM.

Importing the package is cheap: ``te``, ``lower``, ``build``, ``compile``, ``tune_model``,
``quantize`` and ``load`` load on first use (``load`` needs only the runtime: numpy and
ctypes).
"""

from __future__ import annotations

from typing import Any

from tensorforge._version import __version__
from tensorforge.errors import TensorforgeError
from tensorforge.target import Target

__all__ = ["Target", "TensorforgeError", "__version__", "build", "compile", "load", "lower",
           "quantize", "te", "tune_model"]

_LAZY = {"te": ("tensorforge.te", None), "lower": ("tensorforge.driver", "lower"),
         "build": ("tensorforge.driver", "build"),
         "compile": ("tensorforge.compiler", "compile"),
         "tune_model": ("tensorforge.compiler.model_tuning", "tune_model"),
         "load": ("tensorforge.runtime.package", "load"),
         "quantize": ("tensorforge.graph.passes.quantize", "quantize")}

#: the modules that define core's tuning templates, imported by ``autotune.get_template`` when
#: a template name is unknown: the templates live beside what they schedule (operators, fused
#: groups), above the search engine, which names none of them itself
TEMPLATE_MODULES = ("tensorforge.ops.templates_cpu", "tensorforge.ops.templates_gpu",
                    "tensorforge.compiler.group_tasks")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'tensorforge' has no attribute {name!r}")
    import importlib

    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
