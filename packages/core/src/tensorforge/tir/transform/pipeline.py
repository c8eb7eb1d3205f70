"""The loop-IR pass pipeline: named passes in order, with switches to print the IR before or
after any pass (`PassContext(print_ir_after={"vectorize"})`, or the environment variables
`TENSORFORGE_PRINT_IR_AFTER` / `TENSORFORGE_PRINT_IR_BEFORE` = comma list or "all") and to
disable passes (`disabled={"loop_partition"}`)."""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..stmt import PrimFunc

Pass = Callable[[PrimFunc], PrimFunc]


@dataclass
class PassContext:
    print_ir_before: set[str] = field(default_factory=set)
    print_ir_after: set[str] = field(default_factory=set)
    disabled: set[str] = field(default_factory=set)
    stream: TextIO | None = None

    def __enter__(self) -> PassContext:
        self._token = _CTX.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CTX.reset(self._token)

    @staticmethod
    def current() -> PassContext:
        ctx = _CTX.get()
        if ctx is not None:
            return ctx
        return PassContext(
            _env_set("TENSORFORGE_PRINT_IR_BEFORE"),
            _env_set("TENSORFORGE_PRINT_IR_AFTER"),
            _env_set("TENSORFORGE_DISABLE_PASSES"),
        )


def _env_set(name: str) -> set[str]:
    v = os.environ.get(name, "")
    return {x.strip() for x in v.split(",") if x.strip()}


_CTX: contextvars.ContextVar[PassContext | None] = contextvars.ContextVar(
    "tensorforge_pass_context", default=None
)


def _wants(names: set[str], name: str) -> bool:
    return "all" in names or name in names


def run_passes(func: PrimFunc, passes: Iterable[tuple[str, Pass]]) -> PrimFunc:
    ctx = PassContext.current()
    out = ctx.stream or sys.stdout
    for name, fn in passes:
        if name in ctx.disabled:
            continue
        if _wants(ctx.print_ir_before, name):
            print(f"# IR before {name}\n{func}\n", file=out)
        func = fn(func)
        if _wants(ctx.print_ir_after, name):
            print(f"# IR after {name}\n{func}\n", file=out)
    return func


def default_passes(target: Any = None) -> list[tuple[str, Pass]]:
    """The lowering pipeline, in order; thread_sync only for targets with shared memory."""
    from .inject_double_buffer import inject_double_buffer
    from .inject_virtual_thread import inject_virtual_thread
    from .loop_partition import loop_partition
    from .remove_noop import remove_noop
    from .simplify import simplify
    from .storage_flatten import storage_flatten
    from .storage_rewrite import storage_rewrite
    from .thread_sync import thread_sync
    from .unroll import unroll
    from .vectorize import vectorize

    passes: list[tuple[str, Pass]] = [
        ("storage_flatten", storage_flatten),
        ("inject_virtual_thread", inject_virtual_thread),
        ("inject_double_buffer", inject_double_buffer),
        ("simplify", simplify),
        ("loop_partition", loop_partition),
        ("simplify_after_partition", simplify),
        ("vectorize", vectorize),
        ("unroll", unroll),
        ("simplify_after_unroll", simplify),
        ("storage_rewrite", storage_rewrite),
    ]
    device = getattr(getattr(target, "kind", None), "device_type", "cpu")
    if device in ("cuda", "opencl", "metal", "gpu"):
        passes.append(("thread_sync", thread_sync))
    passes.append(("remove_noop", remove_noop))
    return passes


PASS_NAMES = tuple(name for name, _ in default_passes()) + ("thread_sync",)
