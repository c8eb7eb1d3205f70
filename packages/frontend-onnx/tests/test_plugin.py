"""The shared plugin conformance checks, for tensorforge-frontend-onnx."""

from tensorforge.testing import PluginConformance


class TestPlugin(PluginConformance):
    plugin_module = "tensorforge_onnx.plugin"
    distribution = "tensorforge-frontend-onnx"
    entry_point = "onnx"
