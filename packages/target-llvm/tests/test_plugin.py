"""The shared plugin conformance checks, for tensorforge-target-llvm."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_llvm.plugin"
    distribution = "tensorforge-target-llvm"
    entry_point = "llvm"
