"""Checks of `llvm` target options before LLVM sees them.

LLVM does not reject bad CPU or feature names through an error the Python API can catch: an
unknown ``-mcpu`` (or a 32-bit CPU with an x86_64 triple) ends in ``LLVM ERROR: 64-bit code
requested on a subtarget that doesn't support it!`` (abort), a feature without ``+``/``-``
fails an assertion, and a few real features (``-sse2`` on x86_64, reserving an argument
register on AArch64) abort in code generation. So `validate` (the kind's ``validate`` hook,
run whenever a `Target` is made) checks ``-mtriple``, ``-mcpu`` and ``-mattr`` against LLVM's
own lists and a short list of known-fatal settings, and raises `TargetError` naming the valid
values, closest first.

LLVM's lists come from its ``-mcpu=help`` text, which it prints (to stderr, once per process)
when asked for a target machine of CPU ``help``; `llvm_tables` gets it in a subprocess, parses
it, and caches it in memory and on disk (per llvmlite version and architecture).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorforge.errors import TargetError
from tensorforge.target.suggest import valid_values

__all__ = ["SUPPORTED_ARCHES", "LLVMTables", "check_cpu", "check_mattr", "check_triple",
           "llvm_tables", "validate"]

#: Architectures the llvm target generates code for (tested: x86-64 natively, AArch64 under
#: qemu). LLVM knows more, but our code generator and runtime are not checked on them.
SUPPORTED_ARCHES = ("x86_64", "aarch64")

#: x86 CPUs without 64-bit mode: with an x86_64 triple LLVM aborts on them ("64-bit code
#: requested on a subtarget that doesn't support it!"). Found by compiling a function for
#: every CPU of LLVM 22's list in a subprocess; the list cannot grow (no new 32-bit CPUs).
X86_32BIT_CPUS = frozenset({
    "athlon", "athlon-4", "athlon-mp", "athlon-tbird", "athlon-xp", "c3", "c3-2", "geode",
    "i386", "i486", "i586", "i686", "k6", "k6-2", "k6-3", "lakemont", "pentium", "pentium-m",
    "pentium-mmx", "pentium2", "pentium3", "pentium3m", "pentium4", "pentium4m", "pentium_4",
    "pentium_4_sse3", "pentium_ii", "pentium_iii", "pentium_iii_no_xmm_regs", "pentium_m",
    "pentium_mmx", "pentium_pro", "pentiumpro", "prescott", "winchip-c6", "winchip2", "yonah",
})

#: -mattr settings that abort or miscompile in LLVM (found by compiling a float/int kernel
#: with every single +feature and -feature of LLVM 22's lists in a subprocess), and the mode
#: features, which the triple sets: code for another mode crashes when it runs.
_FATAL_FEATURES = {
    "x86_64": {"-64bit": "x86_64 code needs 64-bit instructions",
               "-sse": "the x86_64 ABI returns floats in SSE registers",
               "-sse2": "the x86_64 ABI returns doubles in SSE2 registers"},
    "aarch64": {f"+reserve-x{i}": "x1-x7 pass arguments; LLVM cannot make calls without them"
                for i in range(1, 8)},
}
_MODE_FEATURES = re.compile(r"(16|32|64)bit-mode")
_FEATURE_ITEM = re.compile(r"[+-][A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class LLVMTables:
    """The CPU and feature names LLVM accepts for one architecture."""

    arch: str
    cpus: frozenset[str]
    features: frozenset[str]

    def usable_cpus(self) -> list[str]:
        """CPUs that can run code of this architecture (x86_64 drops the 32-bit ones)."""
        drop = X86_32BIT_CPUS if self.arch == "x86_64" else frozenset()
        return sorted(self.cpus - drop)


# -- LLVM's lists ------------------------------------------------------------------------------
_HELP_SCRIPT = """
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu="help")
"""


def parse_help(text: str) -> tuple[list[str], list[str]]:
    """(CPU names, feature names) from LLVM's ``-mcpu=help`` text."""
    cpus_part, sep, feats_part = text.partition("Available features for this target:")
    if not sep or "Available CPUs for this target:" not in cpus_part:
        raise ValueError("no 'Available CPUs/features for this target' sections")
    cpus_part = cpus_part.partition("Available CPUs for this target:")[2]
    names = re.compile(r"^  ([A-Za-z0-9]\S*)\s+- ", re.M)
    return names.findall(cpus_part), names.findall(feats_part)


@functools.lru_cache(maxsize=8)
def llvm_tables(arch: str) -> LLVMTables:
    """LLVM's CPU and feature lists for `arch` (from the disk cache, else a subprocess)."""
    import llvmlite

    path = _cache_dir() / f"llvm-targets-{llvmlite.__version__}-{_llvm_version()}-{arch}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc["cpus"] and doc["features"]:
            return LLVMTables(arch, frozenset(doc["cpus"]), frozenset(doc["features"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    triple = f"{arch}-unknown-linux-gnu"
    try:
        proc = subprocess.run([sys.executable, "-c", _HELP_SCRIPT, triple], capture_output=True,
                              text=True, timeout=120, env=_clean_env())
        cpus, features = parse_help(proc.stderr)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise TargetError(
            f"cannot get LLVM's list of {arch} CPUs and features to check the target options "
            f"({type(exc).__name__}: {exc}); without it an unknown name would abort the "
            "process inside LLVM. Check that llvmlite works (python -c 'import "
            "llvmlite.binding'), or leave -mcpu/-mattr unset to compile for this machine."
        ) from None
    _write_cache(path, {"llvmlite": llvmlite.__version__, "arch": arch, "cpus": cpus,
                        "features": features})
    return LLVMTables(arch, frozenset(cpus), frozenset(features))


def _llvm_version() -> str:
    import llvmlite.binding as llvm

    return ".".join(str(v) for v in llvm.llvm_version_info)


def _cache_dir() -> Path:
    """``$TENSORFORGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tensorforge`` (``~/.cache``)."""
    env = os.environ.get("TENSORFORGE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensorforge"


def _write_cache(path: Path, doc: dict[str, Any]) -> None:
    """Best effort: an unwritable cache only costs the subprocess next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    return env


# -- checks ------------------------------------------------------------------------------------
def _host_triple() -> str:
    import llvmlite.binding as llvm

    return llvm.get_process_triple()


def check_triple(triple: str) -> str:
    """The architecture of `triple` if we generate code for it, else TargetError."""
    arch = triple.split("-")[0]
    if arch not in SUPPORTED_ARCHES or not re.fullmatch(r"[A-Za-z0-9_.-]+", triple):
        raise TargetError(
            f"-mtriple={triple!r}: the llvm target generates code for "
            f"{' and '.join(SUPPORTED_ARCHES)} only (triples such as x86_64-unknown-linux-gnu "
            "or aarch64-unknown-linux-gnu); leave -mtriple unset to compile for this machine.")
    return arch


def check_cpu(arch: str, cpu: str) -> None:
    """TargetError unless LLVM knows `cpu` for `arch` and it can run `arch` code."""
    if cpu in ("", "generic"):
        return
    if arch == check_triple(_host_triple()) and cpu == _host_cpu():
        return
    tables = llvm_tables(arch)
    if cpu in tables.cpus and cpu not in (X86_32BIT_CPUS if arch == "x86_64" else ()):
        return
    why = (f"{cpu!r} is a 32-bit CPU; x86_64 code needs a 64-bit one"
           if cpu in tables.cpus else f"LLVM does not know the CPU {cpu!r} for {arch}")
    raise TargetError(f"-mcpu={cpu}: {why}. "
                      + valid_values(cpu, tables.usable_cpus(), f"{arch} CPUs"))


def check_mattr(arch: str, mattr: str) -> None:
    """TargetError unless every item of `mattr` is ``+feature`` or ``-feature`` with a
    feature LLVM knows for `arch`, and none is known to abort or miscompile."""
    if not mattr.strip():
        return
    host = _host_features() if arch == check_triple(_host_triple()) else set()
    tables = None
    for item in (s.strip() for s in mattr.split(",")):
        if not _FEATURE_ITEM.fullmatch(item):
            raise TargetError(
                f"-mattr={mattr}: item {item!r} is not +feature or -feature; write a comma "
                "list like +avx2,+fma,-avx512f (no spaces, no empty items).")
        name = item[1:]
        if _MODE_FEATURES.fullmatch(name):
            raise TargetError(f"-mattr={mattr}: {item!r} changes the code mode, which the "
                              "triple sets; leave it out (and use -mtriple to cross-compile).")
        fatal = _FATAL_FEATURES.get(arch, {}).get(item)
        if fatal:
            raise TargetError(f"-mattr={mattr}: {item!r} is not supported ({fatal}; LLVM "
                              "aborts on it); leave it out.")
        if name in host:
            continue
        tables = tables or llvm_tables(arch)
        if name not in tables.features:
            raise TargetError(f"-mattr={mattr}: LLVM does not know the feature {name!r} for "
                              f"{arch}. " + valid_values(name, tables.features,
                                                         f"{arch} features"))


def validate(explicit: Mapping[str, Any]) -> None:
    """The llvm kind's ``validate`` hook: -mtriple, -mcpu and -mattr together."""
    triple = str(explicit.get("mtriple") or "")
    if not triple and "mcpu" not in explicit and "mattr" not in explicit:
        return
    arch = check_triple(triple or _host_triple())
    if "mcpu" in explicit:
        check_cpu(arch, str(explicit["mcpu"]))
    if explicit.get("mattr"):
        check_mattr(arch, str(explicit["mattr"]))


@functools.lru_cache(maxsize=1)
def _host_cpu() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


@functools.lru_cache(maxsize=1)
def _host_features() -> frozenset[str]:
    """Feature names llvmlite reports for this CPU (on or off): all valid LLVM names."""
    import llvmlite.binding as llvm

    try:
        return frozenset(llvm.get_host_cpu_features())
    except RuntimeError:
        return frozenset()
