"""Runs the whole suite (what `tforge bench` does; `benchmarks/` runs the same cases under
pytest-benchmark): operator workloads, then models, for each thread count; then the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .baselines import BASELINES

ALL_MODELS = ("resnet18", "mobilenet_v2", "lstm_lm", "dqn", "dcgan", "squeezenet1_1")
#: the zoo's transformers at full size (`tforge bench --transformers`; not in the default set:
#: each compiles in a minute or more and their weights take 0.4-0.6 GB)
TRANSFORMER_MODELS = ("bert", "gpt2", "vit_b_16")
QUICK_MODELS = ("dqn",)


@dataclass
class BenchConfig:
    """What to run. `quick`: one workload per op kind and the DQN, 5 rounds, 1 thread,
    unless models/threads/rounds are given."""

    models: tuple[str, ...] | None = None
    threads: tuple[int, ...] | None = None
    rounds: int | None = None
    ops: bool = True
    e2e: bool = True
    quick: bool = False
    op_filter: str | None = None
    baselines: tuple[str, ...] = BASELINES
    results: Path = field(default_factory=lambda: default_results())
    baseline_json: str | None = None
    command: str = ""

    def resolved(self) -> BenchConfig:
        c = BenchConfig(**{k: getattr(self, k) for k in self.__dataclass_fields__})
        c.models = c.models or (QUICK_MODELS if c.quick else ALL_MODELS)
        c.threads = c.threads or ((1,) if c.quick else (1, 2))
        c.rounds = c.rounds or (5 if c.quick else 15)
        return c


def default_results() -> Path:
    """`benchmarks/results` when run from the repository, else `./tforge-bench-results`."""
    here = Path.cwd() / "benchmarks"
    return here / "results" if here.is_dir() else Path.cwd() / "tforge-bench-results"


def op_workloads(quick: bool = False, op_filter: str | None = None) -> list[Any]:
    from .workloads import extract, quick_subset

    ws = extract()
    if quick:
        ws = quick_subset(ws)
    if op_filter:
        ws = [w for w in ws if op_filter in w.key]
    return ws


def peak_for(threads: int) -> tuple[Callable[[], None], float]:
    """The FMA-peak kernel for `threads` (0.2 GFLOP per thread and call)."""
    from .fma import peak_kernel
    from .machine import host_lanes

    return peak_kernel(threads, host_lanes(), flops_per_thread=2e8)


def run(config: BenchConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the configured suite and write its report; returns `report.write`'s summary."""
    from .machine import machine_info
    from .report import document, write
    from .suite import measure_model, measure_op

    cfg = config.resolved()
    assert cfg.threads and cfg.models and cfg.rounds
    info = machine_info()
    log(f"machine: {info['cpu_model']}, {info['usable_cpus']} usable CPUs, LLVM CPU "
        f"{info['llvm_mcpu']}, {info['float32_lanes']} float32 lanes")
    rows: list[dict[str, Any]] = []
    workloads = op_workloads(cfg.quick, cfg.op_filter) if cfg.ops else []
    for threads in cfg.threads:
        peak = peak_for(threads) if workloads else None
        for w in workloads:
            r = measure_op(w, threads, cfg.rounds, cfg.baselines, peak)
            rows.append(r)
            log(_line(r))
        for name in cfg.models if cfg.e2e else ():
            r = measure_model(name, threads, cfg.rounds, cfg.baselines)
            rows.append(r)
            log(_line(r))
    meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    out = write(document(rows, info, meta), cfg.results, cfg.baseline_json)
    log(f"written: {out['folder']} and {Path(cfg.results) / 'latest'}.{{md,json,png}}; "
        f"{out['note']}; chart: {out['chart']}")
    for g in out["regressions"]:
        log(f"REGRESSION {g['id']} {g['ratio']}: {g['baseline']:.3g} -> {g['now']:.3g} "
            f"({g['change']:+.0%})")
    return out


def _line(r: dict[str, Any]) -> str:
    parts = [f"{r['level']:<5} {r['name']:<38} t{r['threads']}",
             f"ours {r['ours_s'][1] * 1e3:8.3f} ms"]
    if r.get("pct_peak"):
        parts.append(f"{r['gflops'][1]:7.1f} GFLOP/s {r['pct_peak'][1]:6.1%} of peak")
    for b in BASELINES:
        if r.get(f"ratio_{b}"):
            parts.append(f"x{r[f'ratio_{b}'][1]:.2f} vs {b}")
    if r.get("correct") is False:
        parts.append(f"WRONG (max err {r.get('max_abs_err')})")
    return "  ".join(parts)
