"""Can this target compile here, and why is that plugin missing? Computed, never hard-coded.

A registered target kind is *ready* when its ``build`` reference resolves: the module exists
(found with ``importlib.util.find_spec``, which imports the plugin's own light package but not
the code generator and its heavy dependencies) and the runtime modules the kind ``requires``
are importable. A plugin that registers the kind before its code generator exists (the GPU and
VDLA targets today) reads "codegen not built yet (planned)"; the status flips by itself when
the module lands.

For a plugin that is not loaded, :func:`missing_plugin_hint` says whether it is disabled (and by
which environment variable), failed (with the error) or not installed (with the command that
installs it where this tensorforge runs, see :mod:`tensorforge.plugins.known`).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tensorforge.errors import TargetError
from tensorforge.plugins.known import TARGET_DISTRIBUTIONS, install_hint

if TYPE_CHECKING:
    from tensorforge.target.kind import TargetKind

__all__ = ["TargetStatus", "check_buildable", "missing_plugin_hint", "plugin_readiness",
           "target_status"]

READY = "ready"


@dataclass(frozen=True)
class TargetStatus:
    """``state``: ready, planned, not installed, runtime missing or no codegen; ``detail``:
    one line saying what is missing and what to do."""

    state: str
    detail: str = ""

    @property
    def ready(self) -> bool:
        return self.state == READY

    def __str__(self) -> str:
        return self.detail or self.state


def _module_exists(name: str) -> bool | None:
    """True/False whether ``name`` can be imported; None when a parent package is missing."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return None
    except (ImportError, ValueError):
        return False


def _requirement(entry: str) -> tuple[str, str]:
    """``"module=pip requirement"`` or ``"module"`` (pip name = module's top package)."""
    module, _, pip = entry.partition("=")
    return module.strip(), (pip.strip() or module.split(".")[0].strip())


def _hint_for(kind: TargetKind) -> str:
    dist = kind.distribution or ""
    extra = next((e for d, e in TARGET_DISTRIBUTIONS.values() if d == dist), None)
    return install_hint((dist, extra)) if extra else f"reinstall {dist or 'its plugin'}"


def target_status(kind: TargetKind) -> TargetStatus:
    """Whether ``kind`` can compile here, without importing its code generator."""
    if not kind.build:
        return TargetStatus("no codegen", "no code generator registered")
    module = kind.build.partition(":")[0]
    found = _module_exists(module)
    if not found:
        top = module.split(".")[0]
        if found is False and _module_exists(top):
            return TargetStatus("planned", "codegen not built yet (planned)")
        return TargetStatus("not installed",
                            f"codegen not installed (no module {module}): {_hint_for(kind)}")
    missing = [_requirement(r) for r in kind.requires if not _module_exists(_requirement(r)[0])]
    if missing:
        pips = " ".join(dict.fromkeys(p for _, p in missing))
        return TargetStatus("runtime missing", f"runtime missing: pip install {pips}")
    return TargetStatus(READY, READY)


def check_buildable(kind: TargetKind) -> None:
    """Raise a one-line :class:`TargetError` unless ``kind`` can compile here."""
    st = target_status(kind)
    if st.ready:
        return
    from tensorforge.plugins import get_registry

    ready = sorted(k.name for k in get_registry().targets.values() if target_status(k).ready)
    raise TargetError(f"target {kind.name!r} cannot compile: {st.detail}; ready: "
                      f"{', '.join(ready) or 'none'}")


def plugin_readiness(info: Any, registry: Any) -> str:
    """The status column of ``tforge plugins``: ready, disabled (by which variable), FAILED,
    or what its target kinds lack."""
    if info.status == "failed":
        return "FAILED"
    if info.status == "disabled":
        return f"disabled ({info.error})" if info.error else "disabled"
    notes = []
    for name in info.registered.get("targets", []):
        kind = registry.targets.get(name)
        st = target_status(kind) if kind is not None else None
        if st is not None and not st.ready:
            notes.append(st.detail if len(info.registered["targets"]) == 1
                         else f"{name}: {st.detail}")
    return "; ".join(notes) or READY


def missing_plugin_hint(dist: str, extra: str) -> str:
    """Why the first-party plugin ``dist`` is not registered, and what to do."""
    from tensorforge.plugins import get_registry
    from tensorforge.plugins.loader import ENV_DISABLE, ENV_SELECT, _norm

    registry = get_registry()
    for info in registry.plugins:
        if not info.distribution or _norm(info.distribution) != _norm(dist):
            continue
        if info.status == "disabled":
            var = ENV_SELECT if ENV_SELECT in (info.error or "") else ENV_DISABLE
            value = os.environ.get(var)
            shown = f"{var}={value!r}" if value is not None else var
            fix = (f"add {info.name} to {var}" if var == ENV_SELECT
                   else f"remove {info.name} from {var}")
            return f"{dist} is installed but disabled by {shown}; {fix}"
        if info.status == "failed":
            return f"{dist} is installed but failed to load: {info.error}"
        return f"{dist} is loaded"
    if not registry.entry_points_loaded:
        return (f"{dist} is not loaded in this process (entry points not loaded; under pytest "
                "use the `plugins` fixture)")
    return f"{dist} is not installed; {install_hint((dist, extra))}"
