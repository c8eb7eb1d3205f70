"""ONNX backend node tests (onnx.backend.test) over the ops the frontend claims.

A test is *claimed* when every node of its model has a converter for its op version. Each
claimed test is listed in node_suite_expected.txt as PASS or FAIL <reason>, with its run time
and onnxruntime's result on the same case. A listed PASS that fails is a regression and fails
the build; a listed FAIL that passes is reported as a new pass (a warning) — update the file:

    TFORGE_UPDATE_NODE_SUITE=1 pytest packages/frontend-onnx/tests/test_onnx_node_suite.py

onnx >= 1.20 builds the ~1,900 node cases in memory (`load_node_model_tests`, ~20 s once);
the cases run through `onnx.backend.test.BackendTest` with `TensorforgeBackend`."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

EXPECTED_FILE = Path(__file__).with_name("node_suite_expected.txt")
UPDATE = os.environ.get("TFORGE_UPDATE_NODE_SUITE") == "1"


def _read_expected() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    if not EXPECTED_FILE.exists():
        return out
    for line in EXPECTED_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(maxsplit=4)
        out[parts[0]] = (parts[1], parts[4] if len(parts) > 4 else "")
    return out


EXPECTED = _read_expected()


@pytest.fixture(autouse=True)
def _llvm(llvm_target: Any) -> None:
    """The node tests compile every case for this machine's CPU (the llvm plugin)."""
RESULTS: dict[str, tuple[str, float, str]] = {}  # name -> (status, seconds, reason)


def _claimed(m: Any) -> bool:
    from tensorforge_onnx.dispatch import op_version, table
    from tensorforge_onnx.frontend import default_opset

    tab, opset = table(), default_opset(m)
    for n in m.graph.node:
        c = tab.get(n.op_type) if n.domain in ("", "ai.onnx") else None
        v = op_version(n.op_type, opset) if c else None
        if c is None or v is None or not c.min_version <= v <= c.max_version:
            return False
    return bool(m.graph.node)


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    """The node cases and BackendTest's runnable test methods for the claimed cases."""
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    import onnx.backend.test
    from onnx.backend.test.loader import load_node_model_tests

    from tensorforge_onnx.backend import TensorforgeBackend

    cases = {c.name: c for c in load_node_model_tests()}
    claimed = sorted(n for n, c in cases.items() if _claimed(c.model))
    bt = onnx.backend.test.BackendTest(TensorforgeBackend, __name__)
    cls = bt.test_cases["OnnxBackendNodeModelTest"]
    return {"cases": cases, "claimed": claimed, "cls": cls}


def test_claimed_set_is_listed(suite: dict[str, Any]) -> None:
    if UPDATE:
        pytest.skip("updating the expectations")
    claimed, listed = set(suite["claimed"]), set(EXPECTED)
    assert claimed == listed, (
        f"claimed but not listed: {sorted(claimed - listed)[:20]}; listed but no longer "
        f"claimed: {sorted(listed - claimed)[:20]}. Update {EXPECTED_FILE.name} "
        "(TFORGE_UPDATE_NODE_SUITE=1).")


def _run(suite: dict[str, Any], name: str) -> tuple[str, float, str]:
    cls = suite["cls"]
    t0 = time.perf_counter()
    try:
        getattr(cls(f"{name}_cpu"), f"{name}_cpu")()
        status, reason = "PASS", ""
    except Exception as e:  # noqa: BLE001
        status = "FAIL"
        reason = f"{type(e).__name__}: {' '.join(str(e).split())}"[:160]
    return status, time.perf_counter() - t0, reason


_NAMES = sorted(EXPECTED) if EXPECTED and not UPDATE else []


@pytest.mark.slow
@pytest.mark.parametrize("name", _NAMES)
def test_node(suite: dict[str, Any], name: str) -> None:
    if name not in suite["cases"]:
        pytest.fail(f"{name} is listed in {EXPECTED_FILE.name} but onnx has no such case")
    status, secs, reason = _run(suite, name)
    RESULTS[name] = (status, secs, reason)
    want, want_reason = EXPECTED[name]
    if want == "PASS" and status != "PASS":
        pytest.fail(f"regression: {name} passed before and now fails: {reason}")
    if want == "FAIL" and status == "FAIL":
        pytest.xfail(want_reason or reason)


def test_report_new_passes() -> None:
    """Runs after the node tests (file order): report new passes and the totals."""
    if not RESULTS:
        pytest.skip("no node tests ran")
    new = sorted(n for n, (s, _, _) in RESULTS.items() if s == "PASS"
                 and EXPECTED.get(n, ("", ""))[0] == "FAIL")
    if new:
        warnings.warn(f"{len(new)} ONNX node tests pass now but are listed as FAIL: {new}; "
                      f"update {EXPECTED_FILE.name} (TFORGE_UPDATE_NODE_SUITE=1)", stacklevel=1)
    passed = sum(s == "PASS" for s, _, _ in RESULTS.values())
    total = sum(t for _, t, _ in RESULTS.values())
    print(f"\nONNX node suite: {passed}/{len(RESULTS)} pass, {total:.1f} s")


@pytest.mark.skipif(not UPDATE, reason="set TFORGE_UPDATE_NODE_SUITE=1 to rewrite the file")
def test_update_expectations(suite: dict[str, Any]) -> None:
    """Run every claimed case (ours and onnxruntime's) and rewrite the expectations file."""
    rows = []
    for name in suite["claimed"]:
        status, secs, reason = _run(suite, name)
        rows.append((name, status, secs, _ort_status(suite["cases"][name]), reason))
    ours = sum(r[1] == "PASS" for r in rows)
    ort = sum(r[3] == "PASS" for r in rows)
    head = [
        "# ONNX backend node tests claimed by the tensorforge ONNX frontend (every node's op",
        "# version has a converter), compiled for the CPU and run. Columns: test, our status,",
        "# seconds,",
        "# onnxruntime's status on the same case, reason for a FAIL.",
        f"# claimed {len(rows)}; tensorforge PASS {ours}; onnxruntime PASS {ort}.",
        "# Regenerate: TFORGE_UPDATE_NODE_SUITE=1 pytest "
        "packages/frontend-onnx/tests/test_onnx_node_suite.py",
    ]
    body = [f"{n} {s} {t:.3f} ort={o} {r}".rstrip() for n, s, t, o, r in rows]
    EXPECTED_FILE.write_text("\n".join(head + body) + "\n")


def _ort_status(case: Any) -> str:
    import numpy as np
    import onnxruntime.backend as ob
    from onnx.backend.test.runner import Runner, _normalize_tensor

    try:
        rep = ob.prepare(case.model, "CPU")
        for inputs, outputs in case.data_sets:
            got = rep.run([_normalize_tensor(i) for i in inputs])
            Runner.assert_similar_outputs([_normalize_tensor(o) for o in outputs],
                                          [np.asarray(g) for g in got], case.rtol, case.atol)
        return "PASS"
    except Exception:  # noqa: BLE001
        return "FAIL"
