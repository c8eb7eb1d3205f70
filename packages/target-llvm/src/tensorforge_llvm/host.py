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
from tensorforge.runtime.cpu_features import CHECKED, CPUINFO_NAME, cpuinfo_flags, normalize_arch

__all__ = ["checked_features", "cpuinfo_flags", "detect_host", "mask_features",
           "missing_host_features", "physical_cores", "required_features"]


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


def checked_features(arch: str | None = None) -> tuple[str, ...]:
    """The LLVM features of `arch` that kernels may use and that we can check against the OS
    (`tensorforge.runtime.cpu_features.CHECKED`, which packages record too)."""
    return CHECKED.get(normalize_arch(arch or platform.machine()), ())


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


def required_features(triple: str, cpu: str, mattr: str, candidates: Iterable[str]
                      ) -> set[str]:
    """Which of `candidates` code built for (`cpu`, `mattr`) may use, by LLVM's own tables.

    LLVM does not export "the features of CPU X", but its inliner refuses to inline a
    function into one whose subtarget lacks any of the callee's features. So: one tiny
    callee per candidate, built for the generic CPU plus that feature, and a caller built for
    (`cpu`, `mattr`) that calls them all; after the inliner, the calls that are left name the
    features the CPU does not have. The options must be valid (`options.validate`): LLVM
    aborts on unknown CPUs here as anywhere.
    """
    import llvmlite.binding as llvm

    from .jit import ensure_llvm

    ensure_llvm()
    names = list(dict.fromkeys(candidates))
    lines = ["@probe_sink = global i32 0"]
    for i, name in enumerate(names):
        lines += [f"define internal void @probe{i}() #{i} {{",
                  f"  store volatile i32 {i}, ptr @probe_sink", "  ret void", "}",
                  f'attributes #{i} = {{ "target-cpu"="generic" "target-features"="+{name}" }}']
    lines += ["define void @probe_all() {", *[f"  call void @probe{i}()" for i in
                                               range(len(names))], "  ret void", "}"]
    mod = llvm.parse_assembly("\n".join(lines))
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=mattr)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=1))
    pb.getModulePassManager().run(mod, pb)
    left = str(mod.get_function("probe_all"))
    return {name for i, name in enumerate(names) if f"@probe{i}()" not in left}


def missing_host_features(triple: str, cpu: str, mattr: str) -> list[str]:
    """Features code for (`triple`, `cpu`, `mattr`) may use that this machine lacks (or that
    the OS disables); empty for another architecture (nothing runs here anyway) and when the
    host's features are unknown."""
    import llvmlite.binding as llvm

    from .jit import host_options

    arch = triple.split("-")[0]
    if arch != llvm.get_process_triple().split("-")[0]:
        return []
    host = host_options()
    if not host.get("mattr"):
        return []
    if cpu == host["mcpu"] and mattr == host["mattr"]:
        return []
    have = {item[1:] for item in host["mattr"].split(",") if item.startswith("+")}
    candidates = [f for f in checked_features(arch) if f not in have]
    if not candidates:
        return []
    return sorted(required_features(triple, cpu, mattr, candidates))
