"""What the graph and loop-IR pipelines share: named passes run in order, with switches to
print the program before or after any pass (a set of names, or "all") and to disable passes.

Switches come from a context (`with PassContext(print_ir_after={"vectorize"}): ...`) or, when
no context is active, from environment variables named by each pipeline."""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TextIO, TypeVar

from .errors import TensorforgeError

T = TypeVar("T")


def env_set(name: str) -> set[str]:
    """A comma-separated environment variable as a set of names."""
    return {x.strip() for x in os.environ.get(name, "").split(",") if x.strip()}


class PassSwitches:
    """Base of the pipelines' contexts. Subclasses set `ENV` (the before/after/disabled
    variable names) and `LABEL` (the word printed in headers)."""

    ENV: ClassVar[tuple[str, str, str]]
    LABEL: ClassVar[str]
    #: every pass name of the pipeline (also those a target leaves out); set by the pipeline
    NAMES: ClassVar[tuple[str, ...]] = ()
    _ctx: ClassVar[contextvars.ContextVar[Any]]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._ctx = contextvars.ContextVar(f"tensorforge_{cls.__name__}", default=None)

    def __init__(self, before: Iterable[str] = (), after: Iterable[str] = (),
                 disabled: Iterable[str] = (), stream: TextIO | None = None):
        self.before, self.after, self.disabled = set(before), set(after), set(disabled)
        self.stream = stream

    def __enter__(self) -> Any:
        self._token = self._ctx.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctx.reset(self._token)

    @classmethod
    def current(cls) -> Any:
        ctx = cls._ctx.get()
        if ctx is not None:
            return ctx
        before, after, disabled = (env_set(name) for name in cls.ENV)
        out = cls.__new__(cls)
        PassSwitches.__init__(out, before, after, disabled)
        out._from_env = True
        return out

    def check_names(self, running: Iterable[str] = ()) -> None:
        """Raise a :class:`TensorforgeError` naming an unknown pass and the valid ones: a typo
        in ``TENSORFORGE_PRINT_IR_AFTER`` must not silently print nothing."""
        valid = set(self.NAMES) | set(running)
        fields = zip(self.ENV, ("print before", "print after", "disabled"),
                     (self.before, self.after, self.disabled))
        for env, what, names in fields:
            unknown = sorted(names - valid - {"all"})
            if unknown:
                where = env if getattr(self, "_from_env", False) else f"{what} of the context"
                raise TensorforgeError(
                    f"{where}: unknown {self.LABEL} pass {', '.join(map(repr, unknown))}; "
                    f"valid: all, {', '.join(n for n in self.NAMES if n in valid)}"
                    + "".join(f", {n}" for n in sorted(set(running) - set(self.NAMES))))


def run_named_passes(obj: T, passes: Iterable[tuple[str, Callable[[T], T]]],
                     switches: PassSwitches) -> T:
    passes = list(passes)
    switches.check_names(name for name, _ in passes)
    out = switches.stream or sys.stdout
    label = switches.LABEL

    def wants(names: set[str], name: str) -> bool:
        return "all" in names or name in names

    for name, fn in passes:
        if name in switches.disabled:
            continue
        if wants(switches.before, name):
            print(f"# {label} before {name}\n{obj}\n", file=out)
        obj = fn(obj)
        if wants(switches.after, name):
            print(f"# {label} after {name}\n{obj}\n", file=out)
    return obj
