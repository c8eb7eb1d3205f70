"""TargetKind: what a target plugin registers, and the option schema of its target strings."""

from __future__ import annotations

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
    """One ``-name=value`` option of a target string: its type, default and help text."""

    type: type = str
    default: Any = None
    help: str = ""

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise ValueError(f"target option type must be str, int, float or bool: {self.type}")
        if self.default is not None and not isinstance(self.default, self.type):
            raise ValueError(f"default {self.default!r} is not a {self.type.__name__}")

    def convert(self, value: Any, name: str) -> Any:
        """Turn ``value`` (a string from a target string, or a Python value) into the type."""
        if isinstance(value, self.type) and not (self.type is int and isinstance(value, bool)):
            return value
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
                f"option -{name} expects {_article(self.type.__name__)}, got {value!r}"
            ) from None

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

    def defaults(self) -> dict[str, Any]:
        return {k: o.default for k, o in self.options.items()}


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word
