"""One compile for every size within bounds (`compiler.symbolic`, issue 13): a BERT-like
encoder (the zoo's `dynamic=1` model) and a PyTorch export with a dynamic sequence axis
(`tests/data/transformers_dynamic/`, `benchmarks/export_transformers.py --dynamic`) compiled
once with ``input_shapes={...: (1, "seq<=B")}`` match ONNX Runtime on the same model at
lengths 1, 7, 32 and the bound (rtol 1e-4, atol 1e-5 x max |output|); no length compiles
anything after `compile`; out-of-bound and inconsistent lengths are clear errors; a package
carries the symbolic signature and runs at any length after `tensorforge.load`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorforge.errors import TensorforgeError

ort = pytest.importorskip("onnxruntime")

SMALL = {"layers": 1, "d": 32, "heads": 2, "hidden": 64, "vocab": 50}
NAMES = ("input_ids", "token_type_ids", "attention_mask")
BOUND = 128
LENGTHS = (1, 7, 32, BOUND)
GPT2 = Path(__file__).resolve().parent / "data" / "transformers_dynamic" / \
    "gpt2_lm_tiny.dynseq.onnx"


def _session(path: Path) -> object:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _check(out: np.ndarray, ref: np.ndarray) -> None:
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())


def _bert_inputs(seq: int) -> dict[str, np.ndarray]:
    from tensorforge_onnx import models

    return models.example_inputs("bert", seq=seq, **SMALL)


@pytest.fixture(scope="module")
def dynamic_bert(tmp_path_factory):
    from tensorforge_onnx import models

    path = tmp_path_factory.mktemp("sym") / "bert_dynamic.onnx"
    models.save("bert", path, dynamic=1, **SMALL)
    return path


def _no_recompile(monkeypatch) -> None:
    """After `compile`, any compile (a per-length specialization) fails the test."""
    import importlib

    compile_mod = importlib.import_module("tensorforge.compiler.compile")

    def refuse(*_a, **_k):
        raise AssertionError("a length was compiled after the symbolic compile")

    monkeypatch.setattr(compile_mod, "plan", refuse)


@pytest.mark.slow
def test_bert_compiled_once_runs_every_length(dynamic_bert, llvm_target, plugins, tmp_path,
                                              monkeypatch, capsys) -> None:
    import tensorforge
    from tensorforge.runtime.graph_executor import InputError
    from tensorforge.runtime.symbolic import SymbolicModel

    plugins.register("tensorforge_onnx.plugin")
    sess = _session(dynamic_bert)
    model = tensorforge.compile(str(dynamic_bert), llvm_target,
                                input_shapes={k: (1, f"seq<={BOUND}") for k in NAMES})
    assert isinstance(model, SymbolicModel) and model.dims == {"seq": (1, BOUND)}
    sym = model.desc["symbolic"]
    assert sym["kernel_sizes"] and all(n == ["seq"] for n in sym["kernel_sizes"].values())
    # the memory plan is the one at the bound: storages hold BOUND rows
    assert model.input_specs[0]["shape"] == (1, "seq")
    # the dense layers and the fused attention keep their strategies over the symbolic length
    assert any("dense_packed" in k["schedule"] for k in model.desc["kernels"])
    assert [k["schedule"] for k in model.desc["kernels"] if k["master"] == "attention"] == \
        ["strategy attention/blocked"] * SMALL["layers"]
    # kernels that take sizes run kernel by kernel (no ahead-of-time entry)
    assert model.executor.kind == "graph" and "scalar" in model.executor.reason
    _no_recompile(monkeypatch)
    for seq in LENGTHS + (5,):
        x = _bert_inputs(seq)
        _check(model.run(x)[0], sess.run(None, x)[0])

    with pytest.raises(InputError, match=rf"seq = {BOUND + 1} .*outside the bounds.*"
                                         rf"1 <= seq <= {BOUND}"):
        model.run(_bert_inputs(BOUND + 1))
    x = _bert_inputs(8)
    x["attention_mask"] = x["attention_mask"][:, :6]
    with pytest.raises(InputError, match="seq is 8 in input 'input_ids' but 6 in input "
                                         "'attention_mask'"):
        model.run(x)
    with pytest.raises(InputError, match="input_ids"):  # a static dim that differs
        model.run({**_bert_inputs(8), "input_ids": np.zeros((2, 8), np.int64)})

    # the package carries the symbolic signature: load runs any length in the bounds
    path = model.export(tmp_path / "bert.tfpkg")
    model.close()
    loaded = tensorforge.load(path)
    assert isinstance(loaded, SymbolicModel) and loaded.dims == {"seq": (1, BOUND)}
    for seq in (3, BOUND):
        x = _bert_inputs(seq)
        _check(loaded.run(x)[0], sess.run(None, x)[0])
    with pytest.raises(InputError, match="outside the bounds"):
        loaded.run(_bert_inputs(BOUND + 3))
    assert loaded.output_specs[0]["shape"] == (1, "seq", SMALL["d"])
    assert loaded.random_inputs(seq=6)["input_ids"].shape == (1, 6)
    loaded.close()
    # `tforge run` takes it at any length
    from tensorforge import cli

    files = []
    for name, arr in _bert_inputs(9).items():
        np.save(tmp_path / f"{name}.npy", arr)
        files += ["--input", f"{name}={tmp_path / name}.npy"]
    assert cli.main(["run", str(path), *files]) == 0
    assert "last_hidden_state: float32[1, 9, 32]" in capsys.readouterr().out


@pytest.mark.slow
def test_torch_export_compiled_once(llvm_target, plugins, monkeypatch) -> None:
    import tensorforge
    from tensorforge.runtime.symbolic import SymbolicModel

    plugins.register("tensorforge_onnx.plugin")
    sess = _session(GPT2)
    model = tensorforge.compile(str(GPT2), llvm_target,
                                input_shapes={"input_ids": (1, f"seq<={BOUND}")})
    assert isinstance(model, SymbolicModel)
    assert sum(k["master"] == "attention" for k in model.desc["kernels"]) == 2  # fused
    _no_recompile(monkeypatch)
    rng = np.random.default_rng(0)
    for seq in LENGTHS:
        x = {"input_ids": rng.integers(0, 256, (1, seq)).astype(np.int64)}
        _check(model.run(x)[0], sess.run(None, x)[0])
    model.close()


def test_symbolic_kernel_takes_the_size(llvm_target) -> None:
    """A te kernel over a `size_var` extent: the size is its last argument; a dense-like
    reduction and an epilogue, generic schedule, right at sizes that do not tile."""
    from tensorforge import te
    from tensorforge.driver import build, lower
    from tensorforge.ops.schedule_generic import schedule_generic

    n = te.size_var("seq")
    a = te.placeholder((1, n, 16), "float32", name="A")
    w = te.placeholder((16, 8), "float32", name="W")
    k = te.reduce_axis((0, 16), name="k")
    c = te.compute((1, n, 8), lambda b, i, j: te.sum(a[b, i, k] * w[k, j], axis=k), name="C")
    d = te.compute((1, n, 8), lambda b, i, j: c[b, i, j] + 1.0, name="D")
    f = lower(schedule_generic([d], llvm_target), [a, w, d, n], name="k1", target=llvm_target)
    fn = build([f], target=llvm_target)["k1"]
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((16, 8)).astype("f4")
    for size in (1, 7, 33):
        av = rng.standard_normal((1, size, 16)).astype("f4")
        out = np.empty((1, size, 8), "f4")
        fn(av, wv, out, size)
        np.testing.assert_allclose(out, av @ wv + 1, rtol=1e-5, atol=1e-5)


def test_loop_partition_of_a_symbolic_extent(llvm_target) -> None:
    """A split by 8 of a loop over `n`: a main loop without guards, a guarded tail; right at
    sizes below, at and past a multiple of 8."""
    from tensorforge import te
    from tensorforge.driver import build, lower

    n = te.size_var("n")
    a = te.placeholder((n, 4), "float32", name="A")
    b = te.compute((n, 4), lambda i, j: a[i, j] * 2.0, name="B")
    s = te.create_schedule(b.op)
    io, _ = s[b].split(b.op.axis[0], factor=8)
    f = lower(s, [a, b, n], name="k2", target=llvm_target)
    text = str(f)
    main, tail = text.split("for i.outer in range(")[1:3]
    assert "likely" not in main and "likely" in tail
    fn = build([f], target=llvm_target)["k2"]
    for size in (1, 7, 8, 9, 33):
        av = np.arange(size * 4, dtype="f4").reshape(size, 4)
        out = np.full((size, 4), np.nan, "f4")
        fn(av, out, size)
        np.testing.assert_array_equal(out, av * 2)


def test_plans_that_differ_fall_back_to_specializations(dynamic_bert, llvm_target, plugins,
                                                         monkeypatch) -> None:
    import importlib

    import tensorforge
    from tensorforge.compiler.dynamic import DynamicModel

    sym = importlib.import_module("tensorforge.compiler.symbolic")

    def differ(*_a, **_k):
        raise sym.NotSymbolic("the fused groups differ between sizes of 'seq'")

    plugins.register("tensorforge_onnx.plugin")
    monkeypatch.setattr(sym, "_Plans", differ)
    with pytest.warns(UserWarning, match="cannot be compiled once.*groups differ.*static "
                                         "specialization per size"):
        model = tensorforge.compile(str(dynamic_bert), llvm_target,
                                    input_shapes={k: (1, "seq<=8") for k in NAMES})
    assert isinstance(model, DynamicModel)
    model.close()


def test_bounds_of_two_sizes_are_specialized(dynamic_bert, llvm_target, plugins) -> None:
    import tensorforge
    from tensorforge.compiler.dynamic import DynamicModel

    plugins.register("tensorforge_onnx.plugin")
    with pytest.warns(UserWarning, match="1<=seq<=2 holds 2 sizes"):
        model = tensorforge.compile(str(dynamic_bert), llvm_target,
                                    input_shapes={k: (1, "seq<=2") for k in NAMES})
    assert isinstance(model, DynamicModel)
    assert model.run(_bert_inputs(1))[0].shape == (1, 1, SMALL["d"])
    model.close()


def test_fit_of_symbolic_dims() -> None:
    from tensorforge.compiler.symbolic import NotSymbolic, _fit, dim_json

    assert _fit("seq", 512, 768, 511, 768, 255, 768) == 768  # static
    assert _fit("seq", 512, 512, 511, 511, 255, 255) == ("seq", 1, 0)
    assert _fit("seq", 512, 1536, 511, 1533, 255, 765) == ("seq", 3, 0)  # fused QKV rows
    assert _fit("seq", 512, 513, 511, 512, 255, 256) == ("seq", 1, 1)  # a class token
    assert dim_json(("seq", 1, 0)) == ["seq", 1, 0]
    with pytest.raises(NotSymbolic, match="not a \\* seq \\+ b"):
        _fit("seq", 512, 512 * 512, 511, 511 * 511, 255, 255 * 255)  # seq * seq


def test_symbolic_model_checks_its_description() -> None:
    from tensorforge.errors import PackageError
    from tensorforge.runtime.symbolic import SymbolicModel, eval_dim

    assert eval_dim(["seq", 3, 1], {"seq": 4}) == 13 and eval_dim(5, {}) == 5
    with pytest.raises(PackageError, match="symbolic"):
        SymbolicModel(None, {"inputs": [], "kernels": []}, {})
    with pytest.raises(PackageError, match="size 'n', which is not a dim"):
        SymbolicModel(None, {"symbolic": {"dims": {"seq": [1, 4]},
                                          "kernel_sizes": {"0": ["n"]}}}, {})


def test_unknown_dynamic_mode_is_an_error(dynamic_bert) -> None:
    import tensorforge

    with pytest.raises(TensorforgeError, match="dynamic='x'"):
        tensorforge.compile(str(dynamic_bert), "llvm", input_shapes={"input_ids": (1, "s<=4")},
                            dynamic="x")
