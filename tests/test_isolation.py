"""A broken plugin is reported with its distribution and error; the others still load."""

import json

import pytest

from tensorforge.errors import DuplicateNameError, PluginError
from tensorforge.plugins import PluginLoadWarning, Tuner, hookimpl, load_entry_points

pytestmark = pytest.mark.entry_points

GOOD = '''
from tensorforge.plugins import hookimpl, Tuner
@hookimpl
def register_tuners(register):
    register(Tuner("good-random", "good_plugin.tuners:Random"))
'''
RAISES_AT_IMPORT = "raise RuntimeError('boom at import')\n"
RAISES_AT_REGISTER = '''
from tensorforge.plugins import hookimpl, Tuner
@hookimpl
def register_tuners(register):
    register(Tuner("half", "bad_hook.tuners:Half"))  # rolled back with the plugin
    raise ValueError("boom in register_tuners")
'''
DUPLICATE_TUNER = '''
from tensorforge.plugins import hookimpl, Tuner
@hookimpl
def register_tuners(register):
    register(Tuner("good-random", "dup_plugin.tuners:Random"))
'''
BAD_SIGNATURE = '''
from tensorforge.plugins import hookimpl
@hookimpl
def register_targets(register, not_an_argument):
    pass
'''
MISSING_DEPENDENCY = "import definitely_not_installed_module_xyz\n"


@pytest.fixture
def broken_site(plugin_distribution):
    plugin_distribution("good-dist", entry_points={"good": "good_plugin"},
                        files={"good_plugin.py": GOOD})
    plugin_distribution("bad-import-dist", entry_points={"badimport": "bad_import"},
                        files={"bad_import.py": RAISES_AT_IMPORT})
    plugin_distribution("bad-hook-dist", entry_points={"badhook": "bad_hook"},
                        files={"bad_hook.py": RAISES_AT_REGISTER})
    plugin_distribution("zz-dup-dist", entry_points={"zdup": "dup_plugin"},
                        files={"dup_plugin.py": DUPLICATE_TUNER})
    plugin_distribution("bad-sig-dist", entry_points={"badsig": "bad_sig"},
                        files={"bad_sig.py": BAD_SIGNATURE})
    return plugin_distribution("needs-dep-dist", entry_points={"needsdep": "needs_dep"},
                               files={"needs_dep.py": MISSING_DEPENDENCY})


def test_failures_are_isolated_and_reported(broken_site, _tensorforge_registry):
    registry = _tensorforge_registry
    env = {"TENSORFORGE_PLUGINS": "good,badimport,badhook,zdup,badsig,needsdep,llvm"}
    with pytest.warns(PluginLoadWarning) as record:
        results = {i.name: i for i in load_entry_points(registry, env)}
    assert results["good"].status == "loaded", results["good"].error
    assert "good-random" in registry.tuners
    assert results["llvm"].status == "loaded" and "llvm" in registry.targets

    bad = results["badimport"]
    assert bad.status == "failed" and bad.distribution == "bad-import-dist"
    assert "RuntimeError: boom at import" in bad.error

    hook = results["badhook"]
    assert hook.status == "failed" and "bad-hook-dist" in hook.error
    assert "boom in register_tuners" in hook.error
    assert "half" not in registry.tuners  # what it registered before failing is rolled back

    dup = results["zdup"]
    assert dup.status == "failed"
    assert "good-dist" in dup.error and "zz-dup-dist" in dup.error
    assert registry.tuners["good-random"].distribution == "good-dist"

    assert results["badsig"].status == "failed" and "not_an_argument" in results["badsig"].error
    assert "pip install definitely_not_installed_module_xyz" in results["needsdep"].error
    warned = " ".join(str(w.message) for w in record)
    assert "bad-import-dist" in warned and "bad-hook-dist" in warned


def test_tforge_plugins_reports_broken_plugins(broken_site, tforge):
    proc = tforge("plugins", "--json", pythonpath=str(broken_site))
    assert proc.returncode == 0, proc.stderr
    listed = {p["name"]: p for p in json.loads(proc.stdout)["plugins"]}
    assert listed["badimport"]["status"] == "failed"
    assert listed["badimport"]["distribution"] == "bad-import-dist"
    assert "boom at import" in listed["badimport"]["error"]
    assert listed["badhook"]["status"] == "failed"
    assert listed["good"]["status"] == "loaded"
    assert listed["llvm"]["status"] == "loaded"  # the first-party ones are unaffected

    human = tforge("plugins", pythonpath=str(broken_site))
    assert human.returncode == 0
    assert "FAILED" in human.stdout and "bad-import-dist" in human.stdout
    assert "error: cannot import 'bad_import': RuntimeError: boom at import" in human.stdout
    strict = tforge("plugins", "--strict", pythonpath=str(broken_site))
    assert strict.returncode == 1


def test_direct_registration_errors_raise(plugins):
    class Good:
        @hookimpl
        def register_tuners(self, register):
            register(Tuner("t1", "m:T"))
    plugins.register(Good(), "first", distribution="first-dist")
    with pytest.raises(DuplicateNameError, match="first-dist.*second-dist"):
        plugins.register(Good(), "second", distribution="second-dist")
    with pytest.raises(DuplicateNameError, match="plugin name 'first'"):
        plugins.register(Good(), "first", distribution="third-dist")
    with pytest.raises(PluginError, match="cannot import plugin module"):
        plugins.register("no_such_plugin_module_abc")
