"""The core package's surface: errors, version, lazy top-level names."""

import pytest

import tensorforge
from tensorforge.errors import DuplicateNameError, PluginError, TargetError, TensorforgeError


def test_error_hierarchy():
    assert issubclass(TargetError, TensorforgeError) and issubclass(TargetError, ValueError)
    assert issubclass(DuplicateNameError, PluginError)
    assert issubclass(PluginError, TensorforgeError)
    assert tensorforge.TensorforgeError is TensorforgeError


def test_top_level_names():
    assert tensorforge.__version__ == "0.1.0"
    assert tensorforge.Target.__name__ == "Target"
    assert {"te", "lower", "build"} <= set(dir(tensorforge))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        tensorforge.nope  # noqa: B018
