"""Benchmarks of issues 3 and 5 (pytest-benchmark). Run explicitly: `python -m pytest benchmarks/`.

The root pyproject's testpaths (`packages`, `tests`) keep them out of the default test run.
The llvm plugin is registered per test by the hermetic `llvm_target` fixture of
`tensorforge.testing`; a summary table is printed at the end and written to
`benchmarks/results/` (`results-<time>.json` and `.md`, `latest.md`). Issue 5's operator and
model benchmarks (`test_bench_ops.py`, `test_bench_models.py`) are thin wrappers over
`tensorforge.bench`; their report goes to `benchmarks/results/<time>/` and
`benchmarks/results/latest.{md,json,png}`, with the issue-3 table appended.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _common import RESULTS, Report, machine_info  # noqa: E402
from _suite import MACHINE, ROWS  # noqa: E402

_REPORT = Report()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--bench-rounds", type=int, default=15,
                     help="timed rounds per benchmark (each: baseline then ours)")
    parser.addoption("--bench-threads", default="1,2",
                     help="comma-separated thread counts (default 1,2)")
    parser.addoption("--bench-quick", action="store_true",
                     help="issue 5: one workload per op kind and the DQN only")
    parser.addoption("--bench-models", default="",
                     help="issue 5: comma list of models (default: all six)")
    parser.addoption("--bench-ops", default=None, metavar="TEXT",
                     help="issue 5: only operator workloads whose name contains TEXT")
    parser.addoption("--bench-baselines", default="ort,torch",
                     help="issue 5: frameworks to compare with (missing ones are skipped)")
    parser.addoption("--bench-baseline", default=None, metavar="JSON",
                     help="issue 5: compare ratios with this JSON (default: results/latest.json)")


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


@pytest.fixture
def baselines(request: pytest.FixtureRequest) -> tuple[str, ...]:
    opt = request.config.getoption("--bench-baselines")
    return tuple(b for b in opt.split(",") if b)


def _write_suite(config: pytest.Config, extra_md: str) -> dict | None:
    """The issue-5 report (tensorforge.bench.report) of this session's rows."""
    if not ROWS:
        return None
    from tensorforge.bench.report import document, write

    meta = {"command": "pytest " + " ".join(config.invocation_params.args),
            "rounds": config.getoption("--bench-rounds"),
            "threads": config.getoption("--bench-threads")}
    return write(document(ROWS, MACHINE, meta), RESULTS,
                 config.getoption("--bench-baseline"), extra_md)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    tr = terminalreporter
    extra = f"## Issue-3 benchmarks\n\n{_REPORT.table()}\n" if _REPORT.rows else ""
    out = _write_suite(config, extra)
    if out is not None:
        tr.section("tensorforge benchmark (issue 5)")
        tr.write_line(out["markdown"].partition("## Machine")[0])
        tr.write_line(f"written: {out['folder']}, {RESULTS / 'latest'}.{{md,json,png}}")
    if not _REPORT.rows:
        return
    path = _REPORT.write()
    if out is not None:  # latest.md holds both tables
        (RESULTS / "latest.md").write_text(out["markdown"])
    tr.section("tensorforge benchmark summary")
    tr.write_line(_REPORT.table())
    keys = ("cpu_model", "llvm_mcpu", "float32_lanes", "llvm_vector_features",
            "numpy_threadpools", "loadavg_start", "loadavg_end")
    for k in keys:
        tr.write_line(f"{k}: {_REPORT.info.get(k)}")
    tr.write_line(f"written: {path} (+ .json)")
