"""Every public subpackage imports on its own, in a fresh interpreter (no circular imports)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["tensorforge.schedule", "tensorforge.tir", "tensorforge.expr",
                                    "tensorforge.te", "tensorforge.driver"])
def test_subpackage_imports_first(module: str) -> None:
    code = (f"import {module}; import tensorforge.te as te; from tensorforge.schedule import "
            "create_schedule; assert te.create_schedule is create_schedule; "
            "assert 'create_schedule' in te.__all__")
    subprocess.run([sys.executable, "-c", code], check=True)
