"""ONNX backend node tests (onnx.backend.test): every case of the suite, compiled and run.

node_suite_expected.txt lists every one of onnx's node cases (the whole denominator, not only
the cases whose ops the frontend converts) as PASS or FAIL <reason>, with its run time and
onnxruntime's result on the same case with the same comparison. A listed PASS that fails is
a regression, a listed FAIL that passes is a new pass: both fail the build until the file is
updated:

    TFORGE_UPDATE_NODE_SUITE=1 pytest packages/frontend-onnx/tests/test_onnx_node_suite.py

Inputs stay inputs: a shape fed as an input (Reshape's shape, Tile's repeats) specializes
the compiled model (`TensorforgeRep`), whose kernels still read every data input.

The selected cases are compiled and run up front by a pool of forked worker processes
(`TFORGE_NODE_SUITE_WORKERS`, default: the CPU count; 1 runs them in this process), then
each parametrized test checks its case's result. `python node_suite_report.py` groups the
failures of the file by reason."""

from __future__ import annotations

import multiprocessing
import os
import re
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

EXPECTED_FILE = Path(__file__).with_name("node_suite_expected.txt")
UPDATE = os.environ.get("TFORGE_UPDATE_NODE_SUITE") == "1"
HEADER_LINES = 7


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
_SUITE: dict[str, Any] = {}  # what forked workers read


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    """The node cases and BackendTest's runnable test methods."""
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    import onnx.backend.test
    from onnx.backend.test.loader import load_node_model_tests

    from tensorforge_onnx.backend import TensorforgeBackend

    cases = {c.name: c for c in load_node_model_tests()}
    bt = onnx.backend.test.BackendTest(TensorforgeBackend, __name__)
    cls = bt.test_cases["OnnxBackendNodeModelTest"]
    _SUITE.update(cases=cases, cls=cls)
    return _SUITE


def test_every_case_is_listed(suite: dict[str, Any]) -> None:
    if UPDATE:
        pytest.skip("updating the expectations")
    cases, listed = set(suite["cases"]), set(EXPECTED)
    assert cases == listed, (
        f"node cases not listed: {sorted(cases - listed)[:20]}; listed but not node cases "
        f"of this onnx: {sorted(listed - cases)[:20]}. Update {EXPECTED_FILE.name} "
        "(TFORGE_UPDATE_NODE_SUITE=1).")


def _run(name: str) -> tuple[str, float, str]:
    """Compile and run one case through BackendTest (in this process)."""
    cls = _SUITE["cls"]
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(cls(f"{name}_cpu"), f"{name}_cpu")()
        status, reason = "PASS", ""
    except Exception as e:  # noqa: BLE001
        status, reason = "FAIL", _short_reason(e)
    return status, time.perf_counter() - t0, reason


def _short_reason(e: Exception) -> str:
    """The error in one line of at most 160 characters; an unsupported-op error as the ops
    it names (without node names), so the file groups by op."""
    text = " ".join(str(e).split())
    m = re.search(r"unsupported ops? at opset (\d+): (.*?)\. tensorforge", text)
    if m:
        ops = re.sub(r"\s*\(nodes? [^)]*\)", "", m.group(2))
        text = f"ops not converted: {ops} (opset {m.group(1)})"
    return f"{type(e).__name__}: {text}"[:160]


def _workers() -> int:
    return max(1, int(os.environ.get("TFORGE_NODE_SUITE_WORKERS", os.cpu_count() or 1)))


def run_cases(names: list[str]) -> dict[str, tuple[str, float, str]]:
    """Every case of `names` compiled and run, by forked workers when there are several
    CPUs (compilation is CPU-bound and each case is independent)."""
    todo = [n for n in names if n not in RESULTS]
    if _workers() > 1 and len(todo) > 1:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(_workers(), mp_context=ctx) as pool:
            RESULTS.update(zip(todo, pool.map(_run, todo, chunksize=4)))
    else:
        RESULTS.update((n, _run(n)) for n in todo)
    return {n: RESULTS[n] for n in names}


def _selected(request: pytest.FixtureRequest) -> list[str]:
    """The case names of this session's selected test_node items (so `-k abs` compiles one
    case, not the suite)."""
    out = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if getattr(item, "originalname", "") == "test_node" and spec is not None:
            out.append(spec.params["name"])
    return out


_NAMES = sorted(EXPECTED) if EXPECTED and not UPDATE else []


@pytest.mark.slow
@pytest.mark.parametrize("name", _NAMES)
def test_node(suite: dict[str, Any], request: pytest.FixtureRequest, name: str) -> None:
    if name not in suite["cases"]:
        pytest.fail(f"{name} is listed in {EXPECTED_FILE.name} but onnx has no such case")
    if name not in RESULTS:
        run_cases([n for n in _selected(request) if n in suite["cases"]] or [name])
    status, _, reason = RESULTS[name]
    want, want_reason = EXPECTED[name]
    if want == "PASS" and status != "PASS":
        pytest.fail(f"regression: {name} passed before and now fails: {reason}")
    if want == "FAIL" and status == "PASS":
        pytest.fail(f"new pass: {name} is listed as FAIL ({want_reason}) and passes now; "
                    f"update {EXPECTED_FILE.name} (TFORGE_UPDATE_NODE_SUITE=1)")
    if want == "FAIL":
        pytest.xfail(want_reason or reason)


def test_report_totals() -> None:
    """Runs after the node tests (file order): the totals and the summed case time."""
    if not RESULTS:
        pytest.skip("no node tests ran")
    passed = sum(s == "PASS" for s, _, _ in RESULTS.values())
    total = sum(t for _, t, _ in RESULTS.values())
    print(f"\nONNX node suite: {passed}/{len(RESULTS)} pass, {total:.1f} s of case time "
          f"on {_workers()} worker(s)")


@pytest.mark.skipif(not UPDATE, reason="set TFORGE_UPDATE_NODE_SUITE=1 to rewrite the file")
def test_update_expectations(suite: dict[str, Any]) -> None:
    """Run every case (ours and onnxruntime's) and rewrite the expectations file."""
    names = sorted(suite["cases"])
    t0 = time.perf_counter()
    ours = run_cases(names)
    wall = time.perf_counter() - t0
    rows = [(n, *ours[n][:2], _ort_status(suite["cases"][n]), ours[n][2]) for n in names]
    n_ours = sum(r[1] == "PASS" for r in rows)
    n_ort = sum(r[3] == "PASS" for r in rows)
    head = [
        "# Every ONNX backend node test of the installed onnx, compiled for the CPU by",
        "# tensorforge and run. Columns: test, our status, seconds, onnxruntime's status on the",
        "# same case with the same comparison, the reason for our FAIL.",
        f"# cases {len(rows)}; tensorforge PASS {n_ours}; onnxruntime PASS {n_ort}; "
        f"wall {wall:.0f} s on {_workers()} worker(s).",
        "# Regenerate: TFORGE_UPDATE_NODE_SUITE=1 pytest "
        "packages/frontend-onnx/tests/test_onnx_node_suite.py",
        "# Failures by reason: python packages/frontend-onnx/tests/node_suite_report.py",
        "#",
    ]
    assert len(head) == HEADER_LINES
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
