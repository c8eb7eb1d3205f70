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


# -- typed options: choices, ranges, the kind's validate hook -------------------------------
def _check_pair(explicit):
    if explicit.get("lo", 0) > explicit.get("hi", 10):
        raise TargetError(f"-lo must not exceed -hi (got {explicit})")


def _broken_check(explicit):
    raise KeyError("oops")


CHECKED = TargetKind(
    "checked", "cpu",
    {"mode": TargetOption(str, "auto", "mode", choices=("auto", "fast", "small")),
     "lo": TargetOption(int, 0, "low", min=0, max=10),
     "hi": TargetOption(int, 10, "high", min=0, max=10),
     "gain": TargetOption(float, 1.0, "gain", min=0.0),
     "flag": TargetOption(bool, False, "flag")},
    validate="fake_detect_mod:check",
)


@pytest.fixture
def checked(plugins, monkeypatch):
    mod = types.SimpleNamespace(check=_check_pair, detect=_detect)
    monkeypatch.setitem(sys.modules, "fake_detect_mod", mod)

    class P:
        @hookimpl
        def register_targets(self, register):
            register(CHECKED)

    plugins.register(P(), "checked", distribution="checked-dist")
    return mod


@pytest.mark.parametrize("text, message", [
    ("checked -mode=fats", r"-mode does not take 'fats'. Did you mean 'fast'\? The 3 valid "
                           r"values, closest first: fast, auto, small"),
    ("checked -lo=11", r"-lo=11 is out of range: it takes 0..10"),
    ("checked -lo=-1", r"-lo=-1 is out of range"),
    ("checked -gain=-0.5", r"-gain=-0.5 is out of range: it takes >= 0.0"),
    ("checked -gain=nan", r"-gain expects a finite number"),
    ("checked -flag=7", r"-flag expects a bool, got '7' \(true/false, on/off"),
    ("checked -lo=5 -hi=4", r"-lo must not exceed -hi"),
    ("checked -nope=1", r"Options of 'checked': -mode \(auto\|fast\|small\), -lo \(int 0..10\)"),
])
def test_typed_options_refuse_bad_values_listing_valid_ones(checked, text, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(text)


def test_typed_options_accept_valid_values(checked):
    t = Target.parse("checked -mode=small -lo=3 -hi=10 -gain=2.5 -flag=on")
    assert t.explicit == {"mode": "small", "lo": 3, "hi": 10, "gain": 2.5, "flag": True}
    assert Target.parse(str(t)) == t
    with pytest.raises(TargetError, match="out of range"):
        t.with_options(lo=20)


def test_a_broken_validator_is_a_target_error(checked, monkeypatch):
    monkeypatch.setattr(checked, "check", _broken_check)
    with pytest.raises(TargetError, match=r"checking the options of target 'checked' failed "
                                          r"\(KeyError"):
        Target.parse("checked -lo=1")


def test_option_schema_is_checked_when_declared():
    with pytest.raises(ValueError, match="choices"):
        TargetOption(str, "auto", choices=("auto", 2))
    with pytest.raises(ValueError, match="min/max"):
        TargetOption(str, "x", min=1)
    with pytest.raises(TargetError, match="default"):
        TargetOption(int, 0, min=1)
    assert TargetOption(int, 1, min=1, max=4).describe() == "int 1..4"
    assert TargetOption(str, "a", choices=("a", "b")).describe() == "a|b"
