"""Every hook, registered through the hermetic ``plugins`` fixture."""

import pytest

from tensorforge.errors import DuplicateNameError, PluginError, TargetError
from tensorforge.plugins import (
    CostModel,
    Frontend,
    Intrinsic,
    Pass,
    PluginLoadWarning,
    Strategy,
    TargetTag,
    Tuner,
    get_registry,
    hookimpl,
)
from tensorforge.target import Target, TargetKind, TargetOption

TOY = TargetKind("toy", "cpu", {"lanes": TargetOption(int, 4, "vector lanes")},
                 build="toy_backend:build")


class ToyPlugin:
    """Implements all eight hooks."""

    @hookimpl
    def register_targets(self, register):
        register(TOY)

    @hookimpl
    def register_target_tags(self, register):
        register(TargetTag("toy/wide", "toy -lanes=16"))

    @hookimpl
    def register_frontends(self, register):
        register(Frontend("toyfmt", (".toy",), "toy_frontend:load"))

    @hookimpl
    def register_cost_models(self, register):
        register(CostModel("toy-model", "toy_models:Model"))

    @hookimpl
    def register_tuners(self, register):
        register(Tuner("toy-grid", "toy_tuners:Grid"))

    @hookimpl
    def register_strategies(self, register, target):
        if target.kind.name == "toy":
            register(Strategy("dense", "simple", "toy_ops:dense", "toy_ops:schedule_dense"))
            register(Strategy("dense", "blocked", "toy_ops:dense", "toy_ops:blocked", priority=10))

    @hookimpl
    def register_intrinsics(self, register, target):
        if target.options["lanes"] >= 16:
            register(Intrinsic("dot_16x4_int8", "toy_intrin:desc", "toy_intrin:impl"))

    @hookimpl
    def register_passes(self, register, target, stage):
        if stage == "tir.before_codegen":
            register(Pass("toy-legalize", stage, "toy_passes:legalize"))


def test_all_load_time_hooks(plugins):
    info = plugins.register(ToyPlugin(), "toy", distribution="toy-dist")
    reg = get_registry()
    assert reg.targets["toy"].distribution == "toy-dist" and reg.targets["toy"].plugin == "toy"
    assert reg.target_tags["toy/wide"].config == "toy -lanes=16"
    assert reg.frontends["toyfmt"].suffixes == (".toy",) and reg.frontend_for("a.toy")
    assert reg.cost_models["toy-model"].factory == "toy_models:Model"
    assert reg.tuners["toy-grid"].factory == "toy_tuners:Grid"
    assert info.registered == {"targets": ["toy"], "target_tags": ["toy/wide"],
                               "frontends": ["toyfmt"], "cost_models": ["toy-model"],
                               "tuners": ["toy-grid"]}
    assert len(info.hooks) == 8


def test_per_target_hooks(plugins):
    plugins.register(ToyPlugin(), "toy")
    reg = get_registry()
    strategies = reg.strategies("toy")
    assert [s.name for s in strategies["dense"]] == ["blocked", "simple"]  # priority order
    assert reg.intrinsics("toy") == {}
    assert list(reg.intrinsics("toy/wide")) == ["dot_16x4_int8"]
    assert [p.name for p in reg.passes(Target.parse("toy"), "tir.before_codegen")] == [
        "toy-legalize"]
    assert reg.passes("toy", "graph.after_fusion") == []


def test_unregister_removes_everything(plugins):
    plugins.register(ToyPlugin(), "toy")
    assert get_registry().strategies("toy")
    plugins.unregister("toy")
    reg = get_registry()
    assert not reg.targets and not reg.tuners and not reg.plugins
    with pytest.raises(PluginError, match="no plugin named"):
        reg.unregister("toy")


def test_duplicate_target_names_both_distributions(plugins):
    plugins.register(ToyPlugin(), "toy", distribution="toy-dist")

    class Clash:
        @hookimpl
        def register_targets(self, register):
            register(TargetKind("toy", "cpu"))

    with pytest.raises(DuplicateNameError, match="target 'toy'.*toy-dist.*clash-dist"):
        plugins.register(Clash(), "clash", distribution="clash-dist")
    assert get_registry().targets["toy"].distribution == "toy-dist"


def test_duplicate_per_target_names_raise(plugins):
    plugins.register(ToyPlugin(), "toy", distribution="toy-dist")

    class Clash:
        @hookimpl
        def register_strategies(self, register, target):
            register(Strategy("dense", "simple", "x:y", "x:z"))

    plugins.register(Clash(), "clash", distribution="clash-dist")
    with pytest.raises(DuplicateNameError, match="dense/simple.*toy-dist.*clash-dist"):
        get_registry().strategies("toy")


def test_wrong_descriptor_type_is_an_error(plugins):
    class Wrong:
        @hookimpl
        def register_tuners(self, register):
            register(CostModel("m", "a:b"))

    with pytest.raises(PluginError, match="register_tuners must register Tuner"):
        plugins.register(Wrong(), "wrong", distribution="wrong-dist")
    assert "wrong" not in {p.name for p in get_registry().plugins}


def test_a_failing_per_target_hook_is_skipped_with_a_warning(plugins):
    plugins.register(ToyPlugin(), "toy")

    class Flaky:
        @hookimpl
        def register_strategies(self, register, target):
            register(Strategy("conv2d", "fast", "a:b", "a:c"))
            raise RuntimeError("flaky")

    info = plugins.register(Flaky(), "flaky", distribution="flaky-dist")
    with pytest.warns(PluginLoadWarning, match="flaky-dist.*flaky"):
        strategies = get_registry().strategies("toy")
    assert "conv2d" not in strategies and "dense" in strategies
    assert info.warnings


def test_unknown_hook_name_is_rejected(plugins):
    class Typo:
        @hookimpl
        def register_target(self, register):  # missing "s"
            pass

    with pytest.raises(PluginError, match="invalid plugin"):
        plugins.register(Typo(), "typo")
    assert not get_registry().plugins


def test_descriptors_validate_themselves():
    with pytest.raises(ValueError, match="module:attr"):
        CostModel("m", "not a reference")
    with pytest.raises(ValueError, match="unknown stage"):
        Pass("p", "nowhere", "a:b")
    with pytest.raises(ValueError, match="suffixes"):
        Frontend("f", ".onnx", "a:b")
    with pytest.raises(ValueError, match="not a int|is not a"):
        TargetOption(int, "4")


def test_lazy_references_load_on_first_use(plugins):
    from tensorforge.plugins import load_ref

    assert load_ref("os.path:join") is __import__("os").path.join
    with pytest.raises(TargetError, match="cannot compile: codegen not installed "
                       r"\(no module toy_backend\)"):
        TOY.load_build()
