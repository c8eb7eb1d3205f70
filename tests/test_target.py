"""Targets as values: parsing, tags, host detection, errors."""

import sys
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensorforge.errors import TargetError
from tensorforge.plugins import TargetTag, hookimpl
from tensorforge.target import Target, TargetKind, TargetOption

CALLS = []


def _detect(explicit):
    CALLS.append(dict(explicit))
    return {"mcpu": "hostcpu", "threads": 6, "unknown-option": 1}


KIND = TargetKind(
    "fakecpu", "cpu",
    {"mcpu": TargetOption(str, "generic", "cpu"), "mtriple": TargetOption(str, "", "triple"),
     "threads": TargetOption(int, 1, "threads"), "fast": TargetOption(bool, False, "fast math"),
     "scale": TargetOption(float, 1.0, "scale")},
    detect_host="fake_detect_mod:detect",
)


class FakePlugin:
    @hookimpl
    def register_targets(self, register):
        register(KIND)

    @hookimpl
    def register_target_tags(self, register):
        register(TargetTag("acme/big", "fakecpu -threads=64 -mtriple=x86_64-pc-linux"))


@pytest.fixture
def fake(plugins, monkeypatch):
    monkeypatch.setitem(sys.modules, "fake_detect_mod",
                        types.SimpleNamespace(detect=_detect))
    plugins.register(FakePlugin(), "fake", distribution="fake-dist")
    CALLS.clear()


def test_parse_and_options(fake):
    t = Target.parse("fakecpu -mcpu=znver3 -threads=2 -fast")
    assert t.kind.name == "fakecpu" and t.device_type == "cpu"
    assert t.explicit == {"mcpu": "znver3", "threads": 2, "fast": True}
    assert str(t) == "fakecpu -mcpu=znver3 -threads=2 -fast=true"
    assert Target.parse(str(t)) == t and hash(Target.parse(str(t))) == hash(t)
    assert Target.coerce(t) is t and Target.coerce("fakecpu -threads=2") == "fakecpu -threads=2"
    assert t.with_options(threads=3).explicit["threads"] == 3


def test_host_detection_fills_unset_options_only(fake):
    t = Target.parse("fakecpu -threads=2")
    assert t.options == {"mcpu": "hostcpu", "mtriple": "", "threads": 2, "fast": False,
                         "scale": 1.0}
    assert CALLS == [{"threads": 2}]  # the probe sees what was given
    t.options  # noqa: B018  cached per explicit options
    assert len(CALLS) == 1


def test_a_triple_means_cross_compilation_without_host_detection(fake):
    t = Target.parse("acme/big")
    assert t.tag == "acme/big" and t.options["mcpu"] == "generic" and t.options["threads"] == 64
    assert CALLS == []
    assert Target.parse("acme/big -threads=8").options["threads"] == 8


@pytest.mark.parametrize("text, message", [
    ("fakecpu -nope=1", "unknown option -nope for target 'fakecpu'.*Options of 'fakecpu': -mcpu"),
    ("fakecpu -thread=2", "Did you mean -threads"),
    ("fakecpu -threads=many", "-threads expects an int"),
    ("fakecpu -mcpu", "-mcpu needs a value"),
    ("fakecpu mcpu=x", "expected -option=value"),
    ("fakecpux", "unknown target 'fakecpux'. Did you mean 'fakecpu'.*Installed target kinds: "
                 "fakecpu. Tags: acme/big"),
    ("", "empty target string"),
    ("fakecpu '-mcpu=x", "cannot parse"),
])
def test_errors_are_clear(fake, text, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(text)


def test_known_kind_not_installed_says_what_to_install(fake, monkeypatch):
    import tensorforge.plugins.known as known
    import tensorforge.target.target as mod

    monkeypatch.setattr(mod, "_is_installed", lambda dist: False)
    monkeypatch.setattr(known, "source_checkout", lambda: None)  # installed from an index
    hint = r"pip install 'tensorforge\[cuda\]' .*pip install tensorforge-target-cuda"
    with pytest.raises(TargetError, match=hint):
        Target.parse("cuda -arch=sm_90")
    with pytest.raises(TargetError, match="target tag 'nvidia/h200': .*tensorforge-target-cuda"):
        Target.parse("nvidia/h200")


def test_known_kind_installed_but_not_loaded_says_so(fake):
    with pytest.raises(TargetError, match="installed but its plugin is not loaded.*`plugins`"):
        Target.parse("llvm")


def test_real_llvm_target(llvm_target):
    assert llvm_target == "llvm" and llvm_target.options["num-threads"] >= 1
    t = Target.parse("llvm -mcpu=znver3 -num-threads=2")
    assert t.options["mcpu"] == "znver3" and t.options["num-threads"] == 2
    assert Target.parse("amd/zen3").options["mcpu"] == "znver3"
    assert Target.parse(str(llvm_target)) == llvm_target


def test_targets_are_immutable(fake):
    t = Target.parse("fakecpu")
    with pytest.raises(AttributeError):
        t.kind = None


@given(threads=st.integers(0, 1 << 20),
       mcpu=st.from_regex(r"[a-z][a-z0-9_.+-]{0,12}", fullmatch=True),
       fast=st.booleans(), scale=st.floats(allow_nan=False, allow_infinity=False))
def test_round_trip(threads, mcpu, fast, scale):
    from tensorforge.plugins import use_registry

    with use_registry() as reg:
        reg.register(FakePlugin(), "fake")
        t = Target(KIND.name, {"threads": threads, "mcpu": mcpu, "fast": fast, "scale": scale})
        assert Target.parse(str(t)) == t
