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

__all__ = ["cpuinfo_flags", "detect_host", "mask_features", "physical_cores"]

# LLVM feature -> /proc/cpuinfo flag, where the spellings differ (x86).
_X86_RENAMES = {
    "sse3": "pni", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "bmi": "bmi1", "lzcnt": "abm",
    "pclmul": "pclmulqdq", "sha": "sha_ni", "rdrnd": "rdrand", "sahf": "lahf_lm",
    "avxvnni": "avx_vnni", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
    "avx512vbmi2": "avx512_vbmi2", "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq", "avx512fp16": "avx512_fp16",
    "avx512vp2intersect": "avx512_vp2intersect", "amx-tile": "amx_tile", "amx-bf16": "amx_bf16",
    "amx-int8": "amx_int8", "amx-fp16": "amx_fp16", "cx16": "cx16", "64bit": "lm",
}
# Features checked against the OS on x86: the vector and bit-manipulation extensions.
_X86_CHECKED = (
    "sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "sse4a", "avx", "avx2", "fma", "fma4",
    "f16c", "bmi", "bmi2", "lzcnt", "popcnt", "movbe", "aes", "pclmul", "vpclmulqdq", "vaes",
    "gfni", "sha", "adx", "rdrnd", "rdseed", "xsave", "xsaveopt", "xsavec", "xsaves", "avxvnni",
    "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma", "avx512vbmi",
    "avx512vbmi2", "avx512vnni", "avx512bf16", "avx512bitalg", "avx512vpopcntdq", "avx512fp16",
    "avx512vp2intersect", "amx-tile", "amx-bf16", "amx-int8", "amx-fp16",
)
# AArch64: LLVM feature -> /proc/cpuinfo "Features" word.
_ARM_RENAMES = {"neon": "asimd", "fp-armv8": "fp", "fullfp16": "asimdhp", "dotprod": "asimddp",
                "sve": "sve", "sve2": "sve2", "i8mm": "i8mm", "bf16": "bf16"}


def cpuinfo_flags(text: str | None = None) -> set[str] | None:
    """CPU flags the kernel lists (x86 ``flags`` or AArch64 ``Features``), None if unknown."""
    if text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return set(value.split())
    return None


def mask_features(features: Mapping[str, bool], flags: Iterable[str] | None,
                  arch: str | None = None) -> dict[str, bool]:
    """Turn off every enabled feature we know how to check that ``flags`` does not list."""
    result = dict(features)
    if flags is None:
        return result
    flags = set(flags)
    arch = arch or platform.machine()
    if arch in ("aarch64", "arm64"):
        table = {f: _ARM_RENAMES[f] for f in _ARM_RENAMES}
    else:
        table = {f: _X86_RENAMES.get(f, f) for f in _X86_CHECKED}
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
