"""llvm target options are checked before LLVM sees them: bad CPU and feature names, 32-bit
CPUs, fatal features, out-of-range integers and unknown enum values are TargetErrors that
list the valid values; a CPU whose features this host lacks compiles with a warning and its
kernels refuse to run here. Before this check, several of these strings aborted the process
inside LLVM (the subprocess tests show the process now ends with a clean error)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.errors import TargetError, TensorforgeError
from tensorforge.target import Target
from tensorforge_llvm import host, jit, options
from tensorforge_llvm.codegen import HostFeatureWarning

X86 = platform.machine() in ("x86_64", "AMD64")
X86_TRIPLE = "x86_64-unknown-linux-gnu"
ARM_TRIPLE = "aarch64-unknown-linux-gnu"


@pytest.mark.parametrize("text, message", [
    ("llvm -mcpu=nonsensecpu", r"does not know the CPU 'nonsensecpu'.*CPUs, closest first: "),
    ("llvm -mcpu=skylake-avx51", r"Did you mean 'skylake-avx512'\?.*closest first: "
                                 r"skylake-avx512"),
    (f"llvm -mtriple={X86_TRIPLE} -mcpu=i686", r"'i686' is a 32-bit CPU.*x86-64-v4"),
    (f"llvm -mtriple={X86_TRIPLE} -mcpu=pentium4", r"32-bit CPU"),
    (f"llvm -mtriple={ARM_TRIPLE} -mcpu=znver3", r"does not know the CPU 'znver3' for aarch64"
                                                  r".*neoverse-n1"),
    (f"llvm -mtriple={X86_TRIPLE} -mattr=avx2", r"item 'avx2' is not \+feature or -feature"),
    (f"llvm -mtriple={X86_TRIPLE} -mattr=+avx2,,+fma", r"item '' is not \+feature"),
    (f"llvm -mtriple={X86_TRIPLE} -mattr=+avx3", r"does not know the feature 'avx3'.*"
                                                 r"closest first: avx, avx2"),
    (f"llvm -mtriple={X86_TRIPLE} -mattr=-sse2", r"'-sse2' is not supported.*ABI"),
    (f"llvm -mtriple={X86_TRIPLE} -mattr=-64bit", r"'-64bit' is not supported"),
    (f"llvm -mtriple={X86_TRIPLE} -mattr=+32bit-mode", r"changes the code mode"),
    (f"llvm -mtriple={ARM_TRIPLE} -mattr=+reserve-x3", r"'\+reserve-x3' is not supported"),
    ("llvm -mtriple=riscv64-unknown-linux-gnu", r"x86_64 and aarch64 only"),
    ("llvm -mtriple=nonsense", r"x86_64 and aarch64 only"),
    ("llvm -num-threads=-3", r"-num-threads=-3 is out of range: it takes 0..1024"),
    ("llvm -num-threads=100000", r"-num-threads=100000 is out of range: it takes 0..1024"),
    ("llvm -num-threads=two", r"-num-threads expects an int \(0..1024\), got 'two'"),
    ("llvm -opt-level=9", r"-opt-level=9 is out of range: it takes 0..3"),
    ("llvm -winograd=7", r"-winograd does not take '7'.*valid values.*: 2, 4, auto, off"),
    ("llvm -winograd=of", r"Did you mean 'off'\?"),
])
def test_bad_options_are_target_errors_listing_valid_values(llvm_target, text, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(text)


def test_valid_options_still_parse(llvm_target):
    for text in ("llvm -mcpu=znver3", "amd/zen4", "arm/neoverse-v1", "llvm -num-threads=1024",
                 "llvm -winograd=off -opt-level=0", f"llvm -mtriple={X86_TRIPLE} "
                 "-mattr=+avx2,+fma,-avx512f", str(llvm_target), "llvm -mcpu=generic"):
        assert Target.parse(str(Target.parse(text))) == Target.parse(text)


def test_tables_come_from_llvm_and_are_cached(llvm_target, tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORFORGE_CACHE_DIR", str(tmp_path))
    options.llvm_tables.cache_clear()
    try:
        tables = options.llvm_tables("x86_64")
        assert {"znver3", "skylake-avx512", "x86-64"} <= tables.cpus
        assert {"avx2", "avx512f", "fma"} <= tables.features
        cached = list(tmp_path.glob("llvm-targets-*-x86_64.json"))
        assert len(cached) == 1 and "znver3" in json.loads(cached[0].read_text())["cpus"]
    finally:
        options.llvm_tables.cache_clear()


def test_parse_help_reads_llvm_text():
    text = ("Available CPUs for this target:\n\n  alpha   - Select the alpha processor.\n"
            "  beta-2  - Select the beta-2 processor.\n\nAvailable features for this target:\n\n"
            "  +x  - no\n  feat1    - Feature one.\n\nUse +feature to enable a feature.\n")
    assert options.parse_help(text) == (["alpha", "beta-2"], ["feat1"])
    with pytest.raises(ValueError):
        options.parse_help("LLVM ERROR: something else")


# -- no abort: every accepted CPU and single feature compiles in a subprocess -----------------
_COMPILE_ALL = textwrap.dedent("""
    import sys
    import llvmlite.binding as llvm
    llvm.initialize_all_targets(); llvm.initialize_all_asmprinters()
    IR = '''
    define void @k(ptr noalias %a, ptr noalias %b, i64 %n) {
    entry:
      br label %loop
    loop:
      %i = phi i64 [0, %entry], [%i2, %loop]
      %pa = getelementptr float, ptr %a, i64 %i
      %x = load float, ptr %pa
      %y = call float @llvm.fmuladd.f32(float %x, float %x, float 1.0)
      %z = call float @llvm.exp.f32(float %y)
      %iw = fptosi float %z to i64
      %m = mul i64 %iw, %i
      %f = sitofp i64 %m to float
      %pb = getelementptr float, ptr %b, i64 %i
      store float %f, ptr %pb
      %i2 = add i64 %i, 1
      %c = icmp slt i64 %i2, %n
      br i1 %c, label %loop, label %exit
    exit:
      ret void
    }
    declare float @llvm.fmuladd.f32(float, float, float)
    declare float @llvm.exp.f32(float)
    '''
    triple = sys.argv[1]
    for line in sys.stdin:
        cpu, attr = line.rstrip("\\n").split(" ", 1)
        print(cpu, attr, flush=True)
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=attr, opt=3)
        m = llvm.parse_assembly(IR)
        m.triple = tm.triple
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(m, pb)
        tm.emit_object(m)
    print("done", flush=True)
""")


def _accepted(arch: str) -> list[tuple[str, str]]:
    """(cpu, mattr) pairs the validator accepts: every CPU, and every single +/- feature."""
    tables = options.llvm_tables(arch)
    cases = [(cpu, "") for cpu in tables.usable_cpus()]
    for feature in sorted(tables.features):
        for item in (f"+{feature}", f"-{feature}"):
            try:
                options.check_mattr(arch, item)
            except TargetError:
                continue
            cases.append(("generic", item))
    return cases


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_every_accepted_cpu_and_feature_compiles_without_abort(llvm_target, arch):
    cases = _accepted(arch)
    for cpu, _ in cases:
        options.check_cpu(arch, cpu)
    proc = subprocess.run([sys.executable, "-c", _COMPILE_ALL, f"{arch}-unknown-linux-gnu"],
                          input="".join(f"{c} {a}\n" for c, a in cases), capture_output=True,
                          text=True, timeout=600)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[-1] == "done", (
        f"LLVM died (rc {proc.returncode}) on {lines[-1] if lines else '?'}: "
        f"{proc.stderr[-2000:]}")
    assert len(lines) == len(cases) + 1


_COMPILE_RELU = textwrap.dedent("""
    import sys
    import numpy as np
    from onnx import helper
    import tensorforge
    from tensorforge.errors import TensorforgeError
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", 1, [64])],
                          [helper.make_tensor_value_info("y", 1, [64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    try:
        tensorforge.compile(m, sys.argv[1]).run(np.ones(64, "float32"))
    except TensorforgeError as e:
        print("clean error:", e)
        sys.exit(3)
""")


@pytest.mark.parametrize("text", ["llvm -mcpu=nonsensecpu", "llvm -mattr=avx2",
                                  "llvm -mcpu=i686", "llvm -mattr=-sse2"])
def test_strings_that_aborted_the_process_end_in_a_clean_error(text):
    """These killed the process inside LLVM (SIGABRT / LLVM ERROR) before the checks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    proc = subprocess.run([sys.executable, "-c", _COMPILE_RELU, text], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "clean error: -m" in proc.stdout


# -- features this host lacks: compile, warn, refuse to run -----------------------------------
@pytest.fixture
def sse2_only_host(monkeypatch):
    """Pretend this machine is a plain x86-64 (SSE2, no AVX)."""
    if not X86:
        pytest.skip("x86-64 host needed")
    fake = {"mcpu": "x86-64", "mtriple": jit.host_options()["mtriple"], "num-threads": 1,
            "mattr": "+64bit,+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87,-avx,-avx2,-avx512f"}
    monkeypatch.setattr(jit, "host_options", lambda: fake)
    return fake


def test_required_features_come_from_llvm(llvm_target):
    if not X86:
        pytest.skip("x86-64 host needed")
    triple = jit.host_options()["mtriple"]
    checked = host.checked_features("x86_64")
    skx = host.required_features(triple, "skylake-avx512", "", checked)
    assert {"avx512f", "avx512bw", "avx2", "fma"} <= skx and "avx512fp16" not in skx
    assert not {"avx", "avx512f"} & host.required_features(triple, "x86-64", "", checked)
    with_attr = host.required_features(triple, "x86-64", "+avx2", checked)
    assert {"avx", "avx2"} <= with_attr and "avx512f" not in with_attr
    assert "avx512f" not in host.required_features(triple, "skylake-avx512", "-avx512f", checked)


def test_missing_host_features_named(llvm_target, sse2_only_host):
    triple = sse2_only_host["mtriple"]
    missing = host.missing_host_features(triple, "skylake-avx512", "")
    assert {"avx", "avx2", "avx512f", "fma"} <= set(missing)
    assert host.missing_host_features(triple, "x86-64", "") == []
    assert host.missing_host_features(ARM_TRIPLE, "neoverse-v1", "") == []  # not runnable here


def test_cpu_the_host_lacks_compiles_warns_and_refuses_to_run(llvm_target, sse2_only_host):
    a = te.placeholder((64,), name="a")
    b = te.compute((64,), lambda i: a[i] * 2.0 + 1.0, name="b")
    s = te.create_schedule(b.op)
    with pytest.warns(HostFeatureWarning, match=r"lacks: .*avx512f.*will not run on this host"):
        mod = tensorforge.build(s, [a, b], target="amd/zen4")
    assert "avx512f" in mod.missing_features
    with pytest.raises(TensorforgeError, match=r"lacks \(.*avx512f.*illegal instruction"):
        mod(np.ones(64, "float32"), np.zeros(64, "float32"))
    assert "zmm" in mod.get_source("asm") or "avx512" in mod.get_source("ll")


def test_this_machine_runs_its_own_cpu(llvm_target):
    opts = llvm_target.options
    assert host.missing_host_features(opts["mtriple"], opts["mcpu"], opts.get("mattr", "")) == []


@pytest.mark.parametrize("text, lanes, regs", [
    ("amd/zen3", 8, 16), ("amd/zen4", 16, 32), ("intel/skylake-avx512", 16, 32),
    (f"llvm -mtriple={X86_TRIPLE} -mcpu=znver4 -mattr=-avx512f", 8, 16),
    (f"llvm -mtriple={X86_TRIPLE} -mcpu=x86-64", 4, 16),
    (f"llvm -mtriple={X86_TRIPLE} -mcpu=x86-64 -mattr=+avx2,+fma", 8, 16),
    ("arm/neoverse-n1", 4, 32)])
def test_a_named_cpu_gets_its_own_vectors(llvm_target, text, lanes, regs):
    """Schedules size their vectors and register tiles by `-mcpu`'s features as well as
    `-mattr`'s: `amd/zen3` (no -mattr) once got SSE's 4 lanes, so its packages ran
    ResNeXt-50 in 128-bit vectors, 1.7x slower than the same CPU detected as the host."""
    from tensorforge.ops.schedule_generic import vector_lanes
    from tensorforge_llvm.strategies import register_file

    target = Target.parse(text)
    assert vector_lanes(target) == lanes
    assert register_file(target) == regs
