"""The shared plugin conformance checks, for tensorforge-target-opencl."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_opencl.plugin"
    distribution = "tensorforge-target-opencl"
    entry_point = "opencl"
