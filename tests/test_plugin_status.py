"""Honest plugin status and install hints: computed from what is importable (a target whose
code generator does not exist yet reads "planned" and flips to "ready" when it lands), one-line
errors for targets that cannot compile, hints for a source checkout or an index install, and
disabled plugins named with the variable that disabled them."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

import tensorforge.plugins.known as known
from tensorforge.errors import TargetError
from tensorforge.plugins import hookimpl
from tensorforge.plugins.status import missing_plugin_hint, plugin_readiness, target_status
from tensorforge.target import Target, TargetKind


def _kind(build: str, requires: tuple[str, ...] = ()) -> TargetKind:
    return TargetKind("soon", "soon", build=build, requires=requires,
                      distribution="soon-tensorforge")


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """An importable package `soon_backend` without a codegen module (yet)."""
    pkg = tmp_path / "soon_backend"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for name in [m for m in sys.modules if m.startswith("soon_backend")]:
        del sys.modules[name]


def test_status_flips_when_the_code_generator_lands(fake_package, plugins):
    kind = _kind("soon_backend.codegen:build")

    class Soon:
        @hookimpl
        def register_targets(self, register):
            register(kind)

    info = plugins.register(Soon(), "soon", distribution="soon-tensorforge")
    registered = plugins.registry.targets["soon"]
    st = target_status(registered)
    assert st.state == "planned" and st.detail == "codegen not built yet (planned)"
    assert plugin_readiness(info, plugins.registry) == "codegen not built yet (planned)"
    with pytest.raises(TargetError) as err:
        Target.parse("soon").kind.load_build()
    assert str(err.value) == ("target 'soon' cannot compile: codegen not built yet (planned); "
                              "ready: none")
    (fake_package / "codegen.py").write_text("def build(funcs, target):\n    return None\n")
    importlib.invalidate_caches()
    assert target_status(registered).ready
    assert plugin_readiness(info, plugins.registry) == "ready"
    assert callable(registered.load_build())


def test_missing_codegen_package_and_runtime(fake_package):
    st = target_status(_kind("no_such_backend_pkg.codegen:build"))
    assert st.state == "not installed" and "no module no_such_backend_pkg.codegen" in st.detail
    (fake_package / "codegen.py").write_text("def build(funcs, target):\n    return None\n")
    importlib.invalidate_caches()
    st = target_status(_kind("soon_backend.codegen:build",
                             requires=("json", "no_such_runtime_xyz=no-such-runtime")))
    assert st.state == "runtime missing"
    assert st.detail == "runtime missing: pip install no-such-runtime"
    assert target_status(_kind("soon_backend.codegen:build", requires=("json",))).ready
    with pytest.raises(ValueError, match="requires must be a tuple"):
        _kind("soon_backend.codegen:build", requires="pyopencl")


def test_status_does_not_import_the_code_generator(llvm_target):
    before = set(sys.modules)
    assert target_status(llvm_target.kind).ready
    assert "llvmlite" not in {m.split(".")[0] for m in set(sys.modules) - before}


@pytest.mark.entry_points
def test_tforge_plugins_and_targets_show_the_status(tforge):
    out = tforge("plugins").stdout
    rows = {line.split()[0]: line for line in out.splitlines() if line and line[0] != " "}
    assert rows["llvm"].endswith("ready") and rows["onnx"].endswith("ready")
    assert rows["vdla"].endswith("ready")  # its code generator landed: the status flipped
    assert rows["opencl"].endswith("ready")  # likewise
    for name in ("cuda", "metal"):  # and theirs
        assert rows[name].endswith("ready"), rows[name]
    doc = json.loads(tforge("plugins", "--json").stdout)
    cuda = next(p for p in doc["plugins"] if p["name"] == "cuda")
    assert cuda["status"] == "loaded" and cuda["targets"]["cuda"]["state"] == "ready"
    targets = tforge("targets").stdout
    assert " ready " in next(line for line in targets.splitlines()
                             if line.startswith("  llvm "))
    kinds = {k["name"]: k for k in json.loads(tforge("targets", "--json").stdout)["targets"]}
    assert {kinds[k]["status"] for k in ("llvm", "vdla", "opencl", "cuda", "metal")} == {"ready"}


@pytest.mark.entry_points
def test_compiling_for_a_gpu_tag_reaches_the_model(tforge, tmp_path):
    """nvidia/h200 compiles now (no GPU needed): the first problem is the missing file."""
    proc = tforge("compile", str(tmp_path / "never-read.onnx"), "--target", "nvidia/h200",
                  "-o", str(tmp_path / "x.tfpkg"))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "never-read.onnx' does not exist" in " ".join(proc.stderr.split())



def _installed_plugin(where, codegen: str | None = None) -> str:
    """A plugin distribution `soon-tensorforge` "installed" in ``where`` (a folder for
    PYTHONPATH: its package and a .dist-info with the entry point), registering the target kind
    `soon`, whose code generator `soon_tf.codegen` exists only when ``codegen`` gives its
    source. Returns the folder."""
    pkg = where / "soon_tf"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        "from tensorforge.plugins import hookimpl\n"
        "from tensorforge.target import TargetKind\n\n"
        "@hookimpl\n"
        "def register_targets(register):\n"
        "    register(TargetKind('soon', 'soon', build='soon_tf.codegen:build',\n"
        "                        description='a target whose code generator is not built'))\n")
    if codegen is not None:
        (pkg / "codegen.py").write_text(codegen)
    meta = where / "soon_tensorforge-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: soon-tensorforge\n"
                                   "Version: 0.1\n")
    (meta / "entry_points.txt").write_text("[tensorforge]\nsoon = soon_tf.plugin\n")
    return str(where)


@pytest.mark.entry_points
def test_an_installed_plugin_without_its_codegen_says_so_everywhere(tforge, tmp_path,
                                                                   relu_onnx):
    """The GPU and VDLA code generators have landed, so no first-party target shows the
    not-ready path any more: a plugin registered without its codegen module stands in, through
    the real entry points and `tforge` in a subprocess."""
    path = _installed_plugin(tmp_path / "site")
    planned = "codegen not built yet (planned)"
    plugins = tforge("plugins", pythonpath=path)
    assert plugins.returncode == 0, plugins.stderr
    row = next(line for line in plugins.stdout.splitlines() if line.startswith("soon "))
    assert "soon-tensorforge 0.1" in row and row.endswith(planned), row
    llvm = next(line for line in plugins.stdout.splitlines() if line.startswith("llvm "))
    assert llvm.endswith("ready")
    doc = json.loads(tforge("plugins", "--json", pythonpath=path).stdout)
    soon = next(p for p in doc["plugins"] if p["name"] == "soon")
    assert soon["status"] == "loaded" and soon["readiness"] == planned
    assert soon["targets"]["soon"] == {"state": "planned", "detail": planned}
    targets = tforge("targets", pythonpath=path).stdout
    row = next(line for line in targets.splitlines() if line.startswith("  soon "))
    assert planned in row and "soon-tensorforge" in row, row
    kinds = {k["name"]: k for k in json.loads(
        tforge("targets", "--json", pythonpath=path).stdout)["targets"]}
    assert kinds["soon"]["status"] == "planned" and kinds["llvm"]["status"] == "ready"
    assert planned in tforge("targets", "soon", pythonpath=path).stdout

    model = relu_onnx
    proc = tforge("compile", str(model), "--target", "soon", "-o", str(tmp_path / "one.tfpkg"),
                  pythonpath=path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "internal error" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr
    msg = " ".join(proc.stderr.split())
    assert msg.startswith(f"tforge: error: target 'soon' cannot compile: {planned}; ready: ")
    assert "llvm" in msg.split("ready: ")[1]
    assert not (tmp_path / "one.tfpkg").exists()


@pytest.mark.entry_points
def test_a_codegen_whose_dependency_is_missing_is_a_one_line_error(tforge, tmp_path,
                                                                  relu_onnx):
    """The codegen module exists (status "ready": status never imports it) but imports a module
    that is not installed: compiling names that module and the command that installs it."""
    path = _installed_plugin(tmp_path / "site", codegen="import no_such_sdk_xyz\n\n"
                             "def build(funcs, target):\n    return None\n")
    model = relu_onnx
    proc = tforge("compile", str(model), "--target", "soon", "-o", str(tmp_path / "one.tfpkg"),
                  pythonpath=path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert " ".join(proc.stderr.split()) == (
        "tforge: error: cannot compile for target 'soon': its code generator needs "
        "'no_such_sdk_xyz', which is not installed: pip install no_such_sdk_xyz")


# ---- install hints -----------------------------------------------------------------------------
def test_hint_in_a_source_checkout_is_an_editable_install(monkeypatch, repo_root):
    assert known.source_checkout() == repo_root  # these tests run from the checkout
    monkeypatch.chdir(repo_root)
    hint = known.install_hint(("tensorforge-frontend-onnx", "onnx"))
    assert hint.startswith("pip install -e packages/frontend-onnx")
    monkeypatch.chdir(repo_root.parent)
    hint = known.install_hint(("tensorforge-frontend-onnx", "onnx"))
    assert f"pip install -e {repo_root / 'packages' / 'frontend-onnx'}" in hint


def test_hint_from_an_index_install_is_the_extra(monkeypatch):
    monkeypatch.setattr(known, "source_checkout", lambda: None)
    assert known.install_hint(("tensorforge-frontend-onnx", "onnx")).startswith(
        "pip install 'tensorforge[onnx]'")


@pytest.mark.entry_points
@pytest.mark.parametrize("env, words", [
    ({"TENSORFORGE_PLUGINS": "llvm"},
     ["disabled by TENSORFORGE_PLUGINS='llvm'", "add onnx to TENSORFORGE_PLUGINS"]),
    ({"TENSORFORGE_DISABLE_PLUGINS": "onnx,cuda"},
     ["disabled by TENSORFORGE_DISABLE_PLUGINS='onnx,cuda'", "remove onnx"]),
])
def test_a_disabled_frontend_is_reported_as_disabled(tforge, tmp_path, env, words):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"")
    proc = tforge("compile", str(model), "-o", str(tmp_path / "m.tfpkg"), env=env)
    msg = " ".join(proc.stderr.split())
    assert proc.returncode == 1 and all(w in msg for w in words), msg
    assert "not installed" not in msg


@pytest.mark.entry_points
def test_hint_for_a_plugin_not_installed(installed_plugins, monkeypatch):
    monkeypatch.setattr(known, "source_checkout", lambda: None)
    assert missing_plugin_hint("tensorforge-nope", "nope") == (
        "tensorforge-nope is not installed; pip install 'tensorforge[nope]'  (or: pip install "
        "tensorforge-nope)")
    assert missing_plugin_hint("tensorforge-target-llvm", "llvm") == \
        "tensorforge-target-llvm is loaded"
