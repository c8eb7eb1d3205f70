"""The registry: every descriptor the loaded plugins registered, keyed by name.

One :class:`Registry` holds a pluggy ``PluginManager`` (for hook validation) and the tables.
Core calls each plugin's hook implementations one plugin at a time, so it knows which
distribution registered what, rolls back a plugin that fails half-way, and keeps the others.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType, ModuleType
from typing import Any

import pluggy

from tensorforge.errors import DuplicateNameError, PluginError
from tensorforge.plugins import hookspecs
from tensorforge.plugins.descriptors import (
    CostModel,
    Frontend,
    Intrinsic,
    Pass,
    Strategy,
    TargetTag,
    Tuner,
)
from tensorforge.target.kind import TargetKind

__all__ = ["PluginInfo", "PluginLoadWarning", "Registry"]


class PluginLoadWarning(UserWarning):
    """A plugin failed to load or to register; the others were loaded."""


# hook name -> (table name, descriptor type, key of a descriptor)
_HOOKS: dict[str, tuple[str, type, Callable[[Any], str]]] = {
    "register_targets": ("targets", TargetKind, lambda d: d.name),
    "register_target_tags": ("target_tags", TargetTag, lambda d: d.name),
    "register_frontends": ("frontends", Frontend, lambda d: d.name),
    "register_cost_models": ("cost_models", CostModel, lambda d: d.name),
    "register_tuners": ("tuners", Tuner, lambda d: d.name),
    "register_strategies": ("strategies", Strategy, lambda d: d.key),
    "register_intrinsics": ("intrinsics", Intrinsic, lambda d: d.name),
    "register_passes": ("passes", Pass, lambda d: d.name),
}
assert set(_HOOKS) == set(hookspecs.GLOBAL_HOOKS) | set(hookspecs.TARGET_HOOKS)


@dataclass
class PluginInfo:
    """What ``tforge plugins`` shows about one plugin."""

    name: str
    distribution: str | None = None
    version: str | None = None
    module: str = ""
    status: str = "loaded"  # "loaded", "failed" or "disabled"
    error: str | None = None
    source: str = "direct"  # "entry point" or "direct"
    hooks: list[str] = field(default_factory=list)
    registered: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def owner(self) -> str:
        """How errors name this plugin: its distribution, else its plugin name."""
        return self.distribution or f"plugin {self.name!r}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "status": self.status,
            "error": self.error,
            "source": self.source,
            "hooks": list(self.hooks),
            "registered": {k: list(v) for k, v in self.registered.items()},
            "warnings": list(self.warnings),
        }


def _owner_of(desc: Any) -> str:
    return desc.distribution or f"plugin {desc.plugin!r}"


class Registry:
    """Registered plugins and their descriptors. Get the current one with ``get_registry()``."""

    def __init__(self) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._tables: dict[str, dict[str, Any]] = {t: {} for t, _, _ in _HOOKS.values()}
        self._infos: dict[str, PluginInfo] = {}
        self._cache: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.entry_points_loaded = False

    # -- tables --------------------------------------------------------------------------
    @property
    def targets(self) -> Mapping[str, TargetKind]:
        """Target kinds by name (``"llvm"``)."""
        return MappingProxyType(self._tables["targets"])

    @property
    def target_tags(self) -> Mapping[str, TargetTag]:
        """Target tags by name (``"amd/zen3"``)."""
        return MappingProxyType(self._tables["target_tags"])

    @property
    def frontends(self) -> Mapping[str, Frontend]:
        return MappingProxyType(self._tables["frontends"])

    @property
    def cost_models(self) -> Mapping[str, CostModel]:
        return MappingProxyType(self._tables["cost_models"])

    @property
    def tuners(self) -> Mapping[str, Tuner]:
        return MappingProxyType(self._tables["tuners"])

    @property
    def plugins(self) -> list[PluginInfo]:
        """Every plugin seen: loaded, failed and disabled, in load order."""
        return list(self._infos.values())

    def frontend_for(self, model: Any) -> Frontend | None:
        """The frontend that reads ``model``, or None: for a path, the one whose suffixes
        match a file's name or whose directory markers a directory holds; for any other
        object, the one whose ``object_modules`` its class (or a base class) comes from."""
        frontends = self._tables["frontends"].values()
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            if os.path.isdir(path):
                return next((fe for fe in frontends if fe.reads_directory(path)), None)
            return next((fe for fe in frontends
                         if any(path.lower().endswith(s) for s in fe.suffixes)), None)
        return next((fe for fe in frontends if fe.reads_object(model)), None)

    def strategies(self, target: Any) -> dict[str, list[Strategy]]:
        """Strategies for ``target`` grouped by op, highest priority first."""
        by_op: dict[str, list[Strategy]] = {}
        for s in self._collect("register_strategies", target).values():
            by_op.setdefault(s.op, []).append(s)
        for lst in by_op.values():
            lst.sort(key=lambda s: -s.priority)
        return by_op

    def intrinsics(self, target: Any) -> dict[str, Intrinsic]:
        """Tensorization intrinsics for ``target`` by name."""
        return dict(self._collect("register_intrinsics", target))

    def passes(self, target: Any, stage: str) -> list[Pass]:
        """Extra passes for ``target`` at ``stage``, highest priority first."""
        found = self._collect("register_passes", target, stage=stage).values()
        return sorted((p for p in found if p.stage == stage), key=lambda p: -p.priority)

    # -- registering -----------------------------------------------------------------------
    def register(
        self,
        plugin: Any,
        name: str | None = None,
        *,
        distribution: str | None = None,
        version: str | None = None,
        source: str = "direct",
    ) -> PluginInfo:
        """Register a plugin (a module, a module name, or an object with ``@hookimpl`` methods).

        Runs its load-time hooks at once. On any error nothing of it stays registered and
        :class:`~tensorforge.errors.PluginError` is raised naming its distribution.
        """
        if isinstance(plugin, str):
            try:
                plugin = importlib.import_module(plugin)
            except Exception as exc:
                raise PluginError(f"cannot import plugin module {plugin!r}: {_fmt(exc)}") from exc
        if name is None:
            name = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__name__
        module = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__module__
        info = PluginInfo(name, distribution, version, module, source=source)
        old = self._infos.get(name)
        if old is not None and old.status == "loaded":
            raise DuplicateNameError(
                f"plugin name {name!r} is registered by both {old.owner} and {info.owner}"
            )
        try:
            self._pm.register(plugin, name=name)
            self._pm.check_pending()
        except (ValueError, pluggy.PluginValidationError) as exc:
            if self._pm.is_registered(plugin):
                self._pm.unregister(plugin)
            raise PluginError(f"{info.owner}: invalid plugin {name!r}: {exc}") from exc
        info.hooks = sorted(h.name for h in self._pm.get_hookcallers(plugin) or [])
        staged: dict[str, dict[str, Any]] = {t: {} for t, _, _ in _HOOKS.values()}
        try:
            for hook in hookspecs.GLOBAL_HOOKS:
                self._call(plugin, info, hook, {}, staged)
        except Exception:
            self._pm.unregister(plugin)
            raise
        for table, entries in staged.items():
            self._tables[table].update(entries)
            if entries:
                info.registered[table] = sorted(entries)
        self._infos[name] = info
        self._cache.clear()
        return info

    def unregister(self, name: str) -> None:
        """Remove a plugin and everything it registered."""
        info = self._infos.pop(name, None)
        if info is None:
            raise PluginError(f"no plugin named {name!r} is registered")
        if self._pm.get_plugin(name) is not None:
            self._pm.unregister(name=name)
        for table in self._tables.values():
            for key in [k for k, d in table.items() if d.plugin == name]:
                del table[key]
        self._cache.clear()

    def record(self, info: PluginInfo) -> None:
        """Record a plugin that was not registered (failed or disabled) for reporting."""
        if info.name not in self._infos or self._infos[info.name].status != "loaded":
            self._infos[info.name] = info
        else:  # keep the loaded one, list the other under a distinct key
            self._infos[f"{info.name} ({info.distribution})"] = info

    # -- internals ---------------------------------------------------------------------------
    def _call(
        self,
        plugin: Any,
        info: PluginInfo,
        hook: str,
        kwargs: dict[str, Any],
        staged: dict[str, dict[str, Any]],
    ) -> None:
        table, typ, key_of = _HOOKS[hook]

        def register(desc: Any) -> None:
            if not isinstance(desc, typ):
                raise PluginError(
                    f"{info.owner}: {hook} must register {typ.__name__} objects, "
                    f"got {type(desc).__name__}"
                )
            desc = replace(desc, distribution=info.distribution or "", plugin=info.name)
            key = key_of(desc)
            other = staged[table].get(key) or self._tables[table].get(key)
            if other is not None:
                raise DuplicateNameError(
                    f"{table[:-1].replace('_', ' ')} {key!r} is registered by both "
                    f"{_owner_of(other)} and {info.owner}"
                )
            staged[table][key] = desc

        args = {"register": register, **kwargs}
        for impl in getattr(self._pm.hook, hook).get_hookimpls():
            if impl.plugin is not plugin:
                continue
            try:
                impl.function(*(args[a] for a in impl.argnames))
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(f"{info.owner}: {hook} failed: {_fmt(exc)}") from exc

    def _collect(self, hook: str, target: Any, stage: str = "") -> dict[str, Any]:
        from tensorforge.target import Target

        target = Target.coerce(target)
        cache_key = (hook, str(target), stage)
        if cache_key in self._cache:
            return self._cache[cache_key]
        table = _HOOKS[hook][0]
        kwargs: dict[str, Any] = {"target": target}
        if hook == "register_passes":
            kwargs["stage"] = stage
        staged: dict[str, dict[str, Any]] = {table: {}}
        for name, info in self._infos.items():
            plugin = self._pm.get_plugin(name)
            if info.status != "loaded" or plugin is None:
                continue
            trial = {table: dict(staged[table])}  # this plugin's additions roll back on error
            try:
                self._call(plugin, info, hook, kwargs, trial)
            except DuplicateNameError:
                raise
            except PluginError as exc:
                msg = f"{exc} (for target {target}); its {table} are skipped"
                info.warnings.append(msg)
                warnings.warn(msg, PluginLoadWarning, stacklevel=3)
                continue
            staged = trial
        self._cache[cache_key] = staged[table]
        return staged[table]


def _fmt(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
