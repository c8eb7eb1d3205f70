"""Test helpers for tensorforge and its plugins.

The pytest fixtures (``plugins``, ``installed_plugins``, ``llvm_target``,
``plugin_distribution``) come from :mod:`tensorforge.testing.pytest_plugin`, which pytest loads
automatically (``pytest11`` entry point) wherever tensorforge is installed. Under pytest every
test starts with an empty registry: no entry point is loaded unless the test asks.

Conformance bases: `PluginConformance` (a plugin registers cleanly and imports nothing heavy)
and `TargetConformance` (the operator suite of `op_cases.py` built for a target, in run,
compile-only or source-check mode).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from tensorforge.testing.conformance import PluginConformance

__all__ = ["PluginConformance", "TargetConformance", "write_distribution"]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # the operator suite imports pytest: only on first use
    if name == "TargetConformance":
        from tensorforge.testing.target_conformance import TargetConformance

        return TargetConformance
    raise AttributeError(name)


def write_distribution(
    root: str | Path,
    name: str,
    version: str = "0.0.1",
    entry_points: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write an installed-looking distribution (a ``.dist-info`` folder plus source files)
    under ``root``; put ``root`` on ``sys.path`` (or ``PYTHONPATH``) and
    ``importlib.metadata`` finds it and its ``tensorforge`` entry points like any other."""
    root = Path(root)
    dist_info = root / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = ["[tensorforge]"] + [f"{k} = {v}" for k, v in (entry_points or {}).items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
