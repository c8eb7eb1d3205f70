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
    # exporting over the loaded library's own file replaces it (a new file), so the mapping
    # the process runs from is not rewritten under it
    again.export_library(tmp_path / "again.so")
    again(x, y, 1.0, 3)
    np.testing.assert_array_equal(y, 4 * x)


def _with_sidecar(tmp_path, lib, edit):
    """A copy of `lib` (a new file: rewriting a loaded library in place would crash) whose
    sidecar was edited by `edit(meta)`."""
    copy = tmp_path / f"libcopy{len(list(tmp_path.iterdir()))}.so"
    shutil.copyfile(lib, copy)
    meta = json.loads((lib.parent / "libk.so.json").read_text())
    edit(meta)
    (tmp_path / f"{copy.name}.json").write_text(json.dumps(meta))
    return copy


def test_the_sidecar_is_checked_against_the_library_kernel_table(tmp_path, lib):
    """An edited sidecar cannot point a kernel at another exported function (here libc's
    `free`, reachable through the library) or change its parameters."""
    from tensorforge.errors import PackageError

    def to_free(meta):
        meta["functions"][0]["symbol"] = "free"

    with pytest.raises(PackageError, match="disagrees with the library's kernel table"):
        load_module(_with_sidecar(tmp_path, lib, to_free))

    def drop_param(meta):
        del meta["functions"][0]["params"][2]

    with pytest.raises(PackageError, match="params: .* in the signature file"):
        load_module(_with_sidecar(tmp_path, lib, drop_param))

    def add_free(meta):
        meta["functions"].append(dict(meta["functions"][0], name="free", symbol="free"))

    with pytest.raises(PackageError, match="lists functions the library's kernel table does not"):
        load_module(_with_sidecar(tmp_path, lib, add_free))


@pytest.mark.parametrize("version, match", [(1, "older tensorforge"), (3, "newer tensorforge")])
def test_library_format_versions_are_checked_both_ways(tmp_path, lib, version, match):
    from tensorforge.errors import PackageError

    with pytest.raises(PackageError, match=match):
        load_module(_with_sidecar(tmp_path, lib, lambda m: m.update(version=version)))


def test_a_library_without_a_kernel_table_is_refused(tmp_path):
    from tensorforge.errors import PackageError

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "k.c").write_text(_C)
    so = tmp_path / "plain.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(tmp_path / "k.c")], check=True)
    (tmp_path / "plain.so.json").write_text(json.dumps(
        {"format": LIBRARY_FORMAT, "version": 2, "functions": []}))
    with pytest.raises(PackageError, match="carries no kernel table"):
        load_module(so)


_FAILING = """
#include <stdint.h>
int32_t check(const float *x, float *y) {
    for (int i = 0; i < 4; ++i) { if (x[i] < 0) return 1; y[i] = x[i]; }
    return 0;
}
"""


def test_the_executor_names_the_graph_kernel_of_a_failing_status(tmp_path):
    """A kernel's non-zero status, on the executor's bound fast path, is a KernelError naming
    the graph kernel (group, ops) and the kernel's own message; the arena is returned."""
    from tensorforge.runtime.cfunction import KernelError
    from tensorforge.runtime.graph_executor import CompiledModel

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    functions = [{"name": "check", "symbol": "check", "asserts": ["x must be non-negative"],
                  "params": [{"name": "x", "kind": "buffer", "dtype": "float32", "shape": [4],
                              "writes": False},
                             {"name": "y", "kind": "buffer", "dtype": "float32", "shape": [4],
                              "writes": True}]}]
    (tmp_path / "c.c").write_text(_FAILING + kernel_table_c_source(kernel_table_bytes(functions)))
    so = tmp_path / "libc.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(tmp_path / "c.c")], check=True)
    (tmp_path / "libc.so.json").write_text(json.dumps(
        {"format": LIBRARY_FORMAT, "version": 2, "functions": functions}))
    desc = {"inputs": [{"name": "x", "shape": [4], "dtype": "float32", "value": 0}],
            "outputs": [{"name": "y", "shape": [4], "dtype": "float32", "value": 1}],
            "values": [{"name": "x", "shape": [4], "dtype": "float32", "kind": "input"},
                       {"name": "y", "shape": [4], "dtype": "float32", "kind": "output"}],
            "storages": [], "kernels": [{"name": "check", "group": "fused_gather_7",
                                         "ops": ["gather"], "args": [0, 1], "outputs": 1}]}
    model = CompiledModel(load_module(so), desc, {}, max_concurrency=1)
    np.testing.assert_array_equal(model.run([np.ones(4, "float32")])[0], np.ones(4))
    with pytest.raises(KernelError, match=r"graph kernel 'fused_gather_7' \(gather\): kernel "
                                          r"'check': assertion failed: x must be non-negative"
                       ) as info:
        model.run([-np.ones(4, "float32")])
    assert info.value.status == 1 and info.value.kernel == "check"
    model.run([np.ones(4, "float32")])  # the arena came back
