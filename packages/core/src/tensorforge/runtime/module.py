"""Runtime modules: a named set of compiled kernels, and loading an exported CPU library.

`Module` is target-independent: a backend subclasses it (the LLVM JIT module, a CUDA module)
and fills in the functions. `load_module` opens a shared library written by
`Module.export_library` with ctypes alone, so exported models run without the compiler (and
without llvmlite) installed. The library's kernels are described by a JSON sidecar
`<path>.json`:

    {"format": "tensorforge.cpu-library", "version": 1, "entry_name": "add",
     "functions": [{"name": "add", "symbol": "add", "params": [...], "asserts": [...]}]}

where `params` are `Param` records (see `cfunction.py`). A sidecar of another format that
names a `"loader": "module:function"` is loaded by that function (`loader(path, meta)`), e.g.
a VDLA instruction stream by `tensorforge_vdla.codegen:load_vdla_module`.
"""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from tensorforge.errors import TensorforgeError

from .cfunction import CFunction, params_from_json

__all__ = ["LIBRARY_FORMAT", "LibraryModule", "Module", "load_module"]

LIBRARY_FORMAT = "tensorforge.cpu-library"
LIBRARY_VERSION = 1


class Module:
    """A set of compiled kernels, by name.

    :param functions: name -> callable kernel (a `CFunction` on CPU), in definition order.
    :param entry_name: the kernel `module(...)` calls; defaults to the first one.
    """

    type_key = "module"

    def __init__(self, functions: Mapping[str, Callable[..., Any]],
                 entry_name: str | None = None):
        self._functions = dict(functions)
        if entry_name is None and self._functions:
            entry_name = next(iter(self._functions))
        self.entry_name = entry_name

    @property
    def function_names(self) -> list[str]:
        return list(self._functions)

    def get_function(self, name: str) -> Callable[..., Any]:
        """The kernel called `name`; a `TensorforgeError` lists the known names otherwise."""
        try:
            return self._functions[name]
        except KeyError:
            known = ", ".join(self._functions) or "none"
            raise TensorforgeError(
                f"{self.type_key} module has no function {name!r} (it has: {known})"
            ) from None

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self.get_function(name)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __call__(self, *args: Any) -> Any:
        if self.entry_name is None:
            raise TensorforgeError(f"{self.type_key} module has no functions to call")
        return self.get_function(self.entry_name)(*args)

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write the kernels as a loadable library (see `load_module`)."""
        raise TensorforgeError(
            f"a {self.type_key} module cannot be exported as a library; build it for a target "
            "whose code generator supports export (e.g. 'llvm')"
        )

    def get_source(self, fmt: str = "") -> str:
        """The generated code in format `fmt` (backend-specific: "ll", "asm", "cuda" ...)."""
        raise TensorforgeError(f"a {self.type_key} module has no source to show")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.type_key}: {', '.join(self._functions)}>"


class LibraryModule(Module):
    """Kernels of a shared library opened with ctypes (see `load_module`)."""

    type_key = "library"

    def __init__(self, path: str, lib: ctypes.CDLL, functions: Mapping[str, CFunction],
                 entry_name: str | None):
        super().__init__(functions, entry_name)
        self.path = path
        self._lib = lib

    def export_library(self, path: str | os.PathLike[str]) -> None:
        import shutil

        path = os.fspath(path)
        shutil.copyfile(self.path, path)
        shutil.copyfile(self.path + ".json", path + ".json")


def sidecar_path(path: str | os.PathLike[str]) -> str:
    return os.fspath(path) + ".json"


def load_module(path: str | os.PathLike[str]) -> Module:
    """Open a library written by `export_library`, with ctypes and its JSON sidecar only."""
    path = os.path.abspath(os.fspath(path))
    meta_path = sidecar_path(path)
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise TensorforgeError(
            f"cannot load {path!r}: its signature file {meta_path!r} is missing; copy it along "
            "with the library (export_library writes both)"
        ) from None
    except json.JSONDecodeError as e:
        raise TensorforgeError(f"cannot load {path!r}: {meta_path!r} is not valid JSON: {e}") from e
    loader = meta.get("loader")
    if loader and meta.get("format") != LIBRARY_FORMAT:  # a target's own format (e.g. VDLA)
        from tensorforge.plugins.descriptors import load_ref

        return load_ref(loader)(path, meta)  # type: ignore[no-any-return]
    if meta.get("format") != LIBRARY_FORMAT:
        raise TensorforgeError(f"{meta_path!r} does not describe a tensorforge CPU library")
    if int(meta.get("version", 0)) > LIBRARY_VERSION:
        raise TensorforgeError(
            f"{path!r} was written by a newer tensorforge (format version {meta['version']}); "
            "upgrade tensorforge to load it"
        )
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise TensorforgeError(f"cannot load the library {path!r}: {e}") from e
    functions: dict[str, CFunction] = {}
    for fmeta in meta["functions"]:
        symbol = fmeta.get("symbol", fmeta["name"])
        try:
            cfn = getattr(lib, symbol)
        except AttributeError:
            raise TensorforgeError(f"library {path!r} has no symbol {symbol!r}") from None
        address = ctypes.cast(cfn, ctypes.c_void_p).value
        functions[fmeta["name"]] = CFunction(
            fmeta["name"], address, params_from_json(fmeta["params"]),
            fmeta.get("asserts", ()), owner=lib,
        )
    return LibraryModule(path, lib, functions, meta.get("entry_name"))
