"""Runtime: Module, CFunction argument checks and load_module, on a C kernel built with cc
(no code generator or llvmlite involved)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from tensorforge.errors import TensorforgeError
from tensorforge.runtime import LIBRARY_FORMAT, CFunction, Module, Param, load_module
from tensorforge.runtime.module import kernel_table_bytes, kernel_table_c_source

_C = """
#include <stdint.h>
int32_t axpy(const float *x, float *y, float a, int32_t n) {
    if (n > 1000) return 1;
    for (int32_t i = 0; i < n; ++i) y[i] += a * x[i];
    return 0;
}
"""

PARAMS = [Param("x", "buffer", "float32", ("n",)), Param("y", "buffer", "float32", ("n",), True),
          Param("a", "scalar", "float32"), Param("n", "scalar", "int32")]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("rt")
    functions = [{"name": "axpy", "symbol": "axpy",
                  "params": [{"name": p.name, "kind": p.kind, "dtype": p.dtype,
                              "shape": list(p.shape), "writes": p.writes} for p in PARAMS],
                  "asserts": ["n must be at most 1000"]}]
    # the library carries its own kernel table, which load_module checks the sidecar against
    (d / "k.c").write_text(_C + kernel_table_c_source(kernel_table_bytes(functions)))
    so = d / "libk.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(so), str(d / "k.c")], check=True)
    meta = {"format": LIBRARY_FORMAT, "version": 2, "entry_name": "axpy", "functions": functions}
    (d / "libk.so.json").write_text(json.dumps(meta))
    return so


def test_load_module_and_call(lib):
    mod = load_module(lib)
    x = np.arange(5, dtype="float32")
    y = np.ones(5, "float32")
    mod(x, y, 2.0, 5)
    np.testing.assert_array_equal(y, 1 + 2 * x)
    mod["axpy"](x, y, 1.0, 5)
    assert isinstance(mod.get_function("axpy"), CFunction)
    assert "axpy" in mod and mod.function_names == ["axpy"]
    with pytest.raises(TensorforgeError, match="no function 'nope'"):
        mod["nope"]


def test_argument_errors_name_the_parameter(lib):
    f = load_module(lib)["axpy"]
    x = np.zeros(4, "float32")
    y = np.zeros(4, "float32")
    with pytest.raises(TensorforgeError, match=r"takes 4 arguments, got 3.*one numpy array"):
        f(x, y, 1.0)
    with pytest.raises(TensorforgeError, match=r"argument 0 \(x: float32\[n\]\).*int32.*astype"):
        f(x.astype("int32"), y, 1.0, 4)
    with pytest.raises(TensorforgeError, match="argument 1 .*not C-contiguous"):
        f(x, np.zeros(8, "float32")[::2], 1.0, 4)
    with pytest.raises(TensorforgeError, match="expects 1 dimensions"):
        f(x, np.zeros((2, 2), "float32"), 1.0, 4)
    with pytest.raises(TensorforgeError, match=r"argument 3 \(n: int32\) expects an integer"):
        f(x, y, 1.0, 4.0)
    with pytest.raises(TensorforgeError, match="expects a number"):
        f(x, y, "1", 4)
    with pytest.raises(TensorforgeError, match="size 'n'"):
        f(x, y, 1.0, 3)
    with pytest.raises(TensorforgeError, match="same array"):
        f(y, y, 1.0, 4)


def test_nonzero_status_raises_assert_message(lib):
    f = load_module(lib)["axpy"]
    big = np.zeros(1001, "float32")
    with pytest.raises(TensorforgeError, match="assertion failed: n must be at most 1000"):
        f(big, big.copy(), 1.0, 1001)


def test_missing_sidecar_and_base_module_errors(tmp_path, lib):
    other = tmp_path / "copy.so"
    shutil.copyfile(lib, other)
    with pytest.raises(TensorforgeError, match="signature file .* is missing"):
        load_module(other)
    m = Module({"f": lambda: 42})
    assert m() == 42 and m.entry_name == "f"
    with pytest.raises(TensorforgeError, match="cannot be exported"):
        m.export_library(tmp_path / "x.so")
    with pytest.raises(TensorforgeError, match="no functions"):
        Module({})()


def test_library_module_reexport(tmp_path, lib):
    mod = load_module(lib)
    mod.export_library(tmp_path / "again.so")
    again = load_module(tmp_path / "again.so")
    x, y = np.ones(3, "float32"), np.zeros(3, "float32")
    again(x, y, 3.0, 3)
    np.testing.assert_array_equal(y, 3 * x)
