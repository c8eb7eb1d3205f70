"""Every hook spec is documented in docs/plugin-authoring.md and exercised by a test."""

import inspect
import re

import pytest

from tensorforge.plugins import hookspecs

SPECS = sorted(
    name for name, fn in vars(hookspecs).items()
    if inspect.isfunction(fn) and hasattr(fn, "tensorforge_spec")
)


def _test_sources(repo_root):
    patterns = ("tests/**/test_*.py", "packages/*/tests/**/test_*.py",
                "examples/*/tests/**/test_*.py")
    files = [f for pattern in patterns for f in repo_root.glob(pattern)]
    return {f: f.read_text() for f in files if f.name != "test_meta.py"}


def test_specs_found():
    assert len(SPECS) == 8 and set(SPECS) == set(hookspecs.GLOBAL_HOOKS + hookspecs.TARGET_HOOKS)


@pytest.mark.parametrize("name", SPECS)
def test_hook_is_documented(repo_root, name):
    doc = (repo_root / "docs" / "plugin-authoring.md").read_text()
    assert re.search(rf"^#+ .*`{name}\(", doc, re.M), (
        f"docs/plugin-authoring.md needs a section heading for `{name}(...)`")
    fn = getattr(hookspecs, name)
    params = inspect.signature(fn).parameters
    assert fn.__doc__ and all(f":param {p}:" in fn.__doc__ for p in params), (
        f"hookspecs.{name} must document every argument")


@pytest.mark.parametrize("name", SPECS)
def test_hook_is_tested(repo_root, name):
    users = [f for f, text in _test_sources(repo_root).items()
             if re.search(rf"def {name}\(", text)]
    assert users, f"no test implements the hook {name}"
