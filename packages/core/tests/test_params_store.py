"""Parameters in their smallest faithful form: `pack_params` / `unpack_params` and the numpy
weight transforms they share with the compiler (no code generator needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorforge.errors import PackageError
from tensorforge.runtime.params_store import Derived, pack_params, unpack_params
from tensorforge.runtime.transforms import (
    np_layout_transform,
    winograd_matrices,
    winograd_weight_transform,
)

RNG = np.random.default_rng(0)


def test_derived_constants_are_stored_as_their_source_and_rebuilt_exactly() -> None:
    w = RNG.standard_normal((32, 16, 3, 3)).astype("float32")
    u = winograd_weight_transform(w, 4, 16)
    packed = np_layout_transform(w, "OIHW", "OIHW8i16o")
    plain = RNG.standard_normal(10).astype("float32")
    params = {"u": u, "packed": packed, "plain": plain}
    derived = {"u": Derived("winograd_weight_transform", {"m": 4, "ob": 16}, w),
               "packed": Derived("layout_transform",
                                 {"src_layout": "OIHW", "dst_layout": "OIHW8i16o"}, w)}
    index, blob, stats = pack_params(params, derived)
    assert stats["derived"] == 2
    assert stats["stored_bytes"] < w.nbytes + plain.nbytes + 128  # w stored once, shared
    assert stats["runtime_bytes"] == u.nbytes + packed.nbytes + plain.nbytes
    back = unpack_params(index, blob)
    for k, a in params.items():
        assert back[k].dtype == a.dtype and back[k].tobytes() == a.tobytes()
        assert back[k].base is None or back[k].base.nbytes == back[k].nbytes  # own memory


def test_scalars_keep_their_shape() -> None:
    """A 0-d constant (a TensorFlow scalar) comes back 0-d, not (1,)."""
    params = {"s": np.array(1.5, "float32"), "t": np.arange(6, dtype="int64")[::2]}
    back = unpack_params(*pack_params(params)[:2])
    assert back["s"].shape == () and back["s"] == 1.5
    assert back["t"].tolist() == [0, 2, 4]


def test_a_recipe_that_does_not_reproduce_the_constant_stores_the_constant() -> None:
    w = RNG.standard_normal((16, 16, 3, 3)).astype("float32")
    u = winograd_weight_transform(w, 2, 16)
    u[0, 0, 0, 0, 0] += 1.0  # not what the recipe computes
    index, blob, stats = pack_params({"u": u}, {"u": Derived(
        "winograd_weight_transform", {"m": 2, "ob": 16}, w)})
    assert stats["derived"] == 0
    assert unpack_params(index, blob)["u"].tobytes() == u.tobytes()


def test_the_winograd_transform_is_g_g_gt() -> None:
    w = RNG.standard_normal((8, 4, 3, 3)).astype("float32")
    for m in (2, 4):
        _, g, _ = winograd_matrices(m)
        ref = np.einsum("ei,ocij,uj->euoc", g, w.astype("float64"), g)
        ref = ref.reshape(m + 2, m + 2, 2, 4, 4).transpose(0, 1, 2, 4, 3)
        np.testing.assert_allclose(winograd_weight_transform(w, m, 4), ref, rtol=1e-6,
                                   atol=1e-6)


def _pack_one() -> tuple[dict, bytes]:
    w = RNG.standard_normal((4, 4)).astype("float32")
    index, blob, _ = pack_params({"p": np_layout_transform(w, "NK", "NK2n")}, {"p": Derived(
        "layout_transform", {"src_layout": "NK", "dst_layout": "NK2n"}, w)})
    return json.loads(index), blob


@pytest.mark.parametrize("edit, match", [
    (lambda m: m["params"]["p"].update(transform="os.system"), "unknown transform 'os.system'"),
    (lambda m: m["arrays"]["a0"].update(offset=1 << 20), "past the end of params.bin"),
    (lambda m: m["arrays"]["a0"].update(dtype="object"), "unsupported dtype"),
    (lambda m: m["params"]["p"].update(attrs={"src_layout": "NK", "dst_layout": "NK3n"}),
     "transform that fails"),
    (lambda m: m["params"]["p"].update(source={"array": "zz"}), "does not define"),
    (lambda m: m.update(version=2), "format version 2"),
])
def test_a_tampered_index_is_refused(edit, match) -> None:
    meta, blob = _pack_one()
    edit(meta)
    with pytest.raises(PackageError, match=match):
        unpack_params(json.dumps(meta).encode(), blob)
