"""The plugin system: hook specs, descriptors, the isolating loader and the registry.

Plugin authors need ``hookimpl`` and the descriptor classes from here and ``TargetKind`` /
``TargetOption`` from :mod:`tensorforge.target`. Core code asks :func:`get_registry`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tensorforge.plugins.descriptors import (
    PASS_STAGES,
    CostModel,
    Frontend,
    Intrinsic,
    Pass,
    Strategy,
    TargetTag,
    Tuner,
    load_ref,
)
from tensorforge.plugins.hookspecs import hookimpl, hookspec

if TYPE_CHECKING:
    from tensorforge.plugins.registry import Registry

# The loader and registry import tensorforge.target, which imports the descriptors above:
# load them on first use to keep the import graph acyclic.
_LAZY = {
    "ENV_DISABLE": "loader", "ENV_SELECT": "loader", "GROUP": "loader",
    "load_entry_points": "loader", "PluginInfo": "registry", "PluginLoadWarning": "registry",
    "Registry": "registry",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"tensorforge.plugins.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'tensorforge.plugins' has no attribute {name!r}")

__all__ = [
    "ENV_DISABLE",
    "ENV_SELECT",
    "GROUP",
    "PASS_STAGES",
    "CostModel",
    "Frontend",
    "Intrinsic",
    "Pass",
    "PluginInfo",
    "PluginLoadWarning",
    "Registry",
    "Strategy",
    "TargetTag",
    "Tuner",
    "get_registry",
    "hookimpl",
    "hookspec",
    "load_entry_points",
    "load_ref",
    "set_autoload",
    "use_registry",
]

_current: Registry | None = None
_autoload = True


def get_registry() -> Registry:
    """The current registry; the first call loads the installed plugins (see the loader's
    environment switches) unless autoloading is off, as it is under pytest."""
    global _current
    if _current is None:
        from tensorforge.plugins.loader import load_entry_points
        from tensorforge.plugins.registry import Registry

        registry = Registry()
        if _autoload:
            load_entry_points(registry)
        _current = registry
    return _current


def set_autoload(enabled: bool) -> None:
    """Turn loading of entry points on first use on or off, and forget the current registry."""
    global _autoload, _current
    _autoload, _current = enabled, None


@contextlib.contextmanager
def use_registry(registry: Registry | None = None) -> Iterator[Registry]:
    """Make ``registry`` (default: a new empty one) current inside the ``with`` block."""
    global _current
    if registry is None:
        from tensorforge.plugins.registry import Registry

        registry = Registry()
    saved, _current = _current, registry
    try:
        yield _current
    finally:
        _current = saved
