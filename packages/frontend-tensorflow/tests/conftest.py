"""Fixtures: the seeded Keras models of `tensorforge_tensorflow.testing`, saved in every form
once per session, and the TensorFlow frontend registered in a test's registry."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(scope="session")
def saved_models(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """`saved_models(name)`: the case of BUILDERS[name], made once per session."""
    pytest.importorskip("tensorflow",
                        reason="no TensorFlow here (pip install tensorflow-cpu)")
    from tensorforge_tensorflow.testing import BUILDERS, SavedModelCase, save_forms

    cache: dict[str, SavedModelCase] = {}

    def get(name: str) -> SavedModelCase:
        if name not in cache:
            build, shape = BUILDERS[name]
            x = np.random.default_rng(0).standard_normal(shape).astype("float32")
            cache[name] = save_forms(build(), x, tmp_path_factory.mktemp(name))
        return cache[name]

    return get


@pytest.fixture
def tf_frontend(plugins: Any) -> Any:
    """The TensorFlow frontend registered in the test's registry."""
    return plugins.register("tensorforge_tensorflow.plugin", "tensorflow",
                            distribution="tensorforge-frontend-tensorflow")
