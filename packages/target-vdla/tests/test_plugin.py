"""The shared plugin conformance checks, for tensorforge-target-vdla."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_vdla.plugin"
    distribution = "tensorforge-target-vdla"
    entry_point = "vdla"
