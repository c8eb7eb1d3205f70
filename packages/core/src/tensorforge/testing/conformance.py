"""One conformance test base every plugin package subclasses in its ``tests/``.

```python
from tensorforge.testing import PluginConformance

class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_cuda.plugin"
    distribution = "tensorforge-target-cuda"
    entry_point = "cuda"
```
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

from tensorforge.plugins.loader import GROUP, _norm


class PluginConformance:
    """Checks every plugin must pass; set the three class attributes."""

    plugin_module: str = ""
    distribution: str = ""
    entry_point: str = ""
    #: modules that must not be imported by merely loading the plugin
    heavy_modules: tuple[str, ...] = ("xgboost", "onnx", "onnxruntime", "pyopencl", "cuda",
                                      "llvmlite", "torch", "tensorflow", "keras")

    def test_entry_point_is_installed(self):
        found = [ep for ep in entry_points(group=GROUP) if ep.name == self.entry_point]
        assert found, f"no '{self.entry_point}' entry point in group {GROUP!r}; is it installed?"
        ep = found[0]
        assert ep.value == self.plugin_module
        assert ep.dist is not None and _norm(ep.dist.name) == _norm(self.distribution)

    def test_registers_cleanly(self, plugins):
        info = plugins.register(self.plugin_module, self.entry_point,
                                distribution=self.distribution)
        assert info.status == "loaded"
        assert info.registered or set(info.hooks) & {"register_strategies",
                                                     "register_intrinsics", "register_passes"}
        for table, names in info.registered.items():
            for name in names:
                desc = getattr(plugins.registry, table)[name]
                assert desc.distribution == self.distribution

    def test_targets_and_tags_round_trip(self, plugins):
        from tensorforge.target import Target

        plugins.register(self.plugin_module, self.entry_point, distribution=self.distribution)
        registry = plugins.registry
        for kind in registry.targets.values():
            if kind.distribution != self.distribution:
                continue
            # a cross target (explicit triple where the kind has one) needs no host probe
            t = Target(kind)
            assert Target.parse(str(t)) == t
            assert set(t.kind.defaults()) == set(kind.options)
        for tag in registry.target_tags.values():
            if tag.distribution == self.distribution:
                t = Target.parse(tag.name)
                assert t.tag == tag.name and Target.parse(str(t)) == t

    def test_loading_imports_nothing_heavy(self):
        code = textwrap.dedent(f"""
            import sys, importlib
            importlib.import_module({self.plugin_module!r})
            heavy = [m for m in {self.heavy_modules!r} if m in sys.modules]
            assert not heavy, heavy
        """)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 0, f"loading the plugin imported heavy modules:\n{proc.stderr}"
