"""TENSORFORGE_PLUGINS selects plugins, TENSORFORGE_DISABLE_PLUGINS excludes them."""

import json

import pytest

from tensorforge.plugins import Registry, load_entry_points
from tensorforge.plugins.loader import plugin_selection

pytestmark = pytest.mark.entry_points


@pytest.mark.parametrize("env, selected, disabled", [
    ({}, None, set()),
    ({"TENSORFORGE_PLUGINS": ""}, set(), set()),
    ({"TENSORFORGE_PLUGINS": "none"}, set(), set()),
    ({"TENSORFORGE_PLUGINS": "llvm, ONNX"}, {"llvm", "onnx"}, set()),
    ({"TENSORFORGE_DISABLE_PLUGINS": "cuda,tensorforge_target_metal"}, None,
     {"cuda", "tensorforge-target-metal"}),
])
def test_selection_parsing(env, selected, disabled):
    assert plugin_selection(env) == (selected, disabled)


def _status(env):
    return {i.name: i.status for i in load_entry_points(Registry(), env)}


def test_unset_loads_all(first_party):
    status = _status({})
    assert all(status[name] == "loaded" for name in first_party)


@pytest.mark.parametrize("value", ["", "none", "NONE"])
def test_none_loads_nothing(value, first_party):
    status = _status({"TENSORFORGE_PLUGINS": value})
    assert all(status[name] == "disabled" for name in first_party)


def test_list_selects_by_entry_point_or_distribution_name():
    status = _status({"TENSORFORGE_PLUGINS": "llvm,tensorforge-frontend-onnx"})
    assert status["llvm"] == status["onnx"] == "loaded"
    assert status["cuda"] == status["xgboost"] == "disabled"


def test_disable_excludes():
    registry = Registry()
    infos = {i.name: i for i in load_entry_points(
        registry, {"TENSORFORGE_DISABLE_PLUGINS": "cuda,opencl"})}
    assert infos["cuda"].status == "disabled"
    assert "TENSORFORGE_DISABLE_PLUGINS" in infos["cuda"].error
    assert "cuda" not in registry.targets and "llvm" in registry.targets


def test_switches_apply_to_tforge(tforge):
    proc = tforge("plugins", "--json", env={"TENSORFORGE_PLUGINS": "llvm"})
    doc = json.loads(proc.stdout)
    status = {p["name"]: p["status"] for p in doc["plugins"]}
    assert status["llvm"] == "loaded" and status["cuda"] == "disabled"
    assert doc["environment"] == {"TENSORFORGE_PLUGINS": "llvm"}
    proc = tforge("targets", "nvidia/h200", env={"TENSORFORGE_DISABLE_PLUGINS": "cuda"})
    assert proc.returncode == 1
    assert "installed but its plugin is not loaded" in proc.stderr
    assert "TENSORFORGE_DISABLE_PLUGINS" in proc.stderr
    proc = tforge("targets", "--json", env={"TENSORFORGE_PLUGINS": "none"})
    assert json.loads(proc.stdout) == {"targets": [], "tags": []}
