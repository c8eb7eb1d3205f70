"""`tforge tune --target cuda` without a GPU fails before any work, saying why and where to
run it; compiling for cuda needs no GPU."""

import pytest

from tensorforge.testing.hardware import has_cuda

pytestmark = [pytest.mark.entry_points,
              pytest.mark.skipif(has_cuda(), reason="this machine has a CUDA device")]


def test_tune_for_cuda_without_a_gpu_fails_early(tforge, tmp_path):
    models = pytest.importorskip("tensorforge_onnx.models")
    model = models.save("dqn", tmp_path / "dqn.onnx")
    db = tmp_path / "t.db"
    proc = tforge("tune", str(model), "--target", "cuda", "--trials", "4", "--db", str(db))
    err = " ".join(proc.stderr.split())
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "cannot tune for cuda here" in err and "no NVIDIA driver or GPU" in err
    assert "on a machine with one" in err
    assert not db.exists()  # nothing was started


def test_compile_for_cuda_without_a_gpu_writes_the_package(tforge, tmp_path):
    models = pytest.importorskip("tensorforge_onnx.models")
    model = models.save("dqn", tmp_path / "dqn.onnx")
    proc = tforge("compile", str(model), "--target", "nvidia/h200", "-o",
                  str(tmp_path / "dqn.tfpkg"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "dqn.tfpkg").stat().st_size > 0
