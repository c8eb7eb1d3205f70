"""Packages that check themselves: a tampered, truncated, foreign or mismatched `.tfpkg` is a
`PackageError` naming what is wrong, before its library is opened where it can be, and never a
crash, a constructor run of a swapped library, or a kernel pointed at another function.

Each case was reproduced before packages carried hashes and kernel tables (issue 12): a
swapped lib.so's constructor ran; an edited graph.json pointed a kernel at any exported
function, shrank shapes (out-of-bounds reads) or dropped a parameter (an abort in free()); a
package built for CPU features the host lacks died with SIGILL; an AArch64 package on x86 said
only "cannot open shared object file"."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tensorforge
from tensorforge.errors import PackageError
from tensorforge.graph import Graph
from tensorforge.runtime import cpu_features
from tensorforge.runtime import package as package_module
from tensorforge.runtime.arena import ClosedError


def _graph() -> Graph:
    rng = np.random.default_rng(0)
    g = Graph("tiny_cnn")
    x = g.add_input("x", (1, 16, 8, 8), "float32")
    w = g.add_const("w", rng.standard_normal((16, 16, 3, 3)).astype("float32") * 0.2)
    y = g.add("relu", g.add("conv2d", x, w, strides=(1, 1), pads=(1, 1, 1, 1)))
    fw = g.add_const("fw", rng.standard_normal((10, 16)).astype("float32"))
    y = g.add("reshape", g.add("global_avg_pool2d", y), shape=(1, 16))
    g.outputs = [g.add("dense", y, fw)]
    return g


X = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype("float32")


@pytest.fixture
def pkg(llvm_target, tmp_path: Path) -> Path:
    model = tensorforge.compile(_graph(), target="llvm -num-threads=1")
    return Path(model.export(tmp_path / "m.tfpkg"))


def rewrite(src: Path, dst: Path, edits: dict[str, Callable[[bytes], bytes]],
            rehash: bool = True, manifest: Callable[[dict], None] | None = None) -> Path:
    """Copy a package with members edited; `rehash` updates the manifest's hashes (an attacker
    who edits the manifest too), `manifest` edits the manifest itself."""
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    man = json.loads(members["manifest.json"])
    for name, fn in edits.items():
        members[name] = fn(members[name])
        if rehash:
            man["members"][name] = {"sha256": hashlib.sha256(members[name]).hexdigest(),
                                    "size": len(members[name])}
    if manifest is not None:
        manifest(man)
    members["manifest.json"] = json.dumps(man).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    return dst


def edit_json(fn: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        doc = json.loads(data)
        fn(doc)
        return json.dumps(doc).encode()

    return edit


def test_a_good_package_loads_runs_and_closes(pkg: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    digest = hashlib.sha256(pkg.read_bytes()).hexdigest()
    with tensorforge.load(pkg, sha256=digest.upper()) as model:
        assert not list((tmp_path / "tmp").iterdir())  # nothing left on disk once loaded
        (y,) = model.run({"x": X})
        assert y.shape == (1, 10)
    with pytest.raises(ClosedError):
        model.run({"x": X})


def test_the_sha256_pin_refuses_any_other_file(pkg: Path, tmp_path: Path) -> None:
    with pytest.raises(PackageError, match="not the pinned"):
        tensorforge.load(pkg, sha256="0" * 64)
    with pytest.raises(tensorforge.TensorforgeError, match="64 hex digits"):
        tensorforge.load(pkg, sha256="abc")


_CTOR = textwrap.dedent("""
    #include <stdio.h>
    __attribute__((constructor)) static void pwned(void) {{
        FILE *f = fopen("{marker}", "w");
        if (f) fclose(f);
    }}
    int fused_relu(void) {{ return 0; }}
""")


@pytest.fixture
def evil_lib(tmp_path: Path) -> tuple[bytes, Path]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    marker = tmp_path / "constructor-ran"
    (tmp_path / "evil.c").write_text(_CTOR.format(marker=marker))
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / "evil.so"),
                    str(tmp_path / "evil.c")], check=True)
    return (tmp_path / "evil.so").read_bytes(), marker


def test_a_swapped_library_is_refused_before_it_is_opened(pkg: Path, tmp_path: Path,
                                                          evil_lib) -> None:
    lib, marker = evil_lib
    bad = rewrite(pkg, tmp_path / "swapped.tfpkg", {"lib.so": lambda _: lib}, rehash=False)
    with pytest.raises(PackageError, match="member 'lib.so' (is .* bytes|does not match)"):
        tensorforge.load(bad)
    assert not marker.exists()  # its constructor never ran
    # with the manifest rewritten too, only a pin can tell: the pinned load refuses it
    forged = rewrite(pkg, tmp_path / "forged.tfpkg", {"lib.so": lambda _: lib})
    with pytest.raises(PackageError, match="not the pinned"):
        tensorforge.load(forged, sha256=hashlib.sha256(pkg.read_bytes()).hexdigest())
    assert not marker.exists()
    # unpinned: it carries no kernel table, which is read from the file before opening it
    with pytest.raises(PackageError, match="carries no kernel table.*nothing of it was run"):
        tensorforge.load(forged)
    assert not marker.exists()


def test_an_edited_graph_cannot_point_a_kernel_at_another_function(pkg: Path,
                                                                   tmp_path: Path) -> None:
    for target in ("free", "GOMP_parallel", "fused_relu_par0"):
        def point(doc: dict, target=target) -> None:
            doc["kernels"][0]["name"] = target
        bad = rewrite(pkg, tmp_path / "pointed.tfpkg", {"graph.json": edit_json(point)})
        with pytest.raises(PackageError, match=f"names kernel '{target}'"):
            tensorforge.load(bad)


def test_an_edited_signature_file_is_checked_against_the_library(pkg: Path,
                                                                 tmp_path: Path) -> None:
    def symbol(doc: dict) -> None:
        doc["functions"][0]["symbol"] = "free"

    bad = rewrite(pkg, tmp_path / "sym.tfpkg", {"lib.so.json": edit_json(symbol)})
    with pytest.raises(PackageError, match="disagrees with the library's kernel table"):
        tensorforge.load(bad)

    def extra(doc: dict) -> None:
        doc["functions"].append(dict(doc["functions"][0], name="free", symbol="free"))

    bad = rewrite(pkg, tmp_path / "extra.tfpkg", {"lib.so.json": edit_json(extra)})
    with pytest.raises(PackageError, match="only the library's own kernels"):
        tensorforge.load(bad)


def _conv_kernel(doc: dict) -> dict:
    return next(k for k in doc["kernels"] if "conv2d" in "".join(k["ops"]))


def test_shrunk_shapes_in_the_graph_are_refused(pkg: Path, tmp_path: Path) -> None:
    def shrink(doc: dict) -> None:  # the conv's input value claims to be 1 row high
        v = doc["values"][_conv_kernel(doc)["args"][0]]
        v["shape"][2] = 1

    bad = rewrite(pkg, tmp_path / "shrunk.tfpkg", {"graph.json": edit_json(shrink)})
    with pytest.raises(PackageError, match="expects shape"):
        tensorforge.load(bad)


def test_a_dropped_kernel_parameter_is_refused(pkg: Path, tmp_path: Path) -> None:
    def drop(doc: dict) -> None:
        del _conv_kernel(doc)["args"][1]

    bad = rewrite(pkg, tmp_path / "dropped.tfpkg", {"graph.json": edit_json(drop)})
    with pytest.raises(PackageError, match="passes 2 buffers to kernel"):
        tensorforge.load(bad)


def test_an_unhashed_edit_or_a_truncated_file_is_refused(pkg: Path, tmp_path: Path) -> None:
    bad = rewrite(pkg, tmp_path / "edited.tfpkg",
                  {"graph.json": lambda b: b.replace(b'"relu"', b'"tanh"')}, rehash=False)
    with pytest.raises(PackageError, match="'graph.json' does not match its SHA-256"):
        tensorforge.load(bad)
    data = pkg.read_bytes()
    for cut in (len(data) // 2, len(data) - 30, 100):
        (tmp_path / "cut.tfpkg").write_bytes(data[:cut])
        with pytest.raises(PackageError):
            tensorforge.load(tmp_path / "cut.tfpkg")
    added = rewrite(pkg, tmp_path / "added.tfpkg", {})
    with zipfile.ZipFile(added, "a") as z:
        z.writestr("extra.so", b"\x7fELF")
    with pytest.raises(PackageError, match="not listed: \\['extra.so'\\]"):
        tensorforge.load(added)


@pytest.mark.parametrize("version, match", [(3, "newer tensorforge .*upgrade"),
                                            (1, "older tensorforge .*compile the model again")])
def test_format_versions_are_checked_both_ways(pkg: Path, tmp_path: Path, version: int,
                                               match: str) -> None:
    bad = rewrite(pkg, tmp_path / "v.tfpkg", {},
                  manifest=lambda m: m.update(version=version))
    with pytest.raises(PackageError, match=match):
        tensorforge.load(bad)


def test_missing_cpu_features_are_named_before_anything_runs(pkg: Path, monkeypatch) -> None:
    """A host whose kernel does not list AVX-512 (a hypervisor that hides it, or an older
    CPU): a package needing it names the features and how to rebuild."""
    need = json.loads(zipfile.ZipFile(pkg).read("manifest.json"))["modules"][0]["requires"]
    if not need["features"] or need["arch"] != cpu_features.host_arch():
        pytest.skip("the host target needs no checked features")
    flags = cpuinfo = cpu_features.cpuinfo_flags() or set()
    names = cpu_features.CPUINFO_NAME[need["arch"]]
    dropped = need["features"][-1]
    flags = {f for f in cpuinfo if f != names[dropped]}
    monkeypatch.setattr(cpu_features, "cpuinfo_flags", lambda text=None: flags)
    with pytest.raises(PackageError, match=f"lacks: {dropped} .*--target llvm"):
        tensorforge.load(pkg)


def test_a_package_for_another_cpu_is_refused_not_sigill(llvm_target, tmp_path: Path) -> None:
    """`-mcpu=znver4` (the amd/zen4 tag's CPU): AVX-512 and AMD's SSE4a; the package loads only
    on a host that has them. Checked in a subprocess: a SIGILL would kill it, not the test."""
    model = tensorforge.compile(_graph(), target="llvm -mcpu=znver4 -num-threads=1")
    path = model.export(tmp_path / "zen4.tfpkg")
    need = json.loads(zipfile.ZipFile(path).read("manifest.json"))["modules"][0]["requires"]
    assert {"avx512f", "avx512bw", "sse4a"} <= set(need["features"])
    missing = cpu_features.missing_features(need["features"], need["arch"])
    np.save(tmp_path / "x.npy", X)
    code = ("import sys, numpy as np, tensorforge\n"
            "try:\n    m = tensorforge.load(sys.argv[1])\n"
            "except tensorforge.TensorforgeError as e:\n    print('REFUSED', e); sys.exit(0)\n"
            "print('RAN', m.run([np.load(sys.argv[2])])[0].shape)\n")
    proc = subprocess.run([sys.executable, "-c", code, path, str(tmp_path / "x.npy")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TENSORFORGE_PLUGINS": "none"})
    assert proc.returncode == 0, proc.stderr  # never a signal
    if missing:
        assert "REFUSED" in proc.stdout and missing[0] in proc.stdout
        assert "--target llvm" in proc.stdout
    else:
        assert "RAN" in proc.stdout


@pytest.mark.aarch64
def test_an_aarch64_package_on_another_machine_names_both(llvm_target, tmp_path: Path) -> None:
    if cpu_features.host_arch() == "aarch64":
        pytest.skip("this machine is AArch64")
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("no AArch64 cross linker (apt-get install gcc-aarch64-linux-gnu)")
    model = tensorforge.compile(_graph(), target="llvm -mtriple=aarch64-linux-gnu -mattr=+neon")
    path = model.export(tmp_path / "arm.tfpkg")
    with pytest.raises(PackageError, match=r"built for aarch64-linux .*this machine is "
                                           rf"{cpu_features.host_arch()}-linux"):
        tensorforge.load(path)
    # a manifest edited to claim this machine's architecture: the library's ELF header tells
    bad = rewrite(Path(path), tmp_path / "lying.tfpkg", {}, manifest=lambda m: m["modules"][0][
        "requires"].update(arch=cpu_features.host_arch(), features=[]))
    with pytest.raises(PackageError, match="its library is aarch64 code"):
        tensorforge.load(bad)



def test_a_package_for_another_os_names_both(pkg: Path, tmp_path: Path) -> None:
    """Same CPU, other OS (a manifest saying the library is for macOS): refused before the
    library is opened, naming the OS it was built for and this machine's."""
    other = "windows" if cpu_features.host_os() == "darwin" else "darwin"
    bad = rewrite(pkg, tmp_path / "other-os.tfpkg", {}, manifest=lambda m: m["modules"][0][
        "requires"].update(os=other))
    arch, here = cpu_features.host_arch(), cpu_features.host_os()
    with pytest.raises(PackageError, match=rf"built for {arch}-{other} .*but this machine is "
                                           rf"{arch}-{here}; compile the model for this machine"):
        tensorforge.load(bad)

def test_a_failed_load_leaves_no_temporary_files(pkg: Path, tmp_path: Path, monkeypatch,
                                                 evil_lib) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    forged = rewrite(pkg, tmp_path / "forged.tfpkg", {"lib.so": lambda _: evil_lib[0]})
    with pytest.raises(PackageError):
        tensorforge.load(forged)  # fails after the library was written out
    assert not list((tmp_path / "tmp").iterdir())


def test_parameters_are_held_once(pkg: Path) -> None:
    model = tensorforge.load(pkg)
    with model.executor.arena() as arena:
        for i, v in enumerate(model.desc["values"]):
            if v["kind"] == "const":
                p = model.params[v["param"]]
                assert arena.arrays[i] is p  # the kernels read the array `params` holds
                assert p.base is None or p.base.nbytes == p.nbytes  # not a view of a blob
                assert not p.flags.writeable


def test_packages_store_the_3x3_weights_and_rebuild_the_winograd_ones(llvm_target,
                                                                     tmp_path: Path) -> None:
    """Issue 16: a ResNet-18 package was 3.4x its ONNX file (Winograd's U = G g G^T is 4x the
    3x3 weights). Now the 3x3 (and unpacked) weights are stored and transformed at load, bit
    for bit the constants the compiled model uses."""
    model = tensorforge.compile(_graph(), target="llvm -num-threads=1 -winograd=4")
    assert any(k["ops"][0] == "conv2d_winograd_nchwc" for k in model.desc["kernels"])
    path = model.export(tmp_path / "w.tfpkg")
    stats = json.loads(zipfile.ZipFile(path).read("manifest.json"))["params"]
    assert stats["derived"] >= 1  # the Winograd weights
    assert stats["stored_bytes"] * 2 < stats["runtime_bytes"]
    loaded = tensorforge.load(path)
    assert set(loaded.params) == set(model.params)
    for k, a in model.params.items():
        assert loaded.params[k].tobytes() == a.tobytes(), k
    np.testing.assert_array_equal(loaded.run({"x": X})[0], model.run({"x": X})[0])


# -- damage found by the package fuzzer (tests/fuzz): internal errors out of the loader before
#    read_package and the loader turned them into PackageErrors naming the member
_EOCD = b"PK\x05\x06"


def test_a_central_directory_pointing_before_the_file(pkg: Path, tmp_path: Path) -> None:
    """Package fuzz seed 2157: the directory's offset, damaged, made zipfile seek to a
    negative position (ValueError: negative seek value)."""
    data = bytearray(pkg.read_bytes())
    end = data.rindex(_EOCD)
    (offset,) = struct.unpack_from("<I", data, end + 16)
    struct.pack_into("<I", data, end + 16, offset + 1000)
    bad = tmp_path / "seek.tfpkg"
    bad.write_bytes(bytes(data))
    with pytest.raises(PackageError, match=r"manifest.json is damaged or malformed "
                       r"\(ValueError: negative seek.*export it again"):
        tensorforge.load(bad)


def test_a_member_marked_compressed_that_is_not(pkg: Path, tmp_path: Path) -> None:
    """A flipped compression method: the stored bytes read as deflate data (zlib.error)."""
    data = bytearray(pkg.read_bytes())
    with zipfile.ZipFile(pkg) as z:
        info = z.getinfo("graph.json")
    assert info.compress_type == zipfile.ZIP_STORED
    struct.pack_into("<H", data, info.header_offset + 8, zipfile.ZIP_DEFLATED)  # local header
    central = data.index(b"PK\x01\x02")  # the directory entries: method at +10, name at +46
    while data[central + 46:central + 46 + len(b"graph.json")] != b"graph.json":
        central = data.index(b"PK\x01\x02", central + 4)
    struct.pack_into("<H", data, central + 10, zipfile.ZIP_DEFLATED)
    bad = tmp_path / "deflate.tfpkg"
    bad.write_bytes(bytes(data))
    with pytest.raises(PackageError, match=r"member 'graph.json' is damaged or malformed"):
        tensorforge.load(bad)


@pytest.mark.parametrize("edit, match", [
    # package fuzz seed 6107: an int target triple was an AttributeError in triple_arch
    (lambda d: d["target"].__setitem__("mtriple", 2),
     r"signature file's target 'mtriple' is 2 \(an integer\), not a string"),
    # package fuzz seed 6455: a list where a function name belongs was a TypeError
    (lambda d: d["functions"][0].__setitem__("name", [2, 255]),
     r"signature file's function 0 'name' is \[2, 255\] \(a list\), not a string"),
    (lambda d: d["functions"].__setitem__(0, 7), r"function 0 is 7 \(an integer\), not an obj"),
    (lambda d: d["functions"][0].__setitem__("params", {}), r"function 0 'params' is \{\}"),
    (lambda d: d.__setitem__("entry_name", 3), r"'entry_name' is 3"),
    # a well-typed target that is not the library's own record
    (lambda d: d["target"].__setitem__("mcpu", "generic"),
     r"the signature file's target .* is not the one in the library's kernel table"),
])
def test_signature_file_fields_of_the_wrong_type(pkg: Path, tmp_path: Path, edit,
                                                 match: str) -> None:
    def apply(doc: dict) -> None:
        doc.setdefault("target", {})
        edit(doc)

    bad = rewrite(pkg, tmp_path / "sig.tfpkg", {"lib.so.json": edit_json(apply)})
    with pytest.raises(PackageError, match=match):
        tensorforge.load(bad)


@pytest.mark.parametrize("requires, match", [
    ({"arch": 5}, r"requires 'arch' is 5 \(an integer\), not a string"),
    ({"features": "avx2"}, r"requires 'features' is \"avx2\" \(a string\), not a list"),
    ({"features": [1]}, r"requires 'features' is \[1\]"),
    ([], r"does not say what machine it was built for"),
])
def test_module_requirements_of_the_wrong_type(pkg: Path, tmp_path: Path, requires,
                                               match: str) -> None:
    def manifest(man: dict) -> None:
        man["modules"][0]["requires"] = (requires if not isinstance(requires, dict)
                                         else {**man["modules"][0]["requires"], **requires})

    bad = rewrite(pkg, tmp_path / "req.tfpkg", {}, manifest=manifest)
    with pytest.raises(PackageError, match=match):
        tensorforge.load(bad)


def test_a_module_name_does_not_choose_where_the_library_is_written(
        pkg: Path, tmp_path: Path, monkeypatch) -> None:
    """The entry's name was joined to the private directory: "/abs/path" or "../x" wrote the
    library outside it."""
    outside = tmp_path / "outside"
    written: list[str] = []
    real = package_module.open_library

    def spy(path: str, *args, **kw):
        written.append(path)
        return real(path, *args, **kw)

    monkeypatch.setattr(package_module, "open_library", spy)

    def manifest(man: dict) -> None:
        man["modules"][0]["name"] = str(outside)

    renamed = rewrite(pkg, tmp_path / "name.tfpkg", {}, manifest=manifest)
    with tensorforge.load(renamed) as model:
        (y,) = model.run({"x": X})
    assert y.shape == (1, 10)
    assert len(written) == 1 and not written[0].startswith(str(outside))
    assert Path(written[0]).parent.name.startswith("tfpkg-")
