"""The machine description recorded with every benchmark run."""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (else platform.processor())."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_lanes(target: Any = None) -> int:
    """float32 lanes our templates use on the target (default: this machine's `llvm`)."""
    from tensorforge.ops.schedule_generic import vector_lanes
    from tensorforge.target import Target

    return vector_lanes(Target.coerce(target or "llvm"))


def _git_revision() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode:
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def versions() -> dict[str, str | None]:
    """Versions of what the figures depend on (None: not installed)."""
    import importlib.metadata as md

    out: dict[str, str | None] = {}
    for dist in ("tensorforge", "tensorforge-target-llvm", "llvmlite", "numpy", "onnx",
                 "onnxruntime", "torch"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def machine_info() -> dict[str, Any]:
    """CPU, the LLVM CPU/features our target uses, float32 lanes, versions, load average."""
    import llvmlite.binding as llvm

    from tensorforge.target import Target

    tgt = Target.parse("llvm")
    mattr = str(tgt.options.get("mattr", ""))
    vector = sorted(f[1:] for f in mattr.split(",") if f.startswith("+")
                    and f[1:].startswith(("avx", "fma", "sse4", "neon", "sve")))
    return {
        "cpu_model": cpu_model(),
        "machine": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "llvm_mcpu": tgt.options.get("mcpu"),
        "llvm_vector_features": vector,
        "float32_lanes": host_lanes(tgt),
        "llvm_version": ".".join(map(str, llvm.llvm_version_info)),
        "python": platform.python_version(),
        "versions": versions(),
        "git_revision": _git_revision(),
        "omp_env": {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "GOMP_"))},
        "loadavg_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
