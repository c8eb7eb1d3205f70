"""Fixtures of the VDLA target's tests: `vdla` registers the plugin in the test's hermetic
registry and returns a function that builds a target string (tag or options)."""

import pytest


@pytest.fixture
def vdla(plugins):
    plugins.register("tensorforge_vdla.plugin")
    from tensorforge.target import Target

    return lambda text="vdla": Target.parse(text)
