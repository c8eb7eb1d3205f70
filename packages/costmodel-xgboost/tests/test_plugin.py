"""The shared plugin conformance checks, for tensorforge-costmodel-xgboost."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_xgboost.plugin"
    distribution = "tensorforge-costmodel-xgboost"
    entry_point = "xgboost"
