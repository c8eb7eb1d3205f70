"""Benchmarks of issue 3 (pytest-benchmark). Run explicitly: `python -m pytest benchmarks/`.

The root pyproject's testpaths (`packages`, `tests`) keep them out of the default test run.
The llvm plugin is registered per test by the hermetic `llvm_target` fixture of
`tensorforge.testing`; a summary table is printed at the end and written to
`benchmarks/results/` (`results-<time>.json` and `.md`, `latest.md`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _common import Report, machine_info  # noqa: E402

_REPORT = Report()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--bench-rounds", type=int, default=15,
                     help="timed rounds per benchmark (each: baseline then ours)")
    parser.addoption("--bench-threads", default="1,2",
                     help="comma-separated thread counts (default 1,2)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "threads" in metafunc.fixturenames:
        opt = metafunc.config.getoption("--bench-threads")
        metafunc.parametrize("threads", [int(t) for t in opt.split(",")])


@pytest.fixture(scope="session")
def report() -> Report:
    if not _REPORT.info:
        _REPORT.info.update(machine_info())
    return _REPORT


@pytest.fixture
def rounds(request: pytest.FixtureRequest) -> int:
    return int(request.config.getoption("--bench-rounds"))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    if not _REPORT.rows:
        return
    path = _REPORT.write()
    tr = terminalreporter
    tr.section("tensorforge benchmark summary")
    tr.write_line(_REPORT.table())
    keys = ("cpu_model", "llvm_mcpu", "float32_lanes", "llvm_vector_features",
            "numpy_threadpools", "loadavg_start", "loadavg_end")
    for k in keys:
        tr.write_line(f"{k}: {_REPORT.info.get(k)}")
    tr.write_line(f"written: {path} (+ .json)")
