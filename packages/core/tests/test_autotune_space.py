"""Config spaces: knobs, index <-> knob values round trips, defaults, the template registry."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge.autotune import ConfigEntity, ConfigSpace, Task, get_template, template
from tensorforge.autotune.space import SplitKnob


def _space(extents: list[int], n_opts: int, reorder: int, ann: int) -> ConfigSpace:
    sp = ConfigSpace()
    for i, e in enumerate(extents):
        sp.define_split(f"s{i}", e, num_outputs=2 + i % 2, policy=("factors", "power2")[i % 2])
    sp.define_knob("opt", list(range(n_opts)))
    sp.define_reorder("order", reorder)
    sp.define_annotate("ann", ann, policy="try_unroll_vec")
    return sp


spaces = st.builds(_space, st.lists(st.integers(1, 96), min_size=1, max_size=3),
                   st.integers(1, 4), st.integers(1, 3), st.integers(1, 3))


@settings(max_examples=60, deadline=None)
@given(spaces, st.data())
def test_index_round_trips(sp: ConfigSpace, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(sp) - 1))
    pos = sp.positions(index)
    assert sp.index_of_positions(pos) == index
    cfg = sp.get(index)
    assert sp.from_json(cfg.to_json()).index == index
    assert all(0 <= p < d for p, d in zip(pos, sp.dims))
    nb = sp.neighbour(index, random.Random(index))
    assert sum(a != b for a, b in zip(sp.positions(nb), pos)) <= 1


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200), st.integers(1, 3))
def test_split_factors_multiply_to_extent(extent: int, parts: int) -> None:
    knob = SplitKnob("s", extent, parts)
    assert len({e.size for e in knob.entities}) == len(knob)
    for e in knob.entities:
        prod = 1
        for x in e.size:
            prod *= x
        assert prod == extent and len(e.size) == parts
    p2 = SplitKnob("p", extent, parts, policy="power2")
    for e in p2.entities:
        inner = 1
        for x in e.size[1:]:
            assert x & (x - 1) == 0
            inner *= x
        assert e.size[0] == -(-extent // inner)


def test_defaults_and_errors() -> None:
    sp = ConfigSpace()
    sp.define_split("t", 64, default=(-1, 8))
    sp.define_knob("k", ["a", "b", "c"], default="c")
    sp.define_split("c", 10, policy="candidate", candidates=[(5, 2), (2, 5)], default=(2, 5))
    assert sp["t"].size == (8, 8) and sp["k"].val == "c" and sp["c"].size == (2, 5)
    d = sp.get(sp.default_index)
    assert d["t"].size == (8, 8) and d["k"].val == "c" and d.values()["c"] == [2, 5]
    with pytest.raises(ValueError, match="not one of"):
        sp.define_knob("bad", [1, 2], default=3)
    with pytest.raises(ValueError, match="twice"):
        sp.define_knob("k", [1])
    with pytest.raises(IndexError):
        sp.positions(len(sp))
    with pytest.raises(KeyError, match="not in the config space"):
        ConfigEntity(sp, 0).define_knob("other", [1])


def test_template_registry() -> None:
    @template("testing/registry-probe")
    def probe(cfg, n):  # noqa: ANN001, ANN202
        cfg.define_split("x", n)
        return None, []

    assert get_template("testing/registry-probe").func is probe
    with pytest.raises(ValueError, match="registered twice"):
        template("testing/registry-probe")(lambda cfg: None)
    with pytest.raises(KeyError, match="no tuning template"):
        get_template("testing/does-not-exist")


def test_task_key_and_json(llvm_target) -> None:
    t = Task("matmul_packed.llvm", (64, 32, 16), "llvm -num-threads=1")
    t2 = Task.from_json(t.to_json())
    assert t2.key == t.key and t2 == t
    assert Task("matmul_packed.llvm", [64, 32, 16], "llvm -num-threads=1").key == t.key
    assert Task("matmul_packed.llvm", (64, 32, 16), "llvm -num-threads=2").key != t.key
    assert t.flop == 2 * 64 * 32 * 16
    import pickle

    assert pickle.loads(pickle.dumps(t)).key == t.key


def test_default_config_is_the_hand_schedule(llvm_target) -> None:
    from tensorforge.ops.schedule_generic import vector_lanes
    from tensorforge.ops.schedules_cpu import (
        cpu_tiles,
        schedule_conv2d_nchwc,
        schedule_matmul_packed,
    )

    tiles = cpu_tiles(vector_lanes(llvm_target))
    t = Task("matmul_packed.llvm", (64, 128, 32), str(llvm_target))
    for s, args in (t.instantiate(None), t.instantiate(t.config_space.default_index)):
        hand = schedule_matmul_packed(64, 128, 32, **tiles["matmul"])
        assert str(tensorforge.lower(s, args)) == str(tensorforge.lower(*hand))
    conv = tiles["conv2d"]
    t = Task("conv2d_nchwc.llvm", (1, 32, 14, 14, 64, 3, 3, 1, 1, conv["ic_bn"],
                                   conv["oc_bn"]), str(llvm_target))
    s, args = t.instantiate(None)
    reg_n = t.config_space["tile_ow"].size[1]
    hand = schedule_conv2d_nchwc(1, 32, 14, 14, 64, ic_bn=conv["ic_bn"], oc_bn=conv["oc_bn"],
                                 reg_n=reg_n)
    assert str(tensorforge.lower(s, args)) == str(tensorforge.lower(*hand))
