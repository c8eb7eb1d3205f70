"""CUDA C++ -> PTX or cubin with NVRTC (`cuda-bindings` + `nvidia-cuda-nvrtc` wheels; no
driver needed), nvcc as the fallback where NVRTC is not installed.

- One NVRTC compile for a real architecture (`sm_90`) gives both the PTX (for the virtual
  `compute_90`) and the cubin (`CudaBinary`). The runtime loads cubins only: a pip NVRTC
  newer than the machine's driver emits PTX that driver cannot JIT, while its SASS runs on
  any driver of the same major.
- Headers (`cuda_fp16.h`, `mma.h`) come from the installed NVIDIA wheels, and the include
  path is passed only when the source includes something.
- Results are cached in memory by (source, arch).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from typing import Any

from tensorforge.errors import TensorforgeError

INSTALL = ("pip install 'tensorforge[cuda]' (the cuda-bindings and nvidia-cuda-nvrtc wheels, "
           "same CUDA major)")
OPTIONS = ("--std=c++17", "-default-device")


class CudaCompileError(TensorforgeError):
    """NVRTC or nvcc rejected the source, or no CUDA compiler is installed."""


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise CudaCompileError(f"compiling CUDA needs NVRTC: {INSTALL} ({e})") from e
    return nvrtc


def has_nvrtc() -> bool:
    try:
        _nvrtc().nvrtcVersion()
    except Exception:  # noqa: BLE001 - a missing or unloadable libnvrtc alike
        return False
    return True


@cache
def include_dirs() -> tuple[str, ...]:
    """Directories holding the CUDA headers kernels include (from the NVIDIA wheels, else a
    toolkit install)."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        found = find_nvidia_header_directory("cudart")
    except Exception:  # noqa: BLE001 - an older pathfinder or none at all
        found = None
    dirs = [found] if found else []
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    if os.path.isfile(os.path.join(home, "include", "cuda_fp16.h")):
        dirs.append(os.path.join(home, "include"))
    return tuple(dirs)


def check_arch(arch: str) -> int:
    """The compute capability of `sm_XY` as XY (a clear error otherwise)."""
    m = re.fullmatch(r"sm_(\d{2,3})a?", arch)
    if m is None:
        raise CudaCompileError(f"CUDA arch {arch!r} is not of the form sm_80, sm_90 ...")
    return int(m.group(1))


def _check(result: Any, what: str) -> Any:
    err, *rest = result
    if int(err) != 0:
        raise CudaCompileError(f"NVRTC {what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


@dataclass(frozen=True)
class CudaBinary:
    """One compile for a real architecture: its PTX (for `compute_XY`) and its cubin."""

    arch: str
    ptx: bytes
    cubin: bytes

    @property
    def entries(self) -> list[str]:
        return ptx_entries(self.ptx)


_CACHE: dict[str, CudaBinary] = {}
_LOCK = threading.Lock()


def compile_cuda(source: str, arch: str = "sm_80", name: str = "tensorforge.cu") -> CudaBinary:
    """`source` compiled once by NVRTC (nvcc where NVRTC is missing) for `arch`: PTX and
    cubin."""
    cc = check_arch(arch)
    key = hashlib.sha256(f"{arch}\0{source}".encode()).hexdigest()
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    if has_nvrtc():
        out = _compile_nvrtc(source, cc, name)
    elif shutil.which("nvcc"):
        out = CudaBinary(arch, compile_nvcc(source, arch, "ptx"),
                         compile_nvcc(source, arch, "cubin"))
    else:
        raise CudaCompileError(f"no CUDA compiler: {INSTALL}, or put nvcc on PATH")
    with _LOCK:
        _CACHE[key] = out
    return out


def compile_source(source: str, arch: str = "sm_80", output: str = "cubin") -> bytes:
    """`source` compiled for `arch` to `output`: "cubin" or "ptx"."""
    if output not in ("cubin", "ptx"):
        raise ValueError(f"output must be 'cubin' or 'ptx', not {output!r}")
    return getattr(compile_cuda(source, arch), output)


def _compile_nvrtc(source: str, cc: int, name: str) -> CudaBinary:
    nvrtc = _nvrtc()
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                  "program creation")
    try:
        opts = [f"-arch=sm_{cc}", *OPTIONS]
        if "#include" in source:
            opts += [f"-I{d}" for d in include_dirs()]
        err, = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if int(err) != 0:
            size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise CudaCompileError(
                f"NVRTC rejected the generated CUDA for sm_{cc} ({err}):\n"
                f"{log.decode(errors='replace').strip()}\nthis is a code generation bug; the "
                f"source was:\n{_numbered(source)}")
        ptx = b" " * _check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "PTX")
        cubin = b" " * _check(nvrtc.nvrtcGetCUBINSize(prog), "cubin size")
        _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "cubin")
        return CudaBinary(f"sm_{cc}", ptx.rstrip(b"\0"), cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def compile_nvcc(source: str, arch: str = "sm_80", output: str = "cubin") -> bytes:
    """`source` compiled by nvcc (the fallback, and the cross-check where nvcc is present)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CudaCompileError("nvcc is not on PATH")
    cc = check_arch(arch)
    with tempfile.TemporaryDirectory(prefix="tforge-nvcc-") as d:
        src, out = os.path.join(d, "k.cu"), os.path.join(d, f"k.{output}")
        with open(src, "w") as f:
            f.write(source)
        gpu = f"-arch=sm_{cc}" if output == "cubin" else f"-arch=compute_{cc}"
        cmd = [nvcc, f"--{output}", gpu, "-std=c++17",  # its own headers, not the wheels'
               "-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode:
            raise CudaCompileError(f"nvcc rejected the generated CUDA for sm_{cc}:\n"
                                   f"{proc.stderr.strip()}\nthe source was:\n{_numbered(source)}")
        with open(out, "rb") as f:
            return f.read()


def ptx_entries(ptx: bytes) -> list[str]:
    """The kernel names a PTX module defines (`.entry` directives)."""
    return [m.decode() for m in re.findall(rb"\.entry\s+(\w+)", ptx)]


def _numbered(source: str) -> str:
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))
