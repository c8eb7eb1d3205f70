"""`lower` and `build`: from a schedule to loop IR, and from loop IR to a callable kernel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .schedule import Schedule
from .tir.stmt import PrimFunc


def lower(
    sch: Schedule | PrimFunc,
    args: Sequence[Any] = (),
    name: str = "main",
    target: Any = None,
    simple_mode: bool = False,
) -> PrimFunc:
    """Lower a schedule to optimized loop IR (print it to read the loops).

    `simple_mode=True` stops after loop-nest generation (multi-dimensional buffers)."""
    from .tir.lowering import schedule_to_primfunc
    from .tir.transform.pipeline import default_passes, run_passes

    func = sch if isinstance(sch, PrimFunc) else schedule_to_primfunc(sch, args, name)
    if simple_mode:
        return func
    if target is not None:
        from .target import Target

        target = Target.coerce(target)
    device = _device(target)
    if func.attrs.get("lowered") == device:
        return func
    if target is not None:
        func.attrs["target"] = target  # passes that depend on the target's options read it
    func = run_passes(func, default_passes(target))
    func.attrs["lowered"] = device  # `build([lower(...)])` does not run the pipeline again
    return func


def _device(target: Any) -> str:
    """The device class a function is lowered for (the pipeline depends only on it)."""
    return getattr(getattr(target, "kind", None), "device_type", None) or "cpu"


def build(
    sch: Schedule | PrimFunc | Sequence[PrimFunc],
    args: Sequence[Any] = (),
    target: Any = "llvm",
    name: str = "main",
) -> Any:
    """Compile to a runtime module for `target`; call it with numpy arrays (outputs last)."""
    from .target import Target

    tgt = Target.coerce(target)
    if isinstance(sch, (list, tuple)):
        funcs = [f if f.attrs.get("lowered") in (True, _device(tgt)) else lower(f, target=tgt)
                 for f in sch]
    else:
        funcs = [lower(sch, args, name, target=tgt)]
    for f in funcs:
        f.attrs["lowered"] = _device(tgt)
        _check_loops_fit(f, tgt)
    builder = tgt.kind.load_build()
    return builder(funcs, tgt)


def _check_loops_fit(func: PrimFunc, target: Any) -> None:
    """GPU thread bindings cannot run on a CPU target: say so before code generation."""
    from .expr import post_order_collect
    from .tir.stmt import For

    if target.kind.device_type != "cpu":
        return
    bound = [f for f in post_order_collect(func.body, lambda n: isinstance(n, For))
             if f.kind == "thread_binding"]
    if bound:
        from .errors import TensorforgeError

        names = ", ".join(f"{f.loop_var.name} -> {f.thread_tag}" for f in bound)
        raise TensorforgeError(
            f"{func.name}: axes bound to GPU threads ({names}) cannot run on target "
            f"{target.kind.name!r}, which has no thread hierarchy; on a CPU use "
            "s[T].parallel(axis) instead of bind, or build for a GPU target"
        )
