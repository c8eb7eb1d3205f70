"""Which CPU features compiled code needs, and whether this machine has them, without llvmlite.

A package records the architecture, OS and CPU features its code was built for
(`required_features(mcpu, mattr, arch)`); `tensorforge.load` compares them with this machine
(`check_host`) before the library is opened, so code built for AVX-512 on a machine without
it is an error naming the missing features, never a SIGILL.

Feature names are LLVM's (`avx512f`, `sse4.2`, `neon`); the kernel lists them in
`/proc/cpuinfo` under other spellings (`sse4_2`, `asimd`), mapped by `CPUINFO_NAME`. Only the
features in `CHECKED` are compared: the vector, FMA and bit-manipulation extensions, whose
instructions LLVM may select for the plain IR kernels are made of. Others are in every CPU of
the architecture (`cmov`, `cx8`, `64bit`), are only reachable through intrinsics kernels never
call (`aes`, `sha`, `rdrnd`, `xsave`, AMX), or are tuning flags (`fast-gather`); they are
ignored rather than risk refusing a package on a machine that can run it. `CPU_FEATURES` gives
the features an LLVM CPU name implies (after LLVM's X86/AArch64 processor tables, checked
features only), for targets like `-mcpu=znver4` that name a CPU without an explicit `-mattr`.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["CHECKED", "CPUINFO_NAME", "CPU_FEATURES", "check_host", "cpuinfo_flags",
           "host_arch", "host_os", "missing_features", "normalize_arch", "required_features",
           "target_features", "triple_arch", "triple_os"]

# -- names ---------------------------------------------------------------------------------------
#: LLVM feature -> /proc/cpuinfo flag where the spellings differ (x86)
_X86_RENAMES = {
    "sse3": "pni", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "bmi": "bmi1", "lzcnt": "abm",
    "pclmul": "pclmulqdq", "sha": "sha_ni", "rdrnd": "rdrand", "sahf": "lahf_lm",
    "avxvnni": "avx_vnni", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
    "avx512vbmi2": "avx512_vbmi2", "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq", "avx512fp16": "avx512_fp16",
    "avx512vp2intersect": "avx512_vp2intersect", "amx-tile": "amx_tile", "amx-bf16": "amx_bf16",
    "amx-int8": "amx_int8", "amx-fp16": "amx_fp16", "cx16": "cx16", "64bit": "lm",
}
#: x86 features whose cpuinfo flag is known (host detection masks these with the OS's flags)
_X86_KNOWN = (
    "sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "sse4a", "avx", "avx2", "fma", "fma4",
    "f16c", "bmi", "bmi2", "lzcnt", "popcnt", "movbe", "aes", "pclmul", "vpclmulqdq", "vaes",
    "gfni", "sha", "adx", "rdrnd", "rdseed", "xsave", "xsaveopt", "xsavec", "xsaves", "avxvnni",
    "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma", "avx512vbmi",
    "avx512vbmi2", "avx512vnni", "avx512bf16", "avx512bitalg", "avx512vpopcntdq", "avx512fp16",
    "avx512vp2intersect", "amx-tile", "amx-bf16", "amx-int8", "amx-fp16",
)
#: AArch64: LLVM feature -> /proc/cpuinfo "Features" word
_ARM_RENAMES = {"neon": "asimd", "fp-armv8": "fp", "fullfp16": "asimdhp", "dotprod": "asimddp",
                "sve": "sve", "sve2": "sve2", "i8mm": "i8mm", "bf16": "bf16"}
#: x86 features LLVM never selects for plain IR (only through their intrinsics, which kernels
#: do not call): a package does not need them even when its target enabled them
_X86_NEVER_EMITTED = frozenset({"aes", "pclmul", "vpclmulqdq", "vaes", "sha", "adx", "rdrnd",
                                "rdseed", "xsave", "xsaveopt", "xsavec", "xsaves", "amx-tile",
                                "amx-bf16", "amx-int8", "amx-fp16"})

#: features a package's requirements list and `load` compares with the host, per architecture
CHECKED: dict[str, tuple[str, ...]] = {
    "x86_64": tuple(f for f in _X86_KNOWN if f not in _X86_NEVER_EMITTED),
    "aarch64": tuple(_ARM_RENAMES),
}
#: LLVM feature -> its /proc/cpuinfo flag, for every feature whose flag is known
CPUINFO_NAME: dict[str, dict[str, str]] = {
    "x86_64": {f: _X86_RENAMES.get(f, f) for f in _X86_KNOWN},
    "aarch64": dict(_ARM_RENAMES),
}

# -- implications (LLVM: enabling a feature enables these; disabling one disables its users) ---
_X86_IMPLIES = {
    "sse2": ("sse",), "sse3": ("sse2",), "ssse3": ("sse3",), "sse4.1": ("ssse3",),
    "sse4.2": ("sse4.1",), "sse4a": ("sse3",), "avx": ("sse4.2",), "avx2": ("avx",),
    "fma": ("avx",), "f16c": ("avx",), "fma4": ("avx", "sse4a"), "aes": ("sse2",),
    "pclmul": ("sse2",), "sha": ("sse2",), "gfni": ("sse2",), "vaes": ("aes", "avx"),
    "vpclmulqdq": ("pclmul", "avx"), "avxvnni": ("avx2",), "xsaveopt": ("xsave",),
    "xsavec": ("xsave",), "xsaves": ("xsave",), "avx512f": ("avx2", "fma", "f16c"),
    "avx512bf16": ("avx512bw",), "avx512fp16": ("avx512bw",), "amx-bf16": ("amx-tile",),
    "amx-int8": ("amx-tile",), "amx-fp16": ("amx-tile",),
    **{f: ("avx512f",) for f in ("avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma",
                                 "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
                                 "avx512vpopcntdq", "avx512vp2intersect")},
}
_ARM_IMPLIES = {"neon": ("fp-armv8",), "fullfp16": ("fp-armv8",), "dotprod": ("neon",),
                "i8mm": ("neon",), "bf16": ("neon",), "sve": ("neon", "fullfp16"),
                "sve2": ("sve",)}
_IMPLIES = {"x86_64": _X86_IMPLIES, "aarch64": _ARM_IMPLIES}


def _gen(*parts: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for p in parts:
        out |= set(p.split()) if isinstance(p, str) else set(p)
    return frozenset(out)


# x86 processors (LLVM's X86 processor table, checked features only; implied ones are added
# by the closure)
_SSE2 = _gen("sse sse2")
_V2 = _gen(_SSE2, "sse3 ssse3 sse4.1 sse4.2 popcnt")
_V3 = _gen(_V2, "avx avx2 bmi bmi2 f16c fma lzcnt movbe xsave")
_V4 = _gen(_V3, "avx512f avx512bw avx512cd avx512dq avx512vl")
_CORE2 = _gen(_SSE2, "sse3 ssse3")
_PENRYN = _gen(_CORE2, "sse4.1")
_NEHALEM = _gen(_PENRYN, "popcnt sse4.2")
_WESTMERE = _gen(_NEHALEM, "pclmul")
_SNB = _gen(_WESTMERE, "avx xsave xsaveopt")
_IVB = _gen(_SNB, "f16c rdrnd")
_HSW = _gen(_IVB, "avx2 bmi bmi2 fma lzcnt movbe")
_BDW = _gen(_HSW, "adx rdseed")
_SKL = _gen(_BDW, "aes xsavec xsaves")
_SKX = _gen(_SKL, "avx512f avx512cd avx512dq avx512bw avx512vl")
_CLX = _gen(_SKX, "avx512vnni")
_CNL = _gen(_SKL, "avx512f avx512cd avx512dq avx512bw avx512vl avx512ifma avx512vbmi sha")
_ICL = _gen(_CNL, "avx512bitalg avx512vbmi2 avx512vnni avx512vpopcntdq gfni vaes vpclmulqdq")
_SPR = _gen(_ICL, "amx-bf16 amx-int8 amx-tile avx512bf16 avx512fp16 avxvnni")
_SLM = _gen(_WESTMERE, "movbe rdrnd")
_GLM = _gen(_SLM, "aes rdseed sha xsave xsavec xsaveopt xsaves")
_TREMONT = _gen(_GLM, "gfni")
_ADL = _gen(_TREMONT, "adx bmi bmi2 f16c fma lzcnt vaes vpclmulqdq avxvnni")
_ZN1 = _gen(_V2, "adx aes avx avx2 bmi bmi2 f16c fma lzcnt movbe pclmul rdrnd rdseed sha sse4a "
                 "xsave xsavec xsaveopt xsaves")
_ZN3 = _gen(_ZN1, "vaes vpclmulqdq")
_ZN4 = _gen(_ZN3, "avx512f avx512cd avx512dq avx512bw avx512vl avx512ifma avx512vbmi "
                  "avx512vbmi2 avx512vnni avx512bitalg avx512vpopcntdq avx512bf16 gfni")
_X86_CPUS = {
    "generic": _SSE2, "x86-64": _SSE2, "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4,
    "core2": _CORE2, "penryn": _PENRYN, "nehalem": _NEHALEM, "corei7": _NEHALEM,
    "westmere": _WESTMERE, "sandybridge": _SNB, "corei7-avx": _SNB, "ivybridge": _IVB,
    "core-avx-i": _IVB, "haswell": _HSW, "core-avx2": _HSW, "broadwell": _BDW,
    "skylake": _SKL, "skylake-avx512": _SKX, "skx": _SKX, "cascadelake": _CLX,
    "cooperlake": _gen(_CLX, "avx512bf16"), "cannonlake": _CNL, "icelake-client": _ICL,
    "rocketlake": _ICL, "icelake-server": _ICL, "tigerlake": _gen(_ICL, "avx512vp2intersect"),
    "sapphirerapids": _SPR, "emeraldrapids": _SPR, "graniterapids": _gen(_SPR, "amx-fp16"),
    "silvermont": _SLM, "slm": _SLM, "goldmont": _GLM, "goldmont-plus": _GLM,
    "tremont": _TREMONT, "alderlake": _ADL, "raptorlake": _ADL, "meteorlake": _ADL,
    "gracemont": _ADL, "znver1": _ZN1, "znver2": _ZN1, "znver3": _ZN3, "znver4": _ZN4,
    "znver5": _gen(_ZN4, "avxvnni avx512vp2intersect"),
}
_A64 = _gen("neon fp-armv8")
_N1 = _gen(_A64, "fullfp16 dotprod")
_ARM_CPUS = {
    "generic": _A64, "cortex-a53": _A64, "cortex-a57": _A64, "cortex-a72": _A64,
    "cortex-a73": _A64, "cortex-a76": _N1, "cortex-a78": _N1, "neoverse-n1": _N1,
    "neoverse-v1": _gen(_N1, "sve i8mm bf16"), "neoverse-n2": _gen(_N1, "sve sve2 i8mm bf16"),
    "neoverse-v2": _gen(_N1, "sve sve2 i8mm bf16"), "apple-m1": _N1,
    "apple-m2": _gen(_N1, "i8mm bf16"),
}
CPU_FEATURES: dict[str, dict[str, frozenset[str]]] = {"x86_64": _X86_CPUS, "aarch64": _ARM_CPUS}


# -- architecture and OS -------------------------------------------------------------------------
_ARCH_ALIASES = {"amd64": "x86_64", "x86-64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def normalize_arch(name: str) -> str:
    name = (name or "").lower()
    return _ARCH_ALIASES.get(name, name)


def triple_arch(triple: str) -> str:
    return normalize_arch(triple.split("-")[0]) if triple else host_arch()


def triple_os(triple: str) -> str:
    parts = triple.split("-") if triple else []
    for os_name in ("linux", "darwin", "macos", "windows", "freebsd"):
        if any(p.startswith(os_name) for p in parts[1:]):
            return "darwin" if os_name == "macos" else os_name
    return host_os() if not triple else "unknown"


def host_arch() -> str:
    return normalize_arch(platform.machine())


def host_os() -> str:
    return {"win32": "windows", "cygwin": "windows"}.get(sys.platform,
                                                         sys.platform.rstrip("0123456789"))


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


# -- what code needs, what the host lacks ----------------------------------------------------------
def _closure(features: Iterable[str], implies: dict[str, tuple[str, ...]]) -> set[str]:
    out: set[str] = set()
    todo = list(features)
    while todo:
        f = todo.pop()
        if f not in out:
            out.add(f)
            todo.extend(implies.get(f, ()))
    return out


def required_features(mcpu: str, mattr: str, arch: str) -> tuple[list[str], bool]:
    """(checked features code built for `mcpu` + `mattr` may use, whether `mcpu` was known).

    The CPU's features, plus every `+feature` of `mattr` and what they imply, minus every
    `-feature` and the features that imply it (as LLVM resolves them)."""
    arch = normalize_arch(arch)
    implies = _IMPLIES.get(arch, {})
    cpus = CPU_FEATURES.get(arch, {})
    known = not mcpu or mcpu in cpus
    base = set(cpus.get(mcpu or "generic", cpus.get("generic", frozenset())))
    plus, minus = set(), set()
    for item in (mattr or "").split(","):
        item = item.strip()
        if item[:1] == "+":
            plus.add(item[1:])
        elif item[:1] == "-":
            minus.add(item[1:])
    feats = _closure((base - minus) | plus, implies)
    for f in list(feats):
        if _closure([f], implies) & minus:
            feats.discard(f)
    checked = set(CHECKED.get(arch, ()))
    return sorted(feats & checked), known


@lru_cache(maxsize=64)  # schedules and builds ask per kernel (tuning: thousands per target)
def target_features(mcpu: str, mattr: str, mtriple: str) -> frozenset[str]:
    """The checked features code for (`mcpu`, `mattr`) on `mtriple` (empty: this machine's
    architecture) may use: `required_features`, cached."""
    feats, _ = required_features(mcpu, mattr, triple_arch(mtriple))
    return frozenset(feats)


def missing_features(required: Iterable[str], arch: str,
                     flags: set[str] | None = None) -> list[str] | None:
    """Features of `required` this machine's kernel does not list (None: cannot tell, e.g. no
    /proc/cpuinfo). Only checked features of `arch` are compared."""
    flags = cpuinfo_flags() if flags is None else flags
    if flags is None:
        return None
    names = CPUINFO_NAME.get(normalize_arch(arch), {})
    return [f for f in required if f in names and names[f] not in flags]


def check_host(requires: dict, what: str = "this package") -> None:
    """Raise `PackageError` unless this machine can run code that `requires`
    ({"arch", "os", "features", "target"}) describes."""
    from tensorforge.errors import PackageError

    arch, os_name = requires.get("arch"), requires.get("os")
    here_arch, here_os = host_arch(), host_os()
    target = requires.get("target") or f"llvm -mtriple={arch}-unknown-{os_name}-gnu"
    if arch and normalize_arch(arch) != here_arch or os_name and os_name != here_os:
        raise PackageError(
            f"{what} was built for {arch}-{os_name} ({target}), but this machine is "
            f"{here_arch}-{here_os}; compile the model for this machine (tforge compile MODEL "
            f"--target llvm -o PACKAGE) or run the package on an {arch} {os_name} machine")
    missing = missing_features(requires.get("features", ()), here_arch)
    if missing:
        raise PackageError(
            f"{what} was built for CPU features this machine lacks: {', '.join(missing)} "
            f"(target {target}); running it would crash with an illegal instruction. Compile "
            "the model on this machine with --target llvm (tforge compile MODEL --target llvm "
            "-o PACKAGE), or for a target whose -mcpu/-mattr this CPU supports")
