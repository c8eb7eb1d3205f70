"""Ahead-of-time export: object file (same CPU and features as the JIT, PIC) -> shared library
linked by the system C compiler, plus the JSON signature sidecar `load_module` reads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any

from tensorforge.errors import TensorforgeError
from tensorforge.runtime.module import LIBRARY_FORMAT, LIBRARY_VERSION, sidecar_path


def find_cc() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise TensorforgeError("export_library needs a C compiler to link the shared library; "
                           "install one (Debian/Ubuntu: apt-get install gcc) or set $CC")


def export_library(module: Any, path: str) -> None:
    """Write `path` (a shared library) and `path + ".json"` for `module` (an LLVMModule)."""
    mod, tm = module.optimized_module(pic=True)
    obj = tm.emit_object(mod)
    cc = find_cc()
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tensorforge-export-") as tmp:
        obj_path = os.path.join(tmp, "kernels.o")
        with open(obj_path, "wb") as f:
            f.write(obj)
        cmd = [cc, "-shared", "-o", path, obj_path, "-lgomp", "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise TensorforgeError(f"linking {path!r} failed ({' '.join(cmd)}):\n{proc.stderr}")
    meta = {
        "format": LIBRARY_FORMAT,
        "version": LIBRARY_VERSION,
        "entry_name": module.entry_name,
        "target": {"mtriple": module.options.mtriple, "mcpu": module.options.mcpu,
                   "mattr": module.options.mattr, "num-threads": module.options.num_threads},
        "functions": [info.to_json() for info in module.infos],
    }
    with open(sidecar_path(path), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
