"""The shared plugin conformance checks, for tensorforge-frontend-tensorflow."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_tensorflow.plugin"
    distribution = "tensorforge-frontend-tensorflow"
    entry_point = "tensorflow"
