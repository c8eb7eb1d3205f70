"""The shared plugin conformance checks, for tensorforge-target-metal."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_metal.plugin"
    distribution = "tensorforge-target-metal"
    entry_point = "metal"
