"""Special values (NaN, +-inf, -0.0, denormals, the extremes of every dtype) through every op
the ONNX frontend converts, in every dtype ONNX Runtime implements, compiled and compared with
ONNX Runtime (`tensorforge_onnx.conformance`: tolerance classes `TOLERANCES`, ONNX Runtime's
own departures in `conformance_cases`' docstring). A dtype ONNX Runtime has no kernel for is
compared with our numpy reference instead."""

from __future__ import annotations

from typing import Any

import pytest

from tensorforge_onnx import conformance as conf
from tensorforge_onnx.conformance_cases import CASES, NOT_APPLICABLE, PENDING, build

_PARAMS = [pytest.param(c, dt, id=f"{c.name}-{dt}") for c in CASES for dt in c.dtypes]


@pytest.fixture
def onnx_llvm(llvm_target: Any, plugins: Any) -> None:
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")


def test_every_converted_op_has_a_case() -> None:
    from tensorforge_onnx.dispatch import table

    covered = {c.op for c in CASES} | set(NOT_APPLICABLE) | PENDING
    missing = sorted(set(table()) - covered)
    assert not missing, f"ops converted without a conformance case: {missing}"


def test_notes_name_known_departures() -> None:
    import tensorforge_onnx.conformance_cases as cc

    for c in CASES:
        for tag in ("ORT_NAN_ORDER", "ORT_POW_DOUBLE", "ORT_DIV_TRAP", "ORT_ZERO_SIGN",
                    "ORT_INT_OVERFLOW", "ORT_SOFTMAX_INF", "ORT_SIGN_NAN", "ORT_GELU",
                    "ORT_SHRINK_FLOAT"):
            if tag in c.note:
                assert tag in (cc.__doc__ or ""), f"{c.name}: {tag} is not documented"
        if not c.zero_sign or c.no_nan or c.mask is not None:
            assert c.note, f"{c.name} relaxes the comparison without saying why"


@pytest.mark.slow
@pytest.mark.parametrize("case,dtype", _PARAMS)
def test_special_values(onnx_llvm: None, case: Any, dtype: str) -> None:
    m, feeds = build(case, dtype)
    out = conf.run_case(m, feeds, case.tol, case.mask, zero_sign=case.zero_sign)
    assert out.status != "fail", f"{case.name} {dtype}: {out.detail}"


def test_compare_catches_what_it_should() -> None:
    """The comparison itself: NaN vs number, zero signs, infinities, tolerance classes."""
    import numpy as np

    f = np.float32
    nan, inf = f("nan"), f("inf")
    assert conf.compare(np.array([nan, 1], f), np.array([nan, 1], f), "exact") is None
    assert conf.compare(np.array([nan], f), np.array([0], f), "approx") is not None
    assert conf.compare(np.array([-0.0], f), np.array([0.0], f), "exact") is not None
    assert conf.compare(np.array([-0.0], f), np.array([0.0], f), "exact", zero_sign=False) \
        is None
    assert conf.compare(np.array([inf], f), np.array([f(3e38)], f), "approx") is not None
    assert conf.compare(np.array([1.000001], f), np.array([1], f), "approx") is None
    assert conf.compare(np.array([1.0001], f), np.array([1], f), "approx") is not None
    assert conf.compare(np.array([1, 2], "int32"), np.array([1, 3], "int32"), "exact") \
        is not None
