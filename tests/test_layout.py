"""The monorepo's shape: every package alike, versions and dependency ranges consistent."""

import ast
import importlib
import sys
import tomllib

import pytest

PACKAGES = {
    "core": ("tensorforge", "tensorforge"),
    "target-llvm": ("tensorforge-target-llvm", "tensorforge_llvm"),
    "target-cuda": ("tensorforge-target-cuda", "tensorforge_cuda"),
    "target-opencl": ("tensorforge-target-opencl", "tensorforge_opencl"),
    "target-metal": ("tensorforge-target-metal", "tensorforge_metal"),
    "target-vdla": ("tensorforge-target-vdla", "tensorforge_vdla"),
    "frontend-onnx": ("tensorforge-frontend-onnx", "tensorforge_onnx"),
    "frontend-tensorflow": ("tensorforge-frontend-tensorflow", "tensorforge_tensorflow"),
    "costmodel-xgboost": ("tensorforge-costmodel-xgboost", "tensorforge_xgboost"),
}


def _pyproject(path):
    return tomllib.loads(path.read_text())


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_package_shape(repo_root, folder):
    dist, module = PACKAGES[folder]
    base = repo_root / "packages" / folder
    meta = _pyproject(base / "pyproject.toml")["project"]
    assert meta["name"] == dist
    assert (base / "README.md").is_file() and (base / "tests").is_dir()
    version_file = base / "src" / module / "_version.py"
    tree = ast.parse(version_file.read_text())
    version = tree.body[0].value.value
    assert version == importlib.import_module(module).__version__
    if folder != "core":
        assert "tensorforge~=0.1.0" in meta["dependencies"]
        assert list(meta["entry-points"]["tensorforge"].values()) == [f"{module}.plugin"]


def test_core_extras_name_every_plugin(repo_root):
    extras = _pyproject(repo_root / "packages/core/pyproject.toml")["project"][
        "optional-dependencies"]
    plugin_dists = {d for f, (d, _) in PACKAGES.items() if f != "core"}
    assert {r.split("~=")[0] for r in extras["all"]} == plugin_dists
    for extra in ("llvm", "onnx", "tensorflow", "cuda", "opencl", "metal", "vdla", "xgboost"):
        assert len(extras[extra]) == 1 and extras[extra][0].split("~=")[0].split("[")[
            0] in plugin_dists
    # the tensorflow extra brings TensorFlow itself (the plugin's own extra)
    assert extras["tensorflow"][0].startswith("tensorforge-frontend-tensorflow[tensorflow]")


def test_requirements_install_every_package(repo_root):
    lines = (repo_root / "requirements.txt").read_text().split()
    for folder in PACKAGES:
        assert f"./packages/{folder}" in lines
    dev = (repo_root / "requirements-dev.txt").read_text()
    assert "-r" in dev
    # CI runs the TensorFlow frontend's tests and baselines: it installs TensorFlow and fails
    # when it does not import (those tests skip only where it is absent)
    assert "tensorflow-cpu==" in dev
    assert "import onnxruntime, tensorflow, keras" in (repo_root / ".ci/run").read_text()


def test_root_pyproject_is_not_a_distribution(repo_root):
    root = _pyproject(repo_root / "pyproject.toml")
    assert "project" not in root and "build-system" not in root
    assert "--import-mode=importlib" in root["tool"]["pytest"]["ini_options"]["addopts"]


def test_importing_tensorforge_is_cheap():
    import subprocess

    code = ("import sys, tensorforge; heavy = [m for m in ('llvmlite', 'onnx', 'xgboost', "
            "'tensorforge.te', 'tensorforge.driver', 'tensorforge.plugins.registry') "
            "if m in sys.modules]; assert not heavy, heavy; print(tensorforge.Target)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
