"""The shared plugin conformance checks, for tensorforge-target-cuda."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_cuda.plugin"
    distribution = "tensorforge-target-cuda"
    entry_point = "cuda"
