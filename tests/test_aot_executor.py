"""The ahead-of-time executor (issue 15): a model's kernel sequence as one generated function.

* every zoo model (`tensorforge_onnx.models`; the transformers narrowed) and ONNX models of
  tests/data run ahead-of-time and give outputs bit-identical to the graph executor over the
  same kernels (same kernels, same buffers: no tolerance);
* concurrent `run` from several threads stays correct (one arena per call);
* packages carry the entry, `load` uses it, and a description (graph.json) that does not match
  the entry's plan, or a signature file whose entry record differs from the library's, is a
  `PackageError`;
* models the entry cannot take run on the graph executor, and say why."""

from __future__ import annotations

import hashlib
import json
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge.errors import PackageError
from tensorforge.runtime.graph_executor import CompiledModel
from tensorforge.runtime.package_info import package_report
from tensorforge_onnx import models

DATA = Path(__file__).parent / "data"
SLOW = {"resnet18", "mobilenet_v2", "lstm_lm", "lstm_lm_opset13", "squeezenet1_1"}
SMALL = {"layers": 1, "d": 64, "heads": 4, "hidden": 128}
TRANSFORMER_CFG = {"bert": {**SMALL, "vocab": 100, "seq": 16},
                   "gpt2": {**SMALL, "vocab": 100, "seq": 16},
                   "vit_b_16": {**SMALL, "image": 48}}


def graph_twin(model: CompiledModel) -> CompiledModel:
    """The same kernels and description, run kernel by kernel from Python."""
    twin = CompiledModel(model.module, model.desc, dict(model.params), executor="graph")
    assert twin.executor_kind == "graph"
    return twin


def assert_same_outputs(model: CompiledModel, inputs: Any) -> None:
    aot = model.run(inputs)
    ref = graph_twin(model).run(inputs)
    assert len(aot) == len(ref)
    for a, r in zip(aot, ref):
        assert a.dtype == r.dtype and a.shape == r.shape
        assert np.array_equal(a, r, equal_nan=a.dtype.kind in "fc"), \
            f"max |aot - graph| = {np.max(np.abs(a.astype('float64') - r))}"


def _zoo_params() -> list[Any]:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
            for n in models.MODELS]


@pytest.mark.parametrize("name", _zoo_params())
def test_zoo_model_aot_equals_graph_executor(name: str, llvm_target, plugins) -> None:
    plugins.register("tensorforge_onnx.plugin")
    cfg = TRANSFORMER_CFG.get(name, {})
    model = tensorforge.compile(models.build(name, **cfg), target="llvm -num-threads=1")
    assert model.executor_kind == "aot", model.executor_reason
    assert model.executor_reason == ""
    inputs = models.example_inputs(name, **cfg)
    assert_same_outputs(model, inputs)
    # a second sample: floats changed, indices (token ids) kept in their range
    assert_same_outputs(model, {k: (v * np.float32(-1.5) + np.float32(0.25)).astype(v.dtype)
                                if v.dtype.kind == "f" else v for k, v in inputs.items()})


@pytest.mark.parametrize("path", ["families/densenet_tiny.onnx", "families/regnet_tiny.onnx",
                                  "families/shufflenet_tiny.onnx",
                                  "transformers/gpt2_lm_tiny.onnx"])
def test_onnx_test_model_aot_equals_graph_executor(path: str, llvm_target, plugins) -> None:
    """Tiny exports of tests/data: DenseNet's zero-copy concat views (producers write at
    offsets into one storage), grouped convs, channel shuffle, a GPT-2 block."""
    plugins.register("tensorforge_onnx.plugin")
    if not (DATA / path).exists():
        pytest.skip(f"{path} is not in tests/data")
    model = tensorforge.compile(str(DATA / path), target="llvm -num-threads=1")
    assert model.executor_kind == "aot", model.executor_reason
    assert_same_outputs(model, model.random_inputs(seed=0))


def test_concurrent_runs_match_runs_alone(llvm_target, plugins) -> None:
    """Eight threads, each with its own inputs, at once: each result is the one a call made
    alone gives (bit-identical), so no two calls share an arena."""
    plugins.register("tensorforge_onnx.plugin")
    model = tensorforge.compile(models.build("dqn"), target="llvm -num-threads=1")
    assert model.executor_kind == "aot"
    inputs = [model.random_inputs(seed=s) for s in range(8)]
    alone = [graph_twin(model).run(x)[0] for x in inputs]
    got: dict[int, list[np.ndarray]] = {i: [] for i in range(8)}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(i: int) -> None:
        try:
            start.wait()
            for _ in range(15):
                got[i].append(model.run(inputs[i])[0])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(8):
        assert all(np.array_equal(r, alone[i]) for r in got[i])
    assert model.executor.pool.created <= model.max_concurrency


def test_inputs_are_read_in_place_and_not_kept(llvm_target, plugins) -> None:
    """An input is read where it is (no copy) when the kernels can read it there; a
    non-contiguous one is copied first; the caller's array is never written."""
    plugins.register("tensorforge_onnx.plugin")
    model = tensorforge.compile(models.build("dqn"), target="llvm -num-threads=1")
    x = model.random_inputs(seed=3)["input"]
    before = x.copy()
    (ref,) = graph_twin(model).run({"input": x})
    (out,) = model.run({"input": x})
    assert np.array_equal(out, ref) and np.array_equal(x, before)
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    wide[..., ::2] = x  # a strided view with the same values
    (strided,) = model.run({"input": wide[..., ::2]})
    assert np.array_equal(strided, ref)
    (positional,) = model.run([x])
    assert np.array_equal(positional, ref)
    # outputs are fresh arrays the next call does not touch
    (again,) = model.run({"input": np.zeros_like(x)})
    assert np.array_equal(out, ref) and not np.shares_memory(out, again)


def test_bad_inputs_are_refused_as_before(llvm_target, plugins) -> None:
    from tensorforge.runtime.graph_executor import InputError

    plugins.register("tensorforge_onnx.plugin")
    model = tensorforge.compile(models.build("dqn"), target="llvm -num-threads=1")
    x = model.random_inputs()["input"]
    with pytest.raises(InputError, match="expected float32"):
        model.run({"input": x.astype("float64")})
    with pytest.raises(InputError, match="unknown input name"):
        model.run({"inp": x})
    with pytest.raises(InputError, match=r"given float32\[1, 4, 84\]"):
        model.run({"input": x[..., 0]})


def test_kernel_check_failure_names_the_node(llvm_target) -> None:
    """An index out of range, found by a kernel's bounds check inside the entry, is the same
    `KernelCheckError` (naming the node and the value) as on the graph executor."""
    from tensorforge.errors import DataCheckError
    from tensorforge.graph import Graph

    g = Graph("gather_model")
    idx = g.add_input("idx", (3,), "int64")
    table = g.add_const("table", np.arange(40, dtype="float32").reshape(10, 4))
    g.outputs = [g.add("relu", g.add("take", table, idx, axis=0))]
    model = tensorforge.compile(g, target="llvm -num-threads=1")
    assert model.executor_kind == "aot", model.executor_reason
    assert_same_outputs(model, {"idx": np.array([0, 9, 3])})
    for m in (model, graph_twin(model)):
        with pytest.raises(DataCheckError, match="17") as info:
            m.run({"idx": np.array([1, 17, 2])})
    assert "take" in str(info.value)


def test_data_dependent_output_size_runs_ahead_of_time(llvm_target, plugins) -> None:
    """NonZero: the kernel writes its count into a hidden output; the entry has it like any
    output and `run` returns as many entries as the count says."""
    import onnx
    from onnx import TensorProto, helper

    plugins.register("tensorforge_onnx.plugin")
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y"])],
        "nz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(proto)
    model = tensorforge.compile(proto, target="llvm -num-threads=1")
    x = np.random.default_rng(0).standard_normal((3, 5)).astype("float32")
    (got,) = model.run({"x": x})
    np.testing.assert_array_equal(got, np.stack(np.nonzero(np.maximum(x, 0))))
    assert_same_outputs(model, {"x": x})


# -- packages -------------------------------------------------------------------------------
@pytest.fixture
def dqn_pkg(llvm_target, plugins, tmp_path: Path) -> tuple[CompiledModel, Path]:
    plugins.register("tensorforge_onnx.plugin")
    model = tensorforge.compile(models.build("dqn"), target="llvm -num-threads=1")
    return model, Path(model.export(tmp_path / "dqn.tfpkg"))


def test_package_carries_the_entry_and_load_uses_it(dqn_pkg) -> None:
    model, path = dqn_pkg
    sig = json.loads(zipfile.ZipFile(path).read("lib.so.json"))
    assert sig["graph_entry"]["digest"] == model.executor.aot_plan.digest
    assert package_report(path)["executor"].startswith("ahead-of-time entry")
    loaded = tensorforge.load(path)
    assert loaded.executor_kind == "aot", loaded.executor_reason
    x = model.random_inputs(seed=5)
    assert np.array_equal(loaded.run(x)[0], model.run(x)[0])
    # a loaded package exports again with its entry
    again = tensorforge.load(loaded.export(path.with_name("again.tfpkg")))
    assert again.executor_kind == "aot"
    assert np.array_equal(again.run(x)[0], model.run(x)[0])


def _rewrite(src: Path, dst: Path, member: str, edit: Any) -> Path:
    """Copy a package with one JSON member edited and the manifest's hashes updated (an
    attacker who edits the manifest too)."""
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    doc = json.loads(members[member])
    edit(doc)
    members[member] = json.dumps(doc).encode()
    man = json.loads(members["manifest.json"])
    man["members"][member] = {"sha256": hashlib.sha256(members[member]).hexdigest(),
                              "size": len(members[member])}
    members["manifest.json"] = json.dumps(man).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    return dst


def test_description_edited_against_the_entry_is_refused(dqn_pkg, tmp_path: Path) -> None:
    """graph.json moves an intermediate within its storage (still a valid description, and
    the kernel bindings agree): the entry's plan says otherwise, so `load` refuses it."""
    _, path = dqn_pkg

    def shift(desc: dict) -> None:
        for v in desc["values"]:
            if v["kind"] == "intermediate":
                n = int(np.prod(v["shape"])) * np.dtype(v["dtype"]).itemsize
                desc["storages"][v["storage"]] += 64
                v["offset"] = v.get("offset", 0) + 64
                assert n > 0
                return

    bad = _rewrite(path, tmp_path / "moved.tfpkg", "graph.json", shift)
    with pytest.raises(PackageError, match="graph entry was built for plan"):
        tensorforge.load(bad)


def test_signature_file_entry_record_must_match_the_library(dqn_pkg, tmp_path: Path) -> None:
    _, path = dqn_pkg

    def swap(meta: dict) -> None:
        meta["graph_entry"]["digest"] = "0" * 64

    bad = _rewrite(path, tmp_path / "sig.tfpkg", "lib.so.json", swap)
    with pytest.raises(PackageError, match="graph entry"):
        tensorforge.load(bad)


def test_package_without_entry_runs_on_the_graph_executor(llvm_target, plugins,
                                                          tmp_path: Path) -> None:
    """A library exported without an entry (as before this executor existed) loads and runs
    kernel by kernel, saying why."""
    plugins.register("tensorforge_onnx.plugin")
    model = tensorforge.compile(models.build("dqn"), target="llvm -num-threads=1")
    model.executor.aot_plan = None  # what export asks the library for
    path = model.export(tmp_path / "old.tfpkg")
    assert package_report(path)["executor"] == \
        "graph executor (the library has no ahead-of-time entry)"
    loaded = tensorforge.load(path)
    assert loaded.executor_kind == "graph"
    assert "no graph entry" in loaded.executor_reason
    x = model.random_inputs()
    assert np.array_equal(loaded.run(x)[0], model.run(x)[0])


# -- fallbacks ------------------------------------------------------------------------------
def test_graph_executor_on_request(llvm_target, plugins, monkeypatch) -> None:
    plugins.register("tensorforge_onnx.plugin")
    monkeypatch.setenv("TENSORFORGE_EXECUTOR", "graph")
    model = tensorforge.compile(models.build("dqn"), target="llvm -num-threads=1")
    assert model.executor_kind == "graph"
    assert model.executor_reason == "the graph executor was asked for"
    monkeypatch.setenv("TENSORFORGE_EXECUTOR", "fast")
    with pytest.raises(tensorforge.TensorforgeError, match="executor 'fast'"):
        CompiledModel(model.module, model.desc, dict(model.params))


def test_kernels_of_several_modules_fall_back(llvm_target, plugins) -> None:
    """One module per device (placement): the graph executor runs it, and says so."""
    from tensorforge.runtime.module import ModuleSet

    plugins.register("tensorforge_onnx.plugin")
    model = tensorforge.compile(models.build("dqn"), target="llvm -num-threads=1")
    split = CompiledModel(ModuleSet({"cpu": model.module}), model.desc, dict(model.params))
    assert split.executor_kind == "graph"
    assert "several modules" in split.executor_reason
    x = model.random_inputs()
    assert np.array_equal(split.run(x)[0], model.run(x)[0])


def test_kernels_built_for_another_machine_fall_back(llvm_target) -> None:
    """Cross-compiled (AArch64 code on this machine): no kernel runs here, so no entry; the
    model still exports, and runs on the graph executor where it belongs."""
    import warnings

    from tensorforge.graph import Graph

    g = Graph("tiny")
    x = g.add_input("x", (4, 8), "float32")
    g.outputs = [g.add("relu", x)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = tensorforge.compile(g, target="llvm -mtriple=aarch64-linux-gnu -num-threads=1")
    assert model.executor_kind == "graph"
    assert "not a compiled C function of this machine" in model.executor_reason
    assert model.executor.aot_plan is None
