"""Host detection masks what llvmlite reports against what the OS allows."""

import pytest

from tensorforge.target import Target
from tensorforge_llvm.host import cpuinfo_flags, detect_host, mask_features, physical_cores

CPUINFO = """processor\t: 0
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse sse2 pni ssse3 sse4_1 sse4_2 avx avx2 fma f16c bmi1 bmi2 popcnt lm
processor\t: 1
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse sse2 pni ssse3 sse4_1 sse4_2 avx avx2 fma f16c bmi1 bmi2 popcnt lm
"""


def test_features_hidden_by_the_hypervisor_are_turned_off():
    reported = {"avx2": True, "fma": True, "avx512f": True, "avx512bw": True, "sse4.2": True,
                "bmi": True, "64bit": True, "cmov": True, "amx-tile": False}
    masked = mask_features(reported, cpuinfo_flags(CPUINFO), arch="x86_64")
    assert masked["avx512f"] is False and masked["avx512bw"] is False
    assert masked["avx2"] and masked["fma"] and masked["sse4.2"] and masked["bmi"]
    assert masked["64bit"] and masked["cmov"]  # not checked, kept as reported
    assert masked["amx-tile"] is False


def test_no_cpuinfo_keeps_features():
    assert mask_features({"avx512f": True}, None) == {"avx512f": True}
    assert cpuinfo_flags("model name : x\n") is None


def test_aarch64_names():
    masked = mask_features({"neon": True, "sve": True}, {"fp", "asimd"}, arch="aarch64")
    assert masked == {"neon": True, "sve": False}


def test_physical_cores_counts_cores_not_threads():
    assert physical_cores(CPUINFO) == 1


def test_detect_host_describes_this_machine():
    pytest.importorskip("llvmlite")
    host = detect_host()
    assert set(host) >= {"mcpu", "mtriple", "num-threads"}
    assert host["num-threads"] >= 1
    flags = cpuinfo_flags()
    if flags is not None and "mattr" in host and "avx512f" not in flags:
        assert "+avx512f" not in host["mattr"].split(",")


def test_explicit_cpu_drops_host_features():
    pytest.importorskip("llvmlite")
    assert "mattr" not in detect_host({"mcpu": "definitely-not-the-host"})


def test_llvm_target_fixture_resolves_host_options(llvm_target):
    assert llvm_target.kind.name == "llvm"
    opts = llvm_target.options
    assert opts["mcpu"] != "generic" and opts["num-threads"] >= 1 and opts["mtriple"]
    cross = Target.parse("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-n1")
    assert cross.options["num-threads"] == 0  # a cross target is not described by this host
    assert cross.options["mattr"] == ""
