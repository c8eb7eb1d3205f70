"""Describe the CPU we run on as ``llvm`` target options, trusting only what the OS allows.

llvmlite's ``get_host_cpu_features()`` reads CPUID; under some hypervisors it reports features
(AVX-512 on a ``znver4`` guest, for instance) that the kernel has disabled, and code built for
them dies with SIGILL. So every feature we can check is masked against the flags the kernel
lists in ``/proc/cpuinfo``: a ``+feature`` the OS does not list becomes ``-feature``.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable, Mapping
from typing import Any

# LLVM feature names -> /proc/cpuinfo flags, and the features checked: shared with the runtime,
# which compares a package's features with the host's without llvmlite
from tensorforge.runtime.cpu_features import CPUINFO_NAME, cpuinfo_flags

__all__ = ["cpuinfo_flags", "detect_host", "mask_features", "physical_cores"]


def mask_features(features: Mapping[str, bool], flags: Iterable[str] | None,
                  arch: str | None = None) -> dict[str, bool]:
    """Turn off every enabled feature we know how to check that ``flags`` does not list."""
    result = dict(features)
    if flags is None:
        return result
    flags = set(flags)
    arch = arch or platform.machine()
    table = CPUINFO_NAME["aarch64" if arch in ("aarch64", "arm64") else "x86_64"]
    for feature, enabled in features.items():
        if enabled and feature in table and table[feature] not in flags:
            result[feature] = False
    return result


def physical_cores(text: str | None = None) -> int:
    """Physical cores usable by this process (not hyper-threads), at least 1."""
    logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    logical = logical or os.cpu_count() or 1
    if text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return logical
    cores, phys = set(), "0"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            phys = value.strip()
        elif key == "core id":
            cores.add((phys, value.strip()))
    return max(1, min(len(cores), logical)) if cores else logical


def _attr_string(features: Mapping[str, bool]) -> str:
    return ",".join(("+" if on else "-") + name for name, on in sorted(features.items()))


def detect_host(explicit: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Options describing this machine: ``mcpu``, ``mattr``, ``mtriple``, ``num-threads``.

    ``mattr`` is the host's features masked by the OS flags. If ``explicit`` names a CPU other
    than the host's, the host features no longer apply and ``mattr`` is left out.
    """
    import llvmlite.binding as llvm

    explicit = explicit or {}
    cpu = llvm.get_host_cpu_name()
    result: dict[str, Any] = {
        "mcpu": cpu,
        "mtriple": llvm.get_process_triple(),
        "num-threads": physical_cores(),
    }
    if explicit.get("mcpu", cpu) == cpu:
        try:
            features = dict(llvm.get_host_cpu_features())
        except RuntimeError:  # llvmlite raises when the host cannot report features
            features = {}
        if features:
            result["mattr"] = _attr_string(mask_features(features, cpuinfo_flags()))
    return result
