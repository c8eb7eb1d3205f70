"""First-party plugins core knows by name, so errors can say what to ``pip install``.

The command depends on where tensorforge runs from: in a source checkout (core imported from
``<repo>/packages/core/src``) the plugin is one ``pip install -e packages/<dir>`` away, and
``pip install 'tensorforge[extra]'`` would fail (the distributions are not on an index);
installed from an index, the extra is the way.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

# target kind -> distribution that provides it (and the core extra that pulls it in)
TARGET_DISTRIBUTIONS = {
    "llvm": ("tensorforge-target-llvm", "llvm"),
    "cuda": ("tensorforge-target-cuda", "cuda"),
    "opencl": ("tensorforge-target-opencl", "opencl"),
    "metal": ("tensorforge-target-metal", "metal"),
    "vdla": ("tensorforge-target-vdla", "vdla"),
}
# first word of a tag -> target kind whose plugin registers such tags
TAG_VENDORS = {"amd": "llvm", "intel": "llvm", "arm": "llvm", "nvidia": "cuda", "apple": "metal",
               "vdla": "vdla"}
FRONTEND_DISTRIBUTIONS = {"onnx": ("tensorforge-frontend-onnx", "onnx"),
                          "tensorflow": ("tensorforge-frontend-tensorflow", "tensorflow")}
COST_MODEL_DISTRIBUTIONS = {"xgboost": ("tensorforge-costmodel-xgboost", "xgboost")}
# model file suffix -> the frontend that reads it
FRONTEND_SUFFIXES = {".onnx": "onnx", ".pb": "tensorflow", ".keras": "tensorflow",
                     ".h5": "tensorflow"}
# a file a model directory holds -> the frontend that reads such directories
FRONTEND_DIRECTORY_MARKERS = {"saved_model.pb": "tensorflow"}
# root package of an in-memory model's class -> the frontend that reads such objects
FRONTEND_OBJECT_MODULES = {"keras": "tensorflow", "tf_keras": "tensorflow",
                           "tensorflow": "tensorflow"}

#: every first-party plugin distribution; these load before third-party ones
FIRST_PARTY = frozenset(
    dist
    for table in (TARGET_DISTRIBUTIONS, FRONTEND_DISTRIBUTIONS, COST_MODEL_DISTRIBUTIONS)
    for dist, _ in table.values()
)


@lru_cache(maxsize=1)
def source_checkout() -> Path | None:
    """The repository root when core runs from a source checkout (``packages/core/src``),
    else None (an installed wheel)."""
    here = Path(__file__).resolve().parent.parent  # <root>/packages/core/src/tensorforge
    if len(here.parents) < 4 or [p.name for p in here.parents[:3]] != ["src", "core",
                                                                        "packages"]:
        return None
    root = here.parents[3]
    return root if (root / "packages" / "core" / "pyproject.toml").is_file() else None


def _checkout_path(root: Path, dist: str) -> str | None:
    """``packages/<dir>`` of ``dist`` in the checkout, relative to the working directory when
    it lies inside the checkout; None when the checkout has no such package."""
    folder = root / "packages" / dist.removeprefix("tensorforge-")
    if not (folder / "pyproject.toml").is_file():
        return None
    cwd = Path.cwd().resolve()
    if cwd == root or root in cwd.parents:
        return os.path.relpath(folder, cwd)
    return str(folder)


def install_hint(dist_and_extra: tuple[str, str]) -> str:
    """The command that installs a first-party plugin where this tensorforge runs."""
    dist, extra = dist_and_extra
    root = source_checkout()
    path = _checkout_path(root, dist) if root is not None else None
    if path is not None:
        return f"pip install -e {path}  (from this source checkout)"
    return f"pip install 'tensorforge[{extra}]'  (or: pip install {dist})"
