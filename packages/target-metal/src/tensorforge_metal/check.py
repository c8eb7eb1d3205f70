"""Checking generated Metal without Apple's compiler: clang parses each source as C++17
(`-fsyntax-only`) against `include/metal_stdlib`, a header of declarations of the MSL subset
the printer emits, so types, overloads and calls are checked; then what clang cannot see is
checked here: attribute spellings (clang ignores unknown ones), `[[buffer(i)]]` indices, and
types Metal lacks (`double`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tensorforge.errors import TensorforgeError

INCLUDE = Path(__file__).parent / "include"
#: the attributes a generated kernel may carry
ATTRIBUTES = {"buffer", "threadgroup_position_in_grid", "thread_position_in_threadgroup",
              "thread_index_in_simdgroup"}
_ATTR = re.compile(r"\[\[\s*([A-Za-z_]\w*)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]")


class MetalCheckError(TensorforgeError):
    """The generated Metal source is not valid (or no clang to check it with)."""


def find_clang() -> str | None:
    for name in ("clang++", "clang", *(f"clang-{v}" for v in range(20, 13, -1))):
        path = shutil.which(name)
        if path:
            return path
    return None


def check_attributes(source: str) -> None:
    """Known attribute names; each kernel's buffer indices 0, 1, ... once each."""
    for kernel in re.split(r"\bkernel void\b", source)[1:]:
        head = kernel.split("{", 1)[0]
        buffers = []
        for name, index in _ATTR.findall(head):
            if name not in ATTRIBUTES:
                raise MetalCheckError(f"unknown Metal attribute [[{name}]] (Metal would reject "
                                      f"it; clang ignores it): {head.strip()[:200]}")
            if name == "buffer":
                buffers.append(int(index))
        if sorted(buffers) != list(range(len(buffers))):
            raise MetalCheckError(f"buffer indices {buffers} are not 0..{len(buffers) - 1} "
                                  f"once each: {head.strip()[:200]}")


def check_source(source: str, clang: str | None = None) -> None:
    """Raise `MetalCheckError` (with clang's diagnostics and the numbered source) unless
    `source` passes the checks of the module docstring."""
    if re.search(r"\bdouble\b", source):
        raise MetalCheckError("Metal has no double; a float64 value reached the Metal printer")
    check_attributes(source)
    clang = clang or find_clang()
    if clang is None:
        raise MetalCheckError("checking Metal sources needs clang: apt install clang")
    cmd = [clang, "-x", "c++", "-std=c++17", "-fsyntax-only", "-Wno-unknown-attributes",
           "-Werror=return-type", "-I", str(INCLUDE), "-"]
    proc = subprocess.run(cmd, input=source, capture_output=True, text=True, timeout=120)
    if proc.returncode:
        numbered = "\n".join(f"{i:4d}  {line}" for i, line in
                             enumerate(source.splitlines(), 1))
        raise MetalCheckError(f"the generated Metal does not compile (clang, C++17 against "
                              f"{INCLUDE / 'metal_stdlib'}):\n{proc.stderr.strip()}\n"
                              f"the source was:\n{numbered}")
