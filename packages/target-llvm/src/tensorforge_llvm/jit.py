"""LLVM set-up, target machines, the O3 pipeline and MCJIT.

CPU features are always passed explicitly (`mattr`), never implied by the CPU name alone: a
hypervisor may report a CPU model (znver4) whose AVX-512 the OS has disabled, and code built
for the name would die with SIGILL on such a machine.
"""

from __future__ import annotations

import ctypes.util
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import llvmlite.binding as llvm

from tensorforge.errors import TensorforgeError

_lock = threading.Lock()
_ready = False


def ensure_llvm() -> None:
    """Initialize the native target once and load libgomp/libm into the process."""
    global _ready
    if _ready:
        return
    with _lock:
        if _ready:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _bounded_spin()
        for lib in ("gomp", "m"):
            path = ctypes.util.find_library(lib)
            if path is None and lib == "gomp":
                raise TensorforgeError(
                    "the llvm target needs the OpenMP runtime libgomp (parallel loops); "
                    "install it (Debian/Ubuntu: apt-get install libgomp1)"
                )
            if path is not None:
                llvm.load_library_permanently(path)
        _ready = True


#: libgomp's spin count between parallel regions when the user sets no wait policy: enough to
#: cover the gap between the regions of one model run (tens of microseconds), then the
#: workers sleep, instead of spinning for milliseconds (the default, 300000) against other
#: thread pools and jobs on the same cores (docs/performance.md, "Two threads").
DEFAULT_SPINCOUNT = "20000"


def _bounded_spin() -> None:
    """Set GOMP_SPINCOUNT before libgomp loads (it reads its environment once), unless the
    user chose OMP_WAIT_POLICY or GOMP_SPINCOUNT."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = DEFAULT_SPINCOUNT


@dataclass(frozen=True)
class CPUOptions:
    """The resolved code-generation options of an `llvm` target."""

    mtriple: str
    mcpu: str
    mattr: str
    num_threads: int
    opt_level: int

    @property
    def is_host(self) -> bool:
        host = llvm.get_process_triple()
        return self.mtriple.split("-")[0] == host.split("-")[0]


@lru_cache(maxsize=1)
def host_options() -> dict[str, Any]:
    """Options describing this machine (features masked by what the OS enables)."""
    try:
        from tensorforge_llvm.host import detect_host

        return dict(detect_host())
    except ImportError:
        pass
    flags: set[str] | None = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    flags = set(line.partition(":")[2].split())
                    break
    except OSError:
        pass
    feats = dict(llvm.get_host_cpu_features())
    if flags is not None:
        norm = {f.replace("_", "").replace(".", "") for f in flags}
        for name, on in feats.items():
            if on and name.startswith(("avx", "amx", "fma", "f16c")) and \
                    name.replace(".", "").replace("-", "") not in norm:
                feats[name] = False
    mattr = ",".join(("+" if on else "-") + n for n, on in sorted(feats.items()))
    return {"mcpu": llvm.get_host_cpu_name(), "mattr": mattr,
            "mtriple": llvm.get_process_triple(), "num-threads": 0}


def resolve_options(target: Any) -> CPUOptions:
    """Fill the target's missing options from the host (for a host triple)."""
    opts = dict(getattr(target, "options", None) or {})
    triple = opts.get("mtriple") or ""
    mcpu = opts.get("mcpu") or ""
    mattr = opts.get("mattr") or ""
    if not triple or triple == llvm.get_process_triple():
        host = host_options()
        triple = host["mtriple"]
        if not mcpu or mcpu == "generic" and not mattr:
            mcpu = host["mcpu"]
        if not mattr and mcpu == host["mcpu"]:
            mattr = host.get("mattr", "")
    return CPUOptions(triple, mcpu or "generic", mattr, int(opts.get("num-threads") or 0),
                      int(opts.get("opt-level", 3) if opts.get("opt-level") is not None else 3))


def target_machine(opts: CPUOptions, jit: bool = True, pic: bool = False) -> llvm.TargetMachine:
    ensure_llvm()
    try:
        target = llvm.Target.from_triple(opts.mtriple)
    except RuntimeError:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        try:
            target = llvm.Target.from_triple(opts.mtriple)
        except RuntimeError as e:
            raise TensorforgeError(f"LLVM cannot generate code for triple {opts.mtriple!r}: "
                                   f"{e}") from None
    return target.create_target_machine(
        cpu=opts.mcpu, features=opts.mattr, opt=min(max(opts.opt_level, 0), 3),
        reloc="pic" if pic else "default", codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int) -> None:
    """The standard LLVM O<level> pipeline (new pass manager), with the vectorizers on."""
    if opt_level <= 0:
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=min(opt_level, 3))
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def parse(ir_text: str, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    mod = llvm.parse_assembly(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod


def enabled_features(opts: CPUOptions) -> frozenset[str]:
    """The checked CPU features (LLVM names) code built with `opts` may use: `-mcpu`'s and
    `-mattr`'s, as `tensorforge.runtime.cpu_features` resolves them for packages (cached
    there: every build asks)."""
    from tensorforge.runtime.cpu_features import target_features

    return target_features(opts.mcpu, opts.mattr, opts.mtriple)
