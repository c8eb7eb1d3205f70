"""The fuzz harness: draw cases with hypothesis, run each job in a child process forked by
a fork server (`forkserver.py`), and classify what happened.

A case must end in a clean error (a `TensorforgeError` with a message) or in outputs that
match ONNX Runtime's. Failures: ``crash`` (the job's process died of a signal),
``hang`` (no result within the time-out; the process is killed), ``internal`` (any other
exception), ``mismatch`` (outputs differ), ``accepted_invalid`` (we ran a model ONNX Runtime
rejects as invalid). Not failures: ``clean_error``, ``match``, ``ort_unsupported`` (ORT has no
kernel for it), ``ort_failed`` (ORT itself crashed or hung), ``skipped`` (no inputs can be
made), ``known`` (a failure matching an entry of `KNOWN_ISSUES`, listed but not failing),
``edited`` (a package edited with its manifest hashes recomputed ran and gave another answer:
a self-consistent edit, as an attacker who rewrites the manifest can make; only pinning the
whole file, ``tensorforge.load(path, sha256=...)``, catches it, and packages are trusted
code; crashes, hangs and internal errors of such cases still fail).

Each case is one integer seed: the plan (seed model, mutations) is drawn from it by
hypothesis in the child, deterministically. Every failure prints its seed and plan;
``python tests/fuzz/run.py onnx --seed S`` runs that case again.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
PLUGINS = [("llvm", "tensorforge_llvm.plugin", "tensorforge-target-llvm"),
           ("onnx", "tensorforge_onnx.plugin", "tensorforge-frontend-onnx")]
TARGET = "llvm -num-threads=1"
FAILURES = ("crash", "hang", "internal", "mismatch", "accepted_invalid")
CATEGORIES = (*FAILURES, "known", "clean_error", "match", "edited", "ort_unsupported",
              "ort_failed", "skipped")
RTOL, ATOL = 1e-4, 1e-5
INF = float("inf")


@dataclass(frozen=True)
class KnownIssue:
    """A failure class that is not tensorforge's (a deviation of the reference) or is fixed
    elsewhere: counted as ``known``, not failing."""

    name: str
    where: str
    matches: Callable[[str, str, dict[str, Any]], bool]  # (category, detail, plan) -> bool


_RECURRENT_SEEDS = ("lstm_step", "gru_split")


def _rnn_nan(cat: str, detail: str, plan: dict[str, Any]) -> bool:
    """A recurrent seed model into which the case put a NaN, an infinity or a huge value
    (1e30): IEEE arithmetic gives a gate of exactly 0 or 1 (and 0 * inf = NaN) where ORT's
    clamped sigmoid never does, so the two differ (ours equals onnx.reference's GRU/LSTM)."""
    return (cat == "mismatch" and plan.get("seed") in _RECURRENT_SEEDS
            and (("nan where ORT has" in detail and _injects_non_finite(plan))
                 or _injects(plan, "huge")))


def _reduce_max_skips_nan(cat: str, detail: str, plan: dict[str, Any]) -> bool:
    """Our NaN where ORT has a number, in the seed model that ends in ReduceMax, after the
    case put a NaN into it: ORT's ReduceMax skips NaN; numpy's max and ours propagate it."""
    return (cat == "mismatch" and "nan where ORT has" in detail
            and plan.get("seed") == "upsample" and _injects_non_finite(plan))


def _instance_norm_inf_scale(cat: str, detail: str, plan: dict[str, Any]) -> bool:
    """ORT's NaN where we have a number, in the seed model with InstanceNormalization, after
    the case put an infinity into it: ORT computes x * a + (b - mean * a), which is inf - inf
    = NaN for an infinite scale a; the ONNX formula (and onnx.reference) gives +-inf."""
    return (cat == "mismatch" and "(not nan) where ORT has nan" in detail
            and plan.get("seed") == "misc_ops" and _injects_non_finite(plan))


def _injects(plan: dict[str, Any], kind: str) -> bool:
    return any(mut.get("kind") == kind for mut in plan.get("mutations", []))


def _injects_non_finite(plan: dict[str, Any]) -> bool:
    for mut in plan.get("mutations", []):
        if mut.get("kind") in ("nan", "inf", "-inf"):
            return True
        value = mut.get("value")
        if isinstance(value, float) and (value != value or value in (INF, -INF)):
            return True
    return False


#: Known differences that are not this fuzzer's owner's to fix: an open issue with the branch
#: that fixes it, or a deviation of the reference itself (each checked against onnx.reference
#: or numpy before it was listed). Remove an entry when its fix is merged (the CI test then
#: fails if the problem is still there).
KNOWN_ISSUES: list[KnownIssue] = [
    KnownIssue("ONNX Runtime's LSTM and GRU kernels turn a NaN, an infinity or a huge value "
               "put into the model into other numbers (its MLAS sigmoid and tanh clamp the "
               "input: a gate is never exactly 0 or 1, so 0 * inf and 0 * 1e30 never "
               "happen); ours gives what ONNX's Sigmoid, Tanh and IEEE arithmetic define, as "
               "onnx.reference does (fuzz seeds 426, 543, 1038, 1761, 3912, 3921, 4726)",
               "a deviation of the reference", _rnn_nan),
    KnownIssue("ONNX Runtime's ReduceMax skips NaN; numpy's max, onnx.reference and ours "
               "propagate it (fuzz seed 4532)", "a deviation of the reference",
               _reduce_max_skips_nan),
    KnownIssue("ONNX Runtime's InstanceNormalization gives NaN for an infinite scale (it "
               "computes x * a + (b - mean * a): inf - inf); the ONNX formula, onnx.reference "
               "and ours give +-inf (fuzz seeds 7178, 7411)", "a deviation of the reference",
               _instance_norm_inf_scale),
]


@dataclass
class Outcome:
    seed: int
    category: str
    detail: str = ""
    plan: dict[str, Any] | None = None
    seconds: float = 0.0


@dataclass
class Report:
    kind: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> Counter:
        return Counter(o.category for o in self.outcomes)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.category in FAILURES]

    def summary(self) -> str:
        c = self.counts()
        parts = ", ".join(f"{k} {c.get(k, 0)}" for k in CATEGORIES)
        return f"fuzz {self.kind}: {len(self.outcomes)} cases in {self.seconds:.0f} s: {parts}"

    def describe(self, o: Outcome, limit: int = 2000) -> str:
        plan = json.dumps(o.plan, default=_json_default) if o.plan is not None else "?"
        return (f"[{o.category}] {self.kind} case seed {o.seed}: {o.detail[:limit]}\n"
                f"  plan: {plan}\n  reproduce: python tests/fuzz/run.py {self.kind} "
                f"--seed {o.seed}")


def _json_default(x: Any) -> Any:
    if isinstance(x, bytes):
        return x.hex()
    return str(x)


# -- case generation ---------------------------------------------------------------------------
def draw(strategy: Any, case_seed: int) -> dict[str, Any]:
    """The plan of case `case_seed`: hypothesis's third example of `strategy` under that seed
    (its first is the minimal one). Deterministic across processes, so the seed alone
    reproduces the case."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    got: list[dict[str, Any]] = []
    _without_local_constants()

    @settings(max_examples=3, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @hseed(case_seed)
    @given(strategy)
    def collect(plan: dict[str, Any]) -> None:
        got.append(plan)

    collect()
    return got[-1]


def _without_local_constants() -> None:
    """Hypothesis mixes literals from the source of every loaded local module into what it
    draws, so the same seed drew different cases in processes that had imported different
    modules (a worker after its first compile, the parent). Without that pool the draw
    depends on the seed alone. (An internal of hypothesis 6.1xx; without it, nothing to do.)"""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        providers._get_local_constants = providers.Constants


# -- comparing outputs -------------------------------------------------------------------------
def compare(ours: list[np.ndarray], ref: list[np.ndarray]) -> str:
    """'' if `ours` matches `ref` (shapes, dtypes, values within RTOL/ATOL, the same NaN and
    infinity positions), else what differs."""
    if len(ours) != len(ref):
        return f"{len(ours)} outputs, ORT has {len(ref)}"
    for k, (a, b) in enumerate(zip(ours, ref)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return f"output {k}: shape {a.shape}, ORT has {b.shape}"
        if a.dtype != b.dtype:
            return f"output {k}: dtype {a.dtype}, ORT has {b.dtype}"
        if a.dtype.kind != "f":
            if not np.array_equal(a, b):
                bad = int(np.sum(a != b))
                return f"output {k}: {bad} of {a.size} values differ"
            continue
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if (nan_a != nan_b).any():
            i = int(np.flatnonzero(nan_a != nan_b)[0])
            if nan_b.reshape(-1)[i]:
                return f"output {k}: {a.reshape(-1)[i]} (not nan) where ORT has nan at {i}"
            return f"output {k}: nan where ORT has {b.reshape(-1)[i]} at {i}"
        ok = ~nan_a
        with np.errstate(all="ignore"):
            close = np.isclose(a[ok], b[ok], rtol=RTOL, atol=ATOL) | (a[ok] == b[ok])
        if not close.all():
            i = int(np.flatnonzero(~close)[0])
            return (f"output {k}: {int((~close).sum())} of {a.size} values differ, e.g. "
                    f"{a[ok][i]!r} vs ORT {b[ok][i]!r}")
    return ""


# -- running -----------------------------------------------------------------------------------
def _classify_ours(res: Any) -> tuple[str, str]:
    """(category, detail) from our job's JobResult; category 'ok' means: compare with ORT."""
    if res.status == "timeout":
        return "hang", res.error
    if res.status == "crash":
        return "crash", res.error
    if res.status == "error":  # the job function itself failed: a harness bug, report it
        return "internal", "harness: " + res.error
    value = res.value
    if value["status"] == "clean":
        return "clean_error", value["error"]
    if value["status"] in ("internal", "harness"):
        return "internal", value["error"]
    if value["status"] == "no_feeds":
        return "skipped", "compiled; no inputs can be made for the declared types"
    return "ok", ""


def _classify_ref(ours_value: dict[str, Any], res: Any) -> tuple[str, str]:
    if res.status in ("timeout", "crash", "error"):
        return "ort_failed", f"ONNX Runtime {res.status}: {res.error}"
    value = res.value
    if value["status"] in ("rejected", "run_error"):
        err = value["error"]
        if err.startswith("NotImplemented"):
            return "ort_unsupported", err
        return "accepted_invalid", f"we ran it; ONNX Runtime says {err}"
    if value["status"] == "no_feeds":
        return "skipped", "no inputs"
    diff = compare(ours_value["outputs"], value["outputs"])
    return ("mismatch", diff) if diff else ("match", "")


def _known(category: str, detail: str, plan: dict[str, Any] | None) -> KnownIssue | None:
    return next((k for k in KNOWN_ISSUES if k.matches(category, detail, plan or {})), None)


class Runner:
    """Runs cases of one kind, `n_workers` at a time, each job in a child forked by a fork
    server (`forkserver.py`: a fresh interpreter that imports everything once), with
    `timeout` seconds per job (see the module doc)."""

    def __init__(self, kind: str, n_workers: int = 2, timeout: float = 60.0,
                 env: dict[str, str] | None = None):
        self.kind = kind
        self.n_workers = n_workers
        self.timeout = timeout
        self.env = dict(env or {})

    def run(self, seeds: Iterable[int], *, time_budget: float | None = None,
            progress: Callable[[Report], None] | None = None) -> Report:
        report = Report(self.kind)
        cfg = {"kind": self.kind, "seeds": list(seeds), "workers": self.n_workers,
               "timeout": self.timeout, "time_budget": time_budget, "target": TARGET}
        env = {**os.environ, **self.env}
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, str(HERE / "forkserver.py")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        pending: dict[int, tuple[Outcome, dict]] = {}  # seed -> (outcome, our result) for ORT
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write((json.dumps(cfg) + "\n").encode())
            proc.stdin.close()
            while True:
                try:
                    event = pickle.load(proc.stdout)
                except EOFError:
                    raise RuntimeError(f"the fuzz fork server died (exit status "
                                       f"{proc.wait()}); run tests/fuzz/forkserver.py "
                                       "by hand to see why") from None
                if event[0] == "done":
                    break
                if event[0] == "ready":
                    t0 = time.monotonic()  # the time box counts cases, not imports
                    continue
                finished = self._event(event, pending)
                if finished is not None:
                    report.outcomes.append(self._settle(finished))
                    report.seconds = time.monotonic() - t0
                    if progress:
                        progress(report)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        report.seconds = time.monotonic() - t0
        return report

    def _event(self, event: tuple[Any, ...], pending: dict[int, tuple[Outcome, dict]]
               ) -> Outcome | None:
        """The outcome an event completes, or None while its case waits for ORT."""
        which, seed, res = event
        if which == "reference":
            o, value = pending.pop(seed)
            o.category, o.detail = _classify_ref(value, res)
            if o.category == "mismatch" and (o.plan or {}).get("rehash"):
                o.category = "edited"
            return o
        cat, detail = _classify_ours(res)
        plan = res.value.get("plan") if res.status == "ok" else None
        o = Outcome(seed, cat, detail, plan, res.duration)
        if cat == "ok":
            pending[seed] = (o, res.value)
            return None
        return o

    def _settle(self, o: Outcome) -> Outcome:
        known = _known(o.category, o.detail, o.plan)
        if known is not None:
            o.detail = f"{o.category} ({known.name}; {known.where}): {o.detail}"
            o.category = "known"
        if o.plan is None and o.category in FAILURES:  # the worker died with the plan
            o.plan = plan_of(self.kind, o.seed)
        return o


def plan_of(kind: str, seed: int) -> dict[str, Any]:
    """The plan of case `seed` of `kind`, drawn in this process."""
    ensure_importable()
    from kinds import KINDS

    return draw(KINDS[kind].strategy(), seed)


def worker_env(memory_limit: str = "256M", max_nodes: int = 3000) -> dict[str, str]:
    """Environment of the fuzz workers: the fuzz modules importable, small size limits (so
    huge mutated shapes and sequence lengths that unroll a recurrent op into tens of
    thousands of nodes are refused quickly; the seed models have a few hundred at most), one
    OpenMP thread."""
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH", "")]))
    return {"PYTHONPATH": path, "TENSORFORGE_MEMORY_LIMIT": memory_limit,
            "TENSORFORGE_MAX_GRAPH_NODES": str(max_nodes), "OMP_NUM_THREADS": "1"}


def ensure_importable() -> None:
    """Let this process import the fuzz modules (seeds, mutators, kinds) by name."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
