"""Ahead-of-time export: object file (same CPU and features as the JIT, PIC) -> shared library
linked by the system C compiler, plus the JSON signature sidecar `load_module` reads. The
library also carries its own kernel table (`tensorforge_kernel_table`, see
`tensorforge.runtime.module`), which `load_module` checks the sidecar against.

A cross target (a `-mtriple` of another architecture, e.g. aarch64-linux-gnu) is linked by
that triple's GNU cross compiler (`aarch64-linux-gnu-gcc`, Debian gcc-aarch64-linux-gnu) or by
`clang --target=<triple>`; `$CC_<arch>` (e.g. `CC_aarch64`) overrides the choice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any

from tensorforge.errors import TensorforgeError
from tensorforge.runtime.module import (
    KERNEL_TABLE_SIZE_SYMBOL,
    KERNEL_TABLE_SYMBOL,
    LIBRARY_FORMAT,
    LIBRARY_VERSION,
    kernel_table_bytes,
    sidecar_path,
)


def find_cc(triple: str | None = None) -> list[str]:
    """The command that links for `triple` (None or the host's: the system C compiler)."""
    arch = (triple or "").split("-")[0]
    if not arch or is_host_arch(arch):
        for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
            if name and shutil.which(name):
                return [name]
        raise TensorforgeError("export_library needs a C compiler to link the shared library; "
                               "install one (Debian/Ubuntu: apt-get install gcc) or set $CC")
    gnu = f"{arch}-linux-gnu-gcc"
    for name in (os.environ.get(f"CC_{arch}"), gnu):
        if name and shutil.which(name):
            return [name]
    if shutil.which("clang"):
        return ["clang", f"--target={triple}"]
    raise TensorforgeError(f"exporting for {triple} needs a cross linker: install {gnu} "
                           f"(Debian: apt-get install gcc-{arch}-linux-gnu libc6-dev-"
                           f"{_DEBIAN_ARCH.get(arch, arch)}-cross libgomp1-"
                           f"{_DEBIAN_ARCH.get(arch, arch)}-cross) or set $CC_{arch}")


_DEBIAN_ARCH = {"aarch64": "arm64", "x86_64": "amd64"}


def is_host_arch(arch: str) -> bool:
    import llvmlite.binding as llvm

    return arch == llvm.get_process_triple().split("-")[0]


def kernel_table_ir(table: bytes) -> str:
    """LLVM IR defining the kernel table's two data symbols."""
    text = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}"
                   for b in table)
    n = len(table)
    return (f'\n@{KERNEL_TABLE_SYMBOL} = constant [{n} x i8] c"{text}", align 1\n'
            f"@{KERNEL_TABLE_SIZE_SYMBOL} = constant i64 {n}, align 8\n")


def export_library(module: Any, path: str, graph_entry: Any = None) -> None:
    """Write `path` (a shared library) and `path + ".json"` for `module` (an LLVMModule);
    with `graph_entry` (an `AotPlan`), the library also defines that plan's ahead-of-time
    entry (`graph_entry.py`), recorded in its kernel table and sidecar, and the executor's
    native quick path (`quick_entry.py`, found by its symbol)."""
    from .graph_entry import entry_ir, entry_record
    from .quick_entry import quick_ir

    functions = [info.to_json() for info in module.infos]
    entry = None if graph_entry is None else entry_record(graph_entry)
    table = kernel_table_bytes(functions, module.target_info(), entry)
    # the entry and the quick path that calls it (`quick_entry.py`, the same in every library)
    linked = () if graph_entry is None else (entry_ir(graph_entry, module.arity()), quick_ir())
    mod, tm = module.optimized_module(pic=True, extra_ir=kernel_table_ir(table),
                                      linked_ir=linked)
    obj = tm.emit_object(mod)
    cc = find_cc(module.options.mtriple)
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tensorforge-export-") as tmp:
        obj_path = os.path.join(tmp, "kernels.o")
        with open(obj_path, "wb") as f:
            f.write(obj)
        cmd = [*cc, "-shared", "-o", path, obj_path, "-lgomp", "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise TensorforgeError(f"linking {path!r} failed ({' '.join(cmd)}):\n{proc.stderr}")
    meta = {
        "format": LIBRARY_FORMAT,
        "version": LIBRARY_VERSION,
        "entry_name": module.entry_name,
        "target": module.target_info(),
        "functions": functions,
    }
    if entry is not None:
        meta["graph_entry"] = entry
    with open(sidecar_path(path), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
