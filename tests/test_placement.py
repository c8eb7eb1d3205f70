"""Heterogeneous execution: nodes a GPU target cannot run go to the host target, fusion never
crosses devices, the copies between devices are listed, and `tforge inspect --target opencl`
shows it. The op without a GPU strategy here is `relu` with `OpDef.gpu` switched off (every
real op has the generic GPU schedule), in DQN: each conv's relu then runs on the CPU."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tensorforge
from tensorforge.cli import main as tforge

pytestmark = pytest.mark.opencl

ort = pytest.importorskip("onnxruntime")
models = pytest.importorskip("tensorforge_onnx.models")


@pytest.fixture
def relu_on_host(monkeypatch):
    from tensorforge.graph import registry

    registry._ensure_loaded()
    monkeypatch.setitem(registry._OPS, "relu", dataclasses.replace(registry._OPS["relu"],
                                                                   gpu=False))


@pytest.fixture
def dqn(tmp_path, plugins, llvm_target, opencl_target):
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    return str(models.save("dqn", tmp_path / "dqn.onnx"))


def test_an_op_without_a_gpu_strategy_runs_on_the_host(dqn, relu_on_host):
    compiled = tensorforge.compile(dqn, target="opencl")
    pl = compiled.desc["placement"]
    assert pl["host"].startswith("llvm")
    assert {f["op"] for f in pl["fallbacks"]} == {"relu"}
    assert all("no GPU strategy on opencl" in f["why"] for f in pl["fallbacks"])
    devices = {k["group"]: k["device"] for k in compiled.desc["kernels"]}
    for k in compiled.desc["kernels"]:  # fusion never crosses devices
        assert ("relu" in k["ops"]) == (k["device"] == "llvm"), k
        assert k["ops"] == ["relu"] or "relu" not in k["ops"]
    assert set(devices.values()) == {"opencl", "llvm"}
    every_run = [c for c in pl["copies"] if c["when"].startswith("every run")]
    assert {(c["from"], c["to"]) for c in every_run} == {("opencl", "llvm"), ("llvm", "opencl")}
    inputs = models.example_inputs("dqn")
    (ref,) = ort.InferenceSession(dqn, providers=["CPUExecutionProvider"]).run(None, inputs)
    (out,) = compiled.run(inputs)
    assert float(np.abs(out - ref).max() / np.abs(ref).max()) < 1e-4


def test_inspect_shows_placement_and_copies(dqn, relu_on_host, capsys):
    assert tforge(["inspect", dqn, "--target", "opencl"]) == 0
    text = capsys.readouterr().out
    assert "placement: target opencl, host llvm" in text
    assert text.count("(relu): op 'relu' has no GPU strategy on opencl") == 4
    assert "copies between devices: 10 every run" in text  # input, 4 x 2 around relus, output
    assert "opencl -> llvm" in text and "llvm -> opencl" in text
    assert "[llvm]" in text and "[opencl]" in text


def test_without_fallbacks_everything_stays_on_the_device(dqn):
    compiled = tensorforge.compile(dqn, target="opencl")
    assert compiled.desc["placement"]["fallbacks"] == []
    assert {k["device"] for k in compiled.desc["kernels"]} == {"opencl"}


def test_the_executor_copies_only_where_the_placement_says(dqn, relu_on_host, monkeypatch):
    """Per run: the input and every host relu's output go up, every device conv's output and
    the graph output come down; the weights went up once, when the model was made."""
    from tensorforge.runtime.device import DeviceArray

    compiled = tensorforge.compile(dqn, target="opencl")
    copies = compiled.desc["placement"]["copies"]
    per_run = [c for c in copies if c["when"].startswith("every run")]
    assert [c for c in copies if c["when"] == "once, at load"]
    counts = {"up": 0, "down": 0}
    up, down = DeviceArray.copy_from, DeviceArray.copy_to
    monkeypatch.setattr(DeviceArray, "copy_from",
                        lambda self, a: (counts.__setitem__("up", counts["up"] + 1),
                                         up(self, a))[1])
    monkeypatch.setattr(DeviceArray, "copy_to",
                        lambda self, a: (counts.__setitem__("down", counts["down"] + 1),
                                         down(self, a))[1])
    inputs = models.example_inputs("dqn")
    first = compiled.run(inputs)[0]
    n_up = sum(c["to"] == "opencl" for c in per_run)
    n_down = sum(c["to"] == "llvm" for c in per_run)
    assert counts == {"up": n_up, "down": n_down}
    counts.update(up=0, down=0)
    np.testing.assert_array_equal(compiled.run(inputs)[0], first)
    assert counts == {"up": n_up, "down": n_down}


def test_a_group_the_device_fails_to_compile_falls_back_to_the_host(dqn, monkeypatch):
    import importlib

    from tensorforge.errors import TensorforgeError

    compile_mod = importlib.import_module("tensorforge.compiler.compile")

    real = compile_mod.lower_group

    def flaky(grp, target, *args, **kw):
        if target.kind.name == "opencl" and grp.master.op == "dense":
            raise TensorforgeError("no room for this kernel")
        return real(grp, target, *args, **kw)

    monkeypatch.setattr(compile_mod, "lower_group", flaky)
    with pytest.warns(UserWarning, match="cannot run on opencl .*no room for this kernel"):
        compiled = tensorforge.compile(dqn, target="opencl")
    kernels = compiled.desc["kernels"]
    assert {k["device"] for k in kernels if k["master"] == "dense"} == {"llvm"}
    assert {k["device"] for k in kernels if k["master"] == "conv2d"} == {"opencl"}
    assert {f["op"] for f in compiled.desc["placement"]["fallbacks"]} >= {"dense"}
    inputs = models.example_inputs("dqn")
    (ref,) = ort.InferenceSession(dqn, providers=["CPUExecutionProvider"]).run(None, inputs)
    (out,) = compiled.run(inputs)
    assert float(np.abs(out - ref).max() / np.abs(ref).max()) < 1e-4


def test_a_heterogeneous_package_runs_without_the_compiler(dqn, relu_on_host, tmp_path,
                                                          capsys):
    """One `.tfpkg` with both modules (the OpenCL source with its launch plans, the CPU
    library), each with its loader; `tensorforge.load` needs numpy, ctypes and pyopencl."""
    import json
    import zipfile

    from tensorforge.testing.isolated import run_without_compiler

    compiled = tensorforge.compile(dqn, target="opencl")
    pkg = compiled.export(tmp_path / "dqn.tfpkg")
    with zipfile.ZipFile(pkg) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert sorted((m["name"], m["loader"]) for m in manifest["modules"]) == [
        ("llvm", "cpu-library"), ("opencl", "device-library")]
    inputs = models.example_inputs("dqn")
    (got,) = run_without_compiler(pkg, inputs)
    np.testing.assert_array_equal(got, compiled.run(inputs)[0])
    loaded = tensorforge.load(pkg)
    assert loaded.desc["placement"]["fallbacks"] == compiled.desc["placement"]["fallbacks"]
    np.testing.assert_array_equal(loaded.run(inputs)[0], got)
    capsys.readouterr()
    assert tforge(["inspect", str(pkg)]) == 0
    text = capsys.readouterr().out
    assert "module opencl (device-library): opencl kernels, runs on this machine" in text
    assert "relu                                 generic [llvm]" in text
