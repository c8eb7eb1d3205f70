"""The example third-party plugin is discovered from its installed wheel, and uninstalling
it removes it. Builds the wheel, installs it into a throw-away venv that also sees this
interpreter's packages (so the installed tensorforge), runs ``tforge plugins --json`` and the
vendor's own tests there, uninstalls, and checks again."""

import json
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.entry_points]


def _run(*cmd, cwd=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_vendor_plugin_wheel_install_and_uninstall(repo_root, tmp_path, tforge):
    src = tmp_path / "vendor-plugin"
    shutil.copytree(repo_root / "examples" / "vendor-plugin", src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(tmp_path / "wheels"), str(src))
    (wheel,) = (tmp_path / "wheels").glob("acme_tensorforge-0.1.0-*.whl")

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    # Like --system-site-packages, but for whatever environment runs the tests (a venv too):
    # the new venv's own site-packages come first, then ours (with their .pth files).
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    lines = [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()]
    (Path(purelib.stdout.strip()) / "_outer_env.pth").write_text("\n".join(lines) + "\n")
    pip = [python, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run(*pip, "install", "--no-deps", "--no-index", str(wheel))

    proc = tforge("plugins", "--json", python=python)
    assert proc.returncode == 0, proc.stderr
    listed = {p["name"]: p for p in json.loads(proc.stdout)["plugins"]}
    acme = listed["acme"]
    assert acme["status"] == "loaded", acme["error"]
    assert acme["distribution"] == "acme-tensorforge" and acme["version"] == "0.1.0"
    assert acme["registered"] == {"targets": ["acme"], "target_tags": ["acme/a1"],
                                  "cost_models": ["acme-roofline"]}
    assert str(env_dir) in _run(python, "-c", "import tensorforge_acme as m; print(m.__file__)"
                                ).stdout  # from the wheel, not the source tree
    assert listed["llvm"]["status"] == "loaded"  # the first-party plugins are still there
    target = json.loads(tforge("targets", "--json", "acme/a1", python=python).stdout)
    assert target["options"] == {"cores": 16, "sram-kb": 1024}

    # The vendor's own tests pass against the installed wheel.
    _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(src),
         str(src / "tests"), cwd=src)

    _run(*pip, "uninstall", "-y", "acme-tensorforge")
    proc = tforge("plugins", "--json", python=python)
    assert "acme" not in {p["name"] for p in json.loads(proc.stdout)["plugins"]}
    gone = tforge("targets", "acme", python=python)
    assert gone.returncode == 1 and "unknown target 'acme'" in gone.stderr
