"""Shared fixtures of the cross-package tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FIRST_PARTY = {
    "llvm": "tensorforge-target-llvm",
    "cuda": "tensorforge-target-cuda",
    "opencl": "tensorforge-target-opencl",
    "metal": "tensorforge-target-metal",
    "vdla": "tensorforge-target-vdla",
    "onnx": "tensorforge-frontend-onnx",
    "tensorflow": "tensorforge-frontend-tensorflow",
    "xgboost": "tensorforge-costmodel-xgboost",
}


@pytest.fixture
def first_party() -> dict[str, str]:
    """Entry-point name -> distribution of every in-repo plugin."""
    return dict(FIRST_PARTY)


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def tforge() -> Callable[..., subprocess.CompletedProcess]:
    """Run ``tforge ARGS`` in a subprocess: ``tforge("plugins", "--json", env={...},
    python=...)``. TENSORFORGE_* variables are cleared unless given; ``pythonpath`` is
    prepended to PYTHONPATH."""

    def run(*args: str, env: Mapping[str, str] | None = None, pythonpath: str | None = None,
            python: str = sys.executable) -> subprocess.CompletedProcess:
        full = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
        full.update(env or {})
        if pythonpath:
            full["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, full.get("PYTHONPATH")]))
        return subprocess.run([python, "-m", "tensorforge", *args], capture_output=True,
                              text=True, env=full, timeout=120)

    return run


@pytest.fixture
def onnx_frontend(plugins):
    """The ONNX frontend registered in the test's registry (skips without onnx)."""
    pytest.importorskip("onnx")
    pytest.importorskip("tensorforge_onnx.frontend")
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")


@pytest.fixture
def relu_onnx(tmp_path) -> Path:
    """`one.onnx` in tmp_path: one Relu on float32[2, 8] (input `x`), a model that compiles to
    exactly one kernel (skips without onnx)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    path = tmp_path / "one.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path
