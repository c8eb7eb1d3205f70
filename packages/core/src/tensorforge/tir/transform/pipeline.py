"""The loop-IR pass pipeline: named passes in order, with switches to print the IR before or
after any pass (`PassContext(print_ir_after={"vectorize"})`, or the environment variables
`TENSORFORGE_PRINT_IR_AFTER` / `TENSORFORGE_PRINT_IR_BEFORE` = comma list or "all") and to
disable passes (`disabled={"loop_partition"}`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ...pass_infra import PassSwitches, run_named_passes
from ..stmt import PrimFunc

Pass = Callable[[PrimFunc], PrimFunc]


class PassContext(PassSwitches):
    """Print or disable loop-IR passes by name while the context is active."""

    ENV = ("TENSORFORGE_PRINT_IR_BEFORE", "TENSORFORGE_PRINT_IR_AFTER",
           "TENSORFORGE_DISABLE_PASSES")
    LABEL = "IR"

    def __init__(self, print_ir_before: Iterable[str] = (), print_ir_after: Iterable[str] = (),
                 disabled: Iterable[str] = (), stream: TextIO | None = None):
        super().__init__(print_ir_before, print_ir_after, disabled, stream)


def run_passes(func: PrimFunc, passes: Iterable[tuple[str, Pass]]) -> PrimFunc:
    return run_named_passes(func, passes, PassContext.current())


def is_gpu(target: Any) -> bool:
    """GPU passes run for targets whose kind lists the key "gpu" (a vendor's GPU plugin
    gets them by listing it too)."""
    return "gpu" in (getattr(getattr(target, "kind", None), "keys", ()) or ())


def plugin_passes(target: Any, stage: str) -> list[tuple[str, Pass]]:
    """The passes plugins registered for `target` at a `tir.*` stage, highest priority first
    (none without a target)."""
    if target is None:
        return []
    from ...plugins import get_registry

    return [(p.name, p.load_func()) for p in get_registry().passes(target, stage)]


def default_passes(target: Any = None) -> list[tuple[str, Pass]]:
    """The lowering pipeline, in order. GPU targets add thread-binding lowering, cross-thread
    reduction, barriers and the verifier; plugins add passes at the `tir.*` stages."""
    from functools import partial

    from .inject_double_buffer import inject_double_buffer
    from .inject_virtual_thread import inject_virtual_thread
    from .loop_partition import loop_partition
    from .lower_allreduce import lower_thread_allreduce
    from .lower_thread_binding import lower_thread_bindings
    from .remove_noop import remove_noop
    from .simplify import simplify
    from .storage_flatten import storage_flatten
    from .storage_rewrite import storage_rewrite
    from .thread_sync import thread_sync
    from .unroll import unroll
    from .vectorize import vectorize
    from .verify_gpu import verify_gpu

    gpu = is_gpu(target)
    opts = getattr(target, "options", None) or {}
    warp = int(opts.get("thread-warp-size", 1) or 1)

    def only_gpu(*named: tuple[str, Pass]) -> list[tuple[str, Pass]]:
        return list(named) if gpu else []

    return [
        *plugin_passes(target, "tir.after_lower"),
        ("storage_flatten", storage_flatten),
        *plugin_passes(target, "tir.after_flatten"),
        ("inject_virtual_thread", inject_virtual_thread),
        ("inject_double_buffer", inject_double_buffer),
        *only_gpu(("lower_thread_bindings", lower_thread_bindings),
                  ("lower_thread_allreduce", partial(lower_thread_allreduce, warp_size=warp))),
        ("simplify", simplify),
        ("loop_partition", loop_partition),
        ("simplify_after_partition", simplify),
        ("vectorize", vectorize),
        ("unroll", unroll),
        ("simplify_after_unroll", simplify),
        ("storage_rewrite", storage_rewrite),
        *only_gpu(("thread_sync", thread_sync)),
        ("remove_noop", remove_noop),
        *only_gpu(("verify_gpu", partial(verify_gpu, target=target))),
        *plugin_passes(target, "tir.before_codegen"),
    ]


PASS_NAMES = tuple(name for name, _ in default_passes()) + (
    "lower_thread_bindings", "lower_thread_allreduce", "thread_sync", "verify_gpu")
PassContext.NAMES = PASS_NAMES
