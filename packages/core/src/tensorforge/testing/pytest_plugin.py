"""pytest fixtures for hermetic plugin tests (loaded through the ``pytest11`` entry point).

* every test runs against a fresh, empty registry: no entry point loads unless asked;
* ``plugins``: register plugins for one test (``plugins.register("tensorforge_llvm.plugin")``),
  removed at teardown;
* ``installed_plugins``: load the real installed entry points (honouring
  ``TENSORFORGE_PLUGINS`` / ``TENSORFORGE_DISABLE_PLUGINS``) and return the registry;
* ``llvm_target``: registers the llvm plugin and returns ``Target.parse("llvm")`` (the host);
  skips when tensorforge-target-llvm is not installed; ``opencl_target`` likewise for
  ``opencl`` (tests marked ``opencl`` or ``cuda`` skip, with the reason, where no such device
  is usable);
* ``plugin_distribution``: write a throw-away installed distribution with entry points and put
  it on ``sys.path`` (see :func:`tensorforge.testing.write_distribution`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tensorforge import plugins as _plugins
from tensorforge.plugins.registry import PluginInfo, Registry


def pytest_configure(config: pytest.Config) -> None:
    _plugins.set_autoload(False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `opencl` or `cuda` skip, with the reason, where no such device is usable."""
    from tensorforge.testing import hardware

    for mark, probe in (("opencl", hardware.opencl_status), ("cuda", hardware.cuda_status)):
        marked = [it for it in items if it.get_closest_marker(mark) is not None]
        why = probe() if marked else ""
        if why:
            for it in marked:
                it.add_marker(pytest.mark.skip(reason=f"{mark}: {why}"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """An `opencl` test skips when TensorFlow was loaded after collection (see hardware.py)."""
    if item.get_closest_marker("opencl") is not None:
        from tensorforge.testing.hardware import opencl_status

        why = opencl_status()
        if why:
            pytest.skip(f"opencl: {why}")


def pytest_unconfigure(config: pytest.Config) -> None:
    _plugins.set_autoload(True)


def pytest_report_header(config: pytest.Config) -> str:
    return "tensorforge: hermetic plugin registry (fixtures: plugins, installed_plugins, ...)"


class PluginFixture:
    """Registers plugins into the test's registry and removes them at teardown."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._names: list[str] = []

    def register(self, plugin: Any, name: str | None = None, *,
                 distribution: str | None = None, version: str | None = None) -> PluginInfo:
        """Register a module, module name or object with ``@hookimpl`` functions."""
        info = self.registry.register(plugin, name, distribution=distribution, version=version)
        self._names.append(info.name)
        return info

    def unregister(self, name: str) -> None:
        self.registry.unregister(name)
        self._names.remove(name)

    def _teardown(self) -> None:
        for name in reversed(self._names):
            self.registry.unregister(name)
        self._names.clear()


@pytest.fixture(autouse=True)
def _tensorforge_registry() -> Iterator[Registry]:
    with _plugins.use_registry() as registry:
        yield registry


@pytest.fixture
def plugins(_tensorforge_registry: Registry) -> Iterator[PluginFixture]:
    """Register what the test needs: ``plugins.register(module_or_object)``."""
    fixture = PluginFixture(_tensorforge_registry)
    try:
        yield fixture
    finally:
        fixture._teardown()


@pytest.fixture
def installed_plugins(_tensorforge_registry: Registry) -> Registry:
    """The registry with the real installed entry points loaded (environment switches apply)."""
    _plugins.load_entry_points(_tensorforge_registry, warn=False)
    return _tensorforge_registry


@pytest.fixture
def llvm_target(plugins: PluginFixture):
    """``Target.parse("llvm")`` for this machine, with the llvm plugin registered."""
    if importlib.util.find_spec("tensorforge_llvm") is None:
        pytest.skip("tensorforge-target-llvm is not installed")
    from tensorforge.target import Target

    plugins.register("tensorforge_llvm.plugin", "llvm", distribution="tensorforge-target-llvm")
    return Target.parse("llvm")


@pytest.fixture
def opencl_target(plugins: PluginFixture):
    """``Target.parse("opencl")`` with the opencl plugin registered (mark the test `opencl`
    so it skips where no OpenCL device is usable)."""
    if importlib.util.find_spec("tensorforge_opencl") is None:
        pytest.skip("tensorforge-target-opencl is not installed")
    from tensorforge.target import Target

    plugins.register("tensorforge_opencl.plugin", "opencl",
                     distribution="tensorforge-target-opencl")
    return Target.parse("opencl")


@pytest.fixture
def plugin_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """``plugin_distribution(name, entry_points={"x": "mod"}, files={"mod.py": src})``: an
    installed-looking distribution on ``sys.path``; returns its folder (for ``PYTHONPATH``)."""
    from tensorforge.testing import write_distribution

    root = tmp_path / "site"
    added: list[str] = []

    def make(name: str, version: str = "0.0.1", entry_points: Mapping[str, str] | None = None,
             files: Mapping[str, str] | None = None) -> Path:
        write_distribution(root, name, version, entry_points, files)
        if not added:
            monkeypatch.syspath_prepend(str(root))
            added.append(str(root))
        importlib.invalidate_caches()
        return root

    yield make
    for mod in [m for m, v in sys.modules.items() if str(getattr(v, "__file__", "") or "")
                .startswith(str(root))]:
        del sys.modules[mod]
