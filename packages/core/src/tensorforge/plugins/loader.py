"""Discovering plugins through the ``tensorforge`` entry-point group, one failure at a time.

pluggy's own ``load_setuptools_entrypoints`` stops at the first plugin that raises; this loader
imports and registers each entry point on its own, records a failure with the distribution
name and the error, warns, and carries on with the rest.

Environment switches (read when entry points load):

* ``TENSORFORGE_PLUGINS``: unset loads all; ``""`` or ``none`` loads none; ``a,b`` loads only
  the plugins whose entry-point name or distribution name is listed.
* ``TENSORFORGE_DISABLE_PLUGINS``: ``a,b`` skips those (entry-point or distribution names).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points

from tensorforge.errors import PluginError
from tensorforge.plugins.hookspecs import PROJECT
from tensorforge.plugins.known import FIRST_PARTY
from tensorforge.plugins.registry import PluginInfo, PluginLoadWarning, Registry

__all__ = ["ENV_DISABLE", "ENV_SELECT", "GROUP", "iter_entry_points", "load_entry_points",
           "plugin_selection"]

GROUP = PROJECT
ENV_SELECT = "TENSORFORGE_PLUGINS"
ENV_DISABLE = "TENSORFORGE_DISABLE_PLUGINS"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _names(value: str) -> set[str]:
    return {_norm(n.strip()) for n in value.split(",") if n.strip()}


def plugin_selection(env: Mapping[str, str] | None = None) -> tuple[set[str] | None, set[str]]:
    """``(selected, disabled)`` from the environment; ``selected`` None means all."""
    env = os.environ if env is None else env
    selected: set[str] | None = None
    if ENV_SELECT in env:
        raw = env[ENV_SELECT].strip()
        selected = set() if raw.lower() in ("", "none") else _names(raw)
    return selected, _names(env.get(ENV_DISABLE, ""))


def iter_entry_points() -> list[EntryPoint]:
    """Entry points of the group, first-party distributions first, then by name."""
    eps = list(entry_points(group=GROUP))

    def order(ep: EntryPoint) -> tuple[bool, str, str]:
        dist = ep.dist.name if ep.dist else ""
        return (_norm(dist) not in FIRST_PARTY, _norm(dist), ep.name)

    return sorted(eps, key=order)


def load_entry_points(
    registry: Registry, env: Mapping[str, str] | None = None, *, warn: bool = True
) -> list[PluginInfo]:
    """Import and register every selected entry point; return what happened to each."""
    selected, disabled = plugin_selection(env)
    results = []
    for ep in iter_entry_points():
        dist = ep.dist.name if ep.dist else None
        version = ep.dist.version if ep.dist else None
        names = {_norm(ep.name)} | ({_norm(dist)} if dist else set())
        info = PluginInfo(ep.name, dist, version, ep.value, source="entry point")
        if selected is not None and not names & selected:
            info.status, info.error = "disabled", f"not listed in {ENV_SELECT}"
        elif names & disabled:
            info.status, info.error = "disabled", f"listed in {ENV_DISABLE}"
        else:
            info = _load_one(registry, ep, info)
        if info.status != "loaded":
            registry.record(info)
        if info.status == "failed" and warn:
            warnings.warn(f"plugin {ep.name!r} from {info.owner} failed to load: {info.error}",
                          PluginLoadWarning, stacklevel=2)
        results.append(info)
    registry.entry_points_loaded = True
    return results


def _load_one(registry: Registry, ep: EntryPoint, info: PluginInfo) -> PluginInfo:
    try:
        module = ep.load()
    except ModuleNotFoundError as exc:
        info.status = "failed"
        info.error = f"cannot import {ep.value!r}: ModuleNotFoundError: {exc}"
        if exc.name:
            info.error += f" (a missing dependency? try: pip install {exc.name.split('.')[0]})"
        return info
    except (Exception, SystemExit) as exc:
        info.status = "failed"
        info.error = f"cannot import {ep.value!r}: {type(exc).__name__}: {exc}"
        return info
    try:
        return registry.register(
            module, ep.name, distribution=info.distribution, version=info.version,
            source="entry point",
        )
    except PluginError as exc:
        info.status, info.error = "failed", str(exc)
        return info
