"""StridedSlice's semantics (masks, ellipsis, new and shrunk axes, negative strides) against
numpy indexing, which TensorFlow's slicing follows; no TensorFlow needed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge_tensorflow.convert_shape import slice_plan


@st.composite
def slices(draw: st.DrawFn) -> tuple[tuple[int, ...], list, dict[str, int], list[int],
                                     list[int], list[int]]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    kinds = draw(st.lists(st.sampled_from(["slice", "slice", "new", "shrink"]), max_size=5))
    real = [k for k, kind in enumerate(kinds) if kind != "new"]
    kinds = [("new" if kind != "new" and real.index(k) >= len(shape) else kind)
             for k, kind in enumerate(kinds)]  # at most one real index per dim
    if draw(st.booleans()):
        kinds.insert(draw(st.integers(0, len(kinds))), "ellipsis")
    # the dim each real index reads: from the left before the ellipsis, from the right after
    dims, left = {}, 0
    after = kinds[kinds.index("ellipsis") + 1:] if "ellipsis" in kinds else []
    right = len(shape) - sum(1 for kind in after if kind in ("slice", "shrink"))
    for k, kind in enumerate(kinds):
        if kind in ("slice", "shrink"):
            in_tail = "ellipsis" in kinds and k > kinds.index("ellipsis")
            dims[k] = right if in_tail else left
            right, left = (right + 1, left) if in_tail else (right, left + 1)
    masks = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
             "shrink_axis_mask": 0}
    begin, end, strides, index = [], [], [], []
    for k, kind in enumerate(kinds):
        b, e, s, idx = 0, 0, 1, None
        if kind == "ellipsis":
            masks["ellipsis_mask"] |= 1 << k
            idx = Ellipsis
        elif kind == "new":
            masks["new_axis_mask"] |= 1 << k
        elif kind == "shrink":
            size = shape[dims[k]]
            b = idx = draw(st.integers(-size, size - 1))
            e = b + 1
            masks["shrink_axis_mask"] |= 1 << k
        else:
            b, e = draw(st.integers(-7, 7)), draw(st.integers(-7, 7))
            s = draw(st.sampled_from([1, 2, 3, -1, -2]))
            bm, em = draw(st.booleans()), draw(st.booleans())
            masks["begin_mask"] |= bm << k
            masks["end_mask"] |= em << k
            idx = slice(None if bm else b, None if em else e, s)
        begin.append(b), end.append(e), strides.append(s), index.append(idx)
    return shape, index, masks, begin, end, strides


@settings(max_examples=300, deadline=None)
@given(slices())
def test_slice_plan_matches_numpy(case: tuple) -> None:
    shape, index, masks, begin, end, strides = case
    x = np.arange(int(np.prod(shape))).reshape(shape)
    want = x[tuple(index)]
    plan, out_shape = slice_plan(shape, begin, end, strides, masks)
    assert out_shape == want.shape
    if want.size:
        idx = np.ix_(*[b + st * np.arange(n) for b, st, n in plan])
        np.testing.assert_array_equal(x[idx].reshape(out_shape), want)
