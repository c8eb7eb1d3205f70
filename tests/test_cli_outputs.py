"""`tforge compile -o` and `tforge run --output` never destroy an input and never leave a
partial file; `tforge run --verify` names a broken kernel; `tforge inspect PACKAGE`.

Before: `tforge compile m.onnx -o m.onnx` overwrote the model; a failed export left
`<out>.tmp` behind and `np.save` a truncated .npy."""

from __future__ import annotations

import errno
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tensorforge
from tensorforge.cli import main as tforge

models = pytest.importorskip("tensorforge_onnx.models")
TARGET = "llvm -num-threads=1"


@pytest.fixture
def onnx_model(llvm_target, plugins, tmp_path: Path) -> Path:
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    return models.save("dqn", tmp_path / "dqn.onnx")


def _err(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())


def test_compile_refuses_to_write_over_its_input(onnx_model: Path, tmp_path: Path,
                                                 capsys) -> None:
    before = onnx_model.read_bytes()
    (tmp_path / "link.onnx").symlink_to(onnx_model)
    os.link(onnx_model, tmp_path / "hard.onnx")
    for out in (onnx_model, tmp_path / "link.onnx", tmp_path / "hard.onnx",
                tmp_path / "." / "dqn.onnx"):
        assert tforge(["compile", str(onnx_model), "-o", str(out)]) == 1
        assert "is the input" in _err(capsys)
    db = tmp_path / "tuning.db"
    db.write_bytes(b"records")
    assert tforge(["compile", str(onnx_model), "--tuning-db", str(db), "-o", str(db)]) == 1
    assert "is the input" in _err(capsys)
    assert onnx_model.read_bytes() == before and db.read_bytes() == b"records"


def test_a_failed_export_leaves_no_partial_file(onnx_model: Path, tmp_path: Path, capsys,
                                                monkeypatch) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "dqn.tfpkg"
    out.write_bytes(b"the previous package")
    real = zipfile.ZipFile.writestr
    calls = []

    def full_disk(self, name, data, *a, **kw):
        calls.append(name)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, name, data, *a, **kw)

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full_disk)
    assert tforge(["compile", str(onnx_model), "--target", TARGET, "-o", str(out)]) == 1
    err = _err(capsys)
    assert "cannot write" in err and "No space left on device" in err
    assert "internal error" not in err
    assert sorted(p.name for p in out_dir.iterdir()) == ["dqn.tfpkg"]  # no temp file left
    assert out.read_bytes() == b"the previous package"  # the old file is intact
    monkeypatch.setattr(zipfile.ZipFile, "writestr", real)
    assert tforge(["compile", str(onnx_model), "--target", TARGET, "-o", str(out)]) == 0
    assert tensorforge.load(out).kernels


def test_run_output_is_whole_or_absent_and_never_an_input(onnx_model: Path, tmp_path: Path,
                                                          capsys, monkeypatch) -> None:
    pkg = tmp_path / "dqn.tfpkg"
    assert tforge(["compile", str(onnx_model), "--target", TARGET, "-o", str(pkg)]) == 0
    model = tensorforge.load(pkg)
    (out_name,) = [s["name"] for s in model.output_specs]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    x = model.random_inputs()["input"]
    # an input file where an output would be written is refused, not overwritten
    np.save(out_dir / f"{out_name}.npy", x)
    assert tforge(["run", str(pkg), "--input", f"input={out_dir / out_name}.npy",
                   "--output", str(out_dir)]) == 1
    assert "is the input" in _err(capsys)
    np.testing.assert_array_equal(np.load(out_dir / f"{out_name}.npy"), x)
    (out_dir / f"{out_name}.npy").unlink()
    real_save = np.save

    def fail_midway(f, arr, *a, **kw):
        f.write(b"\x93NUMPY partial")
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(np, "save", fail_midway)
    assert tforge(["run", str(pkg), "--fill", "random", "--output", str(out_dir)]) == 1
    err = _err(capsys)
    assert "cannot write" in err and "Input/output error" in err
    assert list(out_dir.iterdir()) == []
    monkeypatch.setattr(np, "save", real_save)
    assert tforge(["run", str(pkg), "--fill", "random", "--output", str(out_dir)]) == 0
    assert np.load(out_dir / f"{out_name}.npy").shape == tuple(model.output_specs[0]["shape"])


def _break_kernel(monkeypatch, group: str) -> None:
    """Make the kernel of fused group `group` add 0.5 to its output after computing it."""
    from tensorforge.runtime import graph_executor

    real = graph_executor.GraphExecutor._function

    def patched(self, k):
        fn = real(self, k)
        if k.get("group") != group:
            return fn

        def broken(*args):
            fn(*args)
            args[-1][...] += 0.5

        return broken

    monkeypatch.setattr(graph_executor.GraphExecutor, "_function", patched)


def test_verify_names_the_broken_kernel(onnx_model: Path, tmp_path: Path, capsys,
                                        monkeypatch) -> None:
    assert tforge(["run", str(onnx_model), "--target", TARGET, "--verify"]) == 0
    out = capsys.readouterr().out
    assert "verify: all" in out and "kernels match the reference interpreter" in out
    kernels = tensorforge.compile(str(onnx_model), target=TARGET).desc["kernels"]
    victim = kernels[len(kernels) // 2]
    _break_kernel(monkeypatch, victim["group"])
    assert tforge(["run", str(onnx_model), "--target", TARGET, "--verify"]) == 1
    out = capsys.readouterr().out
    assert f"first divergent kernel #{len(kernels) // 2} {victim['group']!r}" in out
    assert " + ".join(victim["ops"]) in out and victim["schedule"] in out
    assert "wrong on the reference's own inputs" in out


def test_verify_a_package_against_its_model(onnx_model: Path, tmp_path: Path, capsys) -> None:
    pkg = tmp_path / "dqn.tfpkg"
    assert tforge(["compile", str(onnx_model), "--target", TARGET, "-o", str(pkg)]) == 0
    capsys.readouterr()
    assert tforge(["run", str(pkg), "--verify"]) == 1
    assert "give the model file it was compiled from with --model" in _err(capsys)
    assert tforge(["run", str(pkg), "--verify", "--model", str(onnx_model)]) == 0
    assert "kernels match" in capsys.readouterr().out
    other = models.save("dcgan", tmp_path / "dcgan.onnx")
    assert tforge(["run", str(pkg), "--verify", "--model", str(other)]) == 1
    assert "are not the fused groups of" in _err(capsys)


def test_inspect_a_package(onnx_model: Path, tmp_path: Path, capsys) -> None:
    pkg = tmp_path / "dqn.tfpkg"
    assert tforge(["compile", str(onnx_model), "--target", TARGET, "-o", str(pkg)]) == 0
    capsys.readouterr()
    assert tforge(["inspect", str(pkg)]) == 0
    text = capsys.readouterr().out
    assert "package format 2" in text and "member hashes verified" in text
    assert "CPU features needed:" in text and "kernels (" in text and "parameters (" in text
    assert tforge(["inspect", str(pkg), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["version"] == 2 and report["kernels"] and report["modules"][0]["runs_here"]
    sizes = [p["bytes"] for p in report["params"]]
    assert sizes == sorted(sizes, reverse=True) and report["params_bytes"] == sum(sizes)
