"""TargetKind: what a target plugin registers, and the option schema of its target strings."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tensorforge.errors import PluginError, TargetError
from tensorforge.plugins.descriptors import check_name, check_ref, load_ref

__all__ = ["TargetKind", "TargetOption"]

_TYPES = (str, int, float, bool)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class TargetOption:
    """One ``-name=value`` option of a target string: its type, default and help text, and
    what values it takes: `choices` (an enum; empty: any value of the type) and, for numbers,
    the inclusive range `min`..`max` (None: unbounded). A value outside them is a
    `TargetError` listing what is valid, before any code generator sees it."""

    type: type = str
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] = ()
    min: int | float | None = None
    max: int | float | None = None

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise ValueError(f"target option type must be str, int, float or bool: {self.type}")
        if self.default is not None and not isinstance(self.default, self.type):
            raise ValueError(f"default {self.default!r} is not a {self.type.__name__}")
        object.__setattr__(self, "choices", tuple(self.choices))
        if any(not isinstance(c, self.type) for c in self.choices):
            raise ValueError(f"choices {self.choices!r} are not all {self.type.__name__}")
        if (self.min is not None or self.max is not None) and self.type not in (int, float):
            raise ValueError("min/max apply to int and float options only")
        if self.default is not None and (self.choices or self.min is not None
                                         or self.max is not None):
            self.check(self.default, "default")

    def convert(self, value: Any, name: str) -> Any:
        """Turn ``value`` (a string from a target string, or a Python value) into the type and
        check it against the choices and the range."""
        return self.check(self._typed(value, name), name)

    def _typed(self, value: Any, name: str) -> Any:
        if isinstance(value, self.type) and not (self.type is int and isinstance(value, bool)):
            return value
        if self.type is int and isinstance(value, float) and value.is_integer():
            return int(value)
        text = str(value).strip()
        try:
            if self.type is bool:
                if text.lower() in _TRUE:
                    return True
                if text.lower() in _FALSE:
                    return False
                raise ValueError(text)
            return self.type(text)
        except ValueError:
            raise TargetError(
                f"option -{name} expects {_article(self.type.__name__)}{self._domain()}, got "
                f"{value!r}" + (" (true/false, on/off, yes/no or 1/0)"
                                if self.type is bool else "")) from None

    def check(self, value: Any, name: str) -> Any:
        """`value` (already of the type) if the choices and range allow it, else TargetError."""
        if self.type is float and not math.isfinite(value):
            raise TargetError(f"option -{name} expects a finite number, got {value!r}")
        if self.choices and value not in self.choices:
            from .suggest import valid_values

            raise TargetError(f"option -{name} does not take {self.format(value)!r}. "
                              + valid_values(self.format(value),
                                             [self.format(c) for c in self.choices]))
        if ((self.min is not None and value < self.min)
                or (self.max is not None and value > self.max)):
            raise TargetError(f"option -{name}={self.format(value)} is out of range: it takes "
                              f"{self._domain().strip(' ()')}")
        return value

    def _domain(self) -> str:
        if self.choices:
            return " (one of " + ", ".join(self.format(c) for c in self.choices) + ")"
        if self.min is not None and self.max is not None:
            return f" ({self.min}..{self.max})"
        if self.min is not None:
            return f" (>= {self.min})"
        if self.max is not None:
            return f" (<= {self.max})"
        return ""

    def describe(self) -> str:
        """``int 1..1024``, ``str auto|off|2|4``, ``bool``: the type and the valid values."""
        if self.choices:
            return "|".join(self.format(c) for c in self.choices)
        return self.type.__name__ + self._domain().replace(" (", " ").rstrip(")")

    def format(self, value: Any) -> str:
        if self.type is bool:
            return "true" if value else "false"
        return str(value)


@dataclass(frozen=True)
class TargetKind:
    """A kind of target (``llvm``, ``cuda`` ...), registered by a plugin.

    :param name: the first word of a target string.
    :param device_type: ``"cpu"``, ``"cuda"``, ``"opencl"``, ``"metal"``, ``"vdla"`` ...
    :param options: option schema, ``{"mcpu": TargetOption(str, None, "CPU name"), ...}``.
    :param build: ``"module:function"``, ``build(funcs: list[PrimFunc], target) -> module``.
    :param detect_host: ``"module:function"`` or None; ``detect_host(explicit=None) -> dict``
        returns option values for the machine we run on (``explicit`` are the options the
        target string gave, so the plugin can decide what still applies).
    :param keys: generic names strategies may match on (``("cpu",)``, ``("gpu", "cuda")``).
    :param validate: ``"module:function"`` or None; ``validate(explicit) -> None`` checks the
        explicit options together (a CPU name valid for the given triple, say) and raises
        `TargetError` naming what is wrong and what is valid. It runs when a `Target` is made,
        so nothing invalid reaches a code generator (which may abort the process on it).
    :param distribution: filled in by the loader.
    :param requires: runtime modules the code generator needs, ``"module"`` or
        ``"module=pip requirement"`` (``("pyopencl",)``); checked with ``find_spec`` for the
        status ``tforge targets`` shows, never imported at discovery.
    """

    name: str
    device_type: str
    options: Mapping[str, TargetOption] = field(default_factory=dict)
    build: str = ""
    detect_host: str | None = None
    keys: tuple[str, ...] = ()
    description: str = ""
    validate: str | None = None
    distribution: str = ""
    plugin: str = ""
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_name(self.name, "target kind")
        if not self.device_type:
            raise ValueError(f"target kind {self.name!r} needs a device_type")
        if self.build:
            check_ref(self.build, f"target kind {self.name!r} build")
        if self.detect_host is not None:
            check_ref(self.detect_host, f"target kind {self.name!r} detect_host")
        if self.validate is not None:
            check_ref(self.validate, f"target kind {self.name!r} validate")
        for opt_name, opt in self.options.items():
            check_name(opt_name, "target option")
            if not isinstance(opt, TargetOption):
                raise ValueError(
                    f"target kind {self.name!r}: option {opt_name!r} is not a TargetOption")
        # Freeze the schema so a registered kind cannot change under other users.
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        if not self.keys:
            object.__setattr__(self, "keys", (self.device_type,))
        if isinstance(self.requires, str) or not all(
                isinstance(r, str) and r.strip() for r in self.requires):
            raise ValueError(f"target kind {self.name!r}: requires must be a tuple of module "
                             f"names like ('pyopencl',), got {self.requires!r}")
        object.__setattr__(self, "requires", tuple(self.requires))

    def __hash__(self) -> int:
        return hash((self.name, self.device_type, self.distribution))

    def load_build(self) -> Callable[..., Any]:
        """Import and return the ``build`` function; a one-line :class:`TargetError` says
        what is missing when the code generator is not built or not installed."""
        from tensorforge.plugins.status import check_buildable

        check_buildable(self)
        try:
            return load_ref(self.build)
        except PluginError as exc:
            missing = getattr(exc.__cause__, "name", None)
            if isinstance(exc.__cause__, ModuleNotFoundError) and missing:
                raise TargetError(f"cannot compile for target {self.name!r}: its code generator "
                                  f"needs {missing!r}, which is not installed: pip install "
                                  f"{missing.split('.')[0]}") from exc
            raise

    def load_detect_host(self) -> Callable[..., Mapping[str, Any]] | None:
        """Import and return the ``detect_host`` function, or None."""
        return load_ref(self.detect_host) if self.detect_host else None

    def load_validate(self) -> Callable[[Mapping[str, Any]], None] | None:
        """Import and return the ``validate`` function, or None."""
        return load_ref(self.validate) if self.validate else None

    def defaults(self) -> dict[str, Any]:
        return {k: o.default for k, o in self.options.items()}


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word
