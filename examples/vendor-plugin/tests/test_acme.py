"""How a vendor tests a plugin: hermetic fixtures from tensorforge.testing, nothing global."""

from importlib.metadata import entry_points

import pytest

from tensorforge.errors import TargetError
from tensorforge.plugins import get_registry
from tensorforge.target import Target
from tensorforge.testing import PluginConformance


class TestAcmeConformance(PluginConformance):
    plugin_module = "tensorforge_acme.plugin"
    distribution = "acme-tensorforge"
    entry_point = "acme"


def test_target_parses_with_plugin_registered(plugins):
    plugins.register("tensorforge_acme.plugin", distribution="acme-tensorforge")
    t = Target.parse("acme -cores=8")
    assert t.options == {"cores": 8, "sram-kb": 512}
    assert Target.parse("acme/a1").options["cores"] == 16


def test_cost_model_loads_on_first_use(plugins):
    plugins.register("tensorforge_acme.plugin")
    model = get_registry().cost_models["acme-roofline"].load_factory()()
    assert model.predict([{"flops": 2e12, "bytes": 1e9}]) == [2.0]


def test_nothing_is_registered_without_the_fixture():
    with pytest.raises(TargetError):
        Target.parse("acme")


def test_discovered_from_installed_metadata(installed_plugins):
    assert any(ep.name == "acme" for ep in entry_points(group="tensorforge"))
    assert installed_plugins.targets["acme"].distribution == "acme-tensorforge"
