"""The `.tfpkg` artifact: one zip file holding

    lib.so          the kernels (a shared library, loaded with ctypes)
    lib.so.json     its kernel signatures (see `runtime.module`)
    graph.json      the executor's description: inputs, outputs, values, storages, kernels
    params.npz      the constants, by the `param` key of their value

`load` extracts it to a private temporary directory and opens it with numpy and ctypes only.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import tempfile
import zipfile
from typing import Any

import numpy as np

from tensorforge.errors import TensorforgeError

from .module import load_module

PACKAGE_FORMAT = "tensorforge.package"
PACKAGE_VERSION = 1
_LIB = "lib.so"


def export_package(model: Any, path: Any) -> str:
    path = os.fspath(path)
    if model.module is None:
        raise TensorforgeError("this model has no kernels to export")
    with tempfile.TemporaryDirectory(prefix="tfpkg-") as d:
        lib = os.path.join(d, _LIB)
        model.module.export_library(lib)
        buf = io.BytesIO()
        np.savez(buf, **model.params)
        manifest = {"format": PACKAGE_FORMAT, "version": PACKAGE_VERSION}
        tmp = path + ".tmp"
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr("manifest.json", json.dumps(manifest))
            z.write(lib, _LIB)
            z.write(lib + ".json", _LIB + ".json")
            z.writestr("graph.json", json.dumps(model.desc, indent=1))
            z.writestr("params.npz", buf.getvalue())
        os.replace(tmp, path)
    return path


def load(path: Any) -> Any:
    """Load a `.tfpkg` written by `CompiledModel.export`; returns a CompiledModel."""
    from .graph_executor import CompiledModel

    path = os.fspath(path)
    if not os.path.exists(path):
        raise TensorforgeError(f"cannot load {path!r}: no such file")
    if not zipfile.is_zipfile(path):
        raise TensorforgeError(f"cannot load {path!r}: not a tensorforge package (.tfpkg, a zip "
                               "written by CompiledModel.export)")
    d = tempfile.mkdtemp(prefix="tfpkg-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        need = {"manifest.json", _LIB, _LIB + ".json", "graph.json", "params.npz"}
        if not need <= names:
            raise TensorforgeError(f"cannot load {path!r}: it lacks {sorted(need - names)}")
        manifest = json.loads(z.read("manifest.json"))
        if manifest.get("format") != PACKAGE_FORMAT:
            raise TensorforgeError(f"cannot load {path!r}: not a tensorforge package")
        if int(manifest.get("version", 0)) > PACKAGE_VERSION:
            raise TensorforgeError(f"{path!r} was written by a newer tensorforge (package "
                                   f"version {manifest['version']}); upgrade to load it")
        for n in (_LIB, _LIB + ".json"):
            z.extract(n, d)
        desc = json.loads(z.read("graph.json"))
        with np.load(io.BytesIO(z.read("params.npz")), allow_pickle=False) as npz:
            params = {k: npz[k] for k in npz.files}
    module = load_module(os.path.join(d, _LIB)) if desc["kernels"] else None
    return CompiledModel(module, desc, params)
