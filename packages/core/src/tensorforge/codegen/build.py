"""`build_gpu`: lowered functions -> kernels -> source in a dialect -> a `DeviceModule`.

Every C-like GPU target's `build` is this call with its dialect and runtime:

    def build(funcs, target):
        return build_gpu(funcs, target, OPENCL, "tensorforge_opencl.runtime:OpenCLDevice")

Steps: split each function into a host launch plan and kernels (`split_host_device`),
legalize the kernels for the dialect (`legalize.py`), print them all into one source
(`CPrinter`), and describe the module (launch plans, kernel parameters, assertion messages)
so the runtime, or `tensorforge.load` later, can run it without the compiler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import TensorforgeError
from ..expr import Buffer, IntImm, Var
from ..expr import dtype as dt
from ..runtime.cfunction import Param, params_to_json
from ..runtime.device import DeviceModule, device_library_desc
from ..tir.stmt import PrimFunc
from ..tir.transform.split_host_device import HostProgram, rename_launches, split_host_device
from .c_printer import CPrinter, kernel_name
from .dialect import Dialect
from .features import check_messages, written_data
from .legalize import legalize


def _params(func: PrimFunc) -> list[Param]:
    written = written_data(func.body)
    shapes = func.attrs.get("buffer_shapes") or [None] * len(func.params)
    out = []
    for p, shape in zip(func.params, shapes):
        if isinstance(p, Buffer):
            if shape is None:
                shape = tuple(d.value if isinstance(d, IntImm) else None for d in p.shape)
            out.append(Param(p.name, "buffer", dt.element(p.dtype), tuple(shape),
                             p.data in written))
        else:
            out.append(Param(p.name, "scalar", p.dtype))
    return out


def _plan(prog: HostProgram, func: PrimFunc) -> dict[str, Any]:
    """The launch plan of one function: its parameters, its kernels (parameters, the messages
    of their checks) and `asserts`, every kernel's messages in status order."""
    plan = prog.to_json()
    plan["params"] = params_to_json(_params(func))
    plan["asserts"] = []
    for meta, k in zip(plan["kernels"], prog.kernels):
        meta["params"] = [{"kind": "buffer" if isinstance(p, Buffer) else "scalar",
                           "dtype": dt.element(p.dtype)} for p in k.params]
        meta["asserts"] = list(k.checks)  # type: ignore[attr-defined]
        plan["asserts"] += meta["asserts"]
    return plan


def build_gpu(funcs: Sequence[PrimFunc] | PrimFunc, target: Any, dialect: Dialect,
              runtime: str, device_options: Mapping[str, Any] | None = None,
              printer: Callable[[Dialect], CPrinter] = CPrinter) -> DeviceModule:
    """Kernels of `funcs` printed in `dialect`, loaded (lazily) by `runtime`
    ("module:DeviceClass")."""
    if isinstance(funcs, PrimFunc):
        funcs = [funcs]
    names = [f.name for f in funcs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TensorforgeError(f"two kernels are named {dup[0]!r}; names must be unique")
    for f in funcs:
        for p in f.params:
            if isinstance(p, Var) and not isinstance(p, Buffer) and dt.lanes(p.dtype) != 1:
                raise TensorforgeError(f"{f.name}: scalar parameter {p.name} has vector dtype")
    programs = [split_host_device(f) for f in funcs]
    kernels = [k for p in programs for k in p.kernels]
    used: set[str] = set()
    for prog in programs:  # kernel names must be identifiers the language allows
        for k in prog.kernels:
            new = kernel_name(k.name, used)
            if new != k.name:
                rename_launches(prog.steps, k.name, new)
                k.name = new
    for prog in programs:  # statuses of a function's checks: one numbering over its kernels
        base = 0
        for k in prog.kernels:
            k.body = legalize(k.body, dialect)
            k.checks = check_messages(k.body)  # type: ignore[attr-defined]
            k.check_base = base  # type: ignore[attr-defined]
            base += len(k.checks)  # type: ignore[attr-defined]
    source = printer(dialect).print_module(kernels)
    plans = [_plan(p, f) for p, f in zip(programs, funcs)]
    desc = device_library_desc(target, runtime, plans, device_options, dialect.name)
    return DeviceModule(desc, source)
