"""The in-repo plugins are found through their real installed entry points."""

import json
from importlib.metadata import entry_points

import pytest

from tensorforge.plugins import get_registry
from tensorforge.target import Target

pytestmark = pytest.mark.entry_points


def test_every_first_party_plugin_has_an_installed_entry_point(first_party):
    eps = {ep.name: ep for ep in entry_points(group="tensorforge")}
    for name, dist in first_party.items():
        assert name in eps, f"{dist} is not installed (pip install -r requirements.txt)"
        assert eps[name].dist.name == dist


def test_installed_plugins_load_and_register(installed_plugins, first_party):
    infos = {p.name: p for p in installed_plugins.plugins}
    for name, dist in first_party.items():
        assert infos[name].status == "loaded", infos[name].error
        assert infos[name].distribution == dist and infos[name].version == "0.1.0"
        assert infos[name].source == "entry point"
    assert {"llvm", "cuda", "opencl", "metal", "vdla"} <= set(installed_plugins.targets)
    assert installed_plugins.targets["llvm"].distribution == "tensorforge-target-llvm"
    assert "onnx" in installed_plugins.frontends
    assert "xgboost" in installed_plugins.cost_models
    assert installed_plugins.frontend_for("model.ONNX").name == "onnx"
    assert Target.parse("nvidia/h200").options["arch"] == "sm_90"


def test_tests_are_hermetic_by_default():
    registry = get_registry()
    assert registry.plugins == [] and not registry.targets
    assert not registry.entry_points_loaded


def test_tforge_plugins_lists_them(tforge, first_party):
    proc = tforge("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    listed = {p["name"]: p for p in doc["plugins"]}
    for name, dist in first_party.items():
        assert listed[name]["distribution"] == dist
        assert listed[name]["status"] == "loaded"
        assert listed[name]["registered"]
    assert listed["llvm"]["registered"]["targets"] == ["llvm"]
    assert "amd/zen3" in listed["llvm"]["registered"]["target_tags"]


def test_tforge_plugins_is_readable(tforge):
    proc = tforge("plugins")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "loaded" in out and "tensorforge-target-llvm 0.1.0" in out
    assert "targets: llvm" in out and "cost models: xgboost" in out
    assert "Traceback" not in out + proc.stderr
