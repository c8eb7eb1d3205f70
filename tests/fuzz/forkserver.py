"""The fuzz runner's fork server: a fresh interpreter that imports tensorforge, its plugins,
onnx, ONNX Runtime and the mutators once (and builds the seed packages), then runs every job
(one case through tensorforge, or through ONNX Runtime) in a child forked from itself, with a
time-out per job.

A fork costs milliseconds where a fresh worker interpreter costs seconds, and every job starts
from the same clean state: a crash (a signal) or a hang (the child is killed at its deadline)
ends one child, never the run, and nothing one case leaves behind (JIT modules, arenas, open
libraries) reaches the next. The server itself never runs a kernel or an ONNX Runtime session
(no OpenMP or ORT thread pools exist when it forks); it is a fresh interpreter, not the
caller, for the same reason (a pytest process has run everything).

Protocol: the caller writes one JSON line {"kind", "seeds", "workers", "timeout",
"time_budget", "target"} to stdin; the server writes pickled events to stdout:
("ready", seconds), ("ours", seed, JobResult), ("reference", seed, JobResult) and ("done",)
after the last. A reference job is queued as soon as its case's own job ran to outputs."""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_CHUNK = 1 << 16


def _prepare(kind: str) -> None:
    """Import what the jobs need, register the plugins, build the seed packages."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import hypothesis  # noqa: F401
    import onnx  # noqa: F401
    import onnxruntime  # noqa: F401
    from harness import PLUGINS
    from jobs import _run_ours  # noqa: F401
    from kinds import KINDS

    from tensorforge.autotune.executor import init_worker

    init_worker(PLUGINS)
    import tensorforge.compiler  # noqa: F401

    if kind == "package":
        from mutate_package import seed_package
        from seeds import SEEDS

        for name in sorted(SEEDS):
            seed_package(name)
    # hypothesis's first draw builds the strategies and the seed models (seconds): once
    # here, not in every child
    from harness import draw

    plan = draw(KINDS[kind].strategy(), 0)
    KINDS[kind].build(plan)


def _child(job: tuple[str, int, Any], target: str, kind: str, wfd: int) -> None:
    """In the forked child: run the job, write (status, value, error, seconds), exit."""
    from tensorforge.autotune.executor import call_job

    which, seed, payload = job
    if which == "ours":
        payload = {"kind": kind, "seed": seed, "target": target}
    result = call_job(f"jobs:{'ours' if which == 'ours' else 'reference'}", payload)
    try:
        data = pickle.dumps(result)
    except Exception as e:  # noqa: BLE001 - an unpicklable value is a harness error
        data = pickle.dumps(("error", None, f"unpicklable result: {e}", result[3]))
    view = memoryview(data)
    while view:
        view = view[os.write(wfd, view):]
    os._exit(0)


class _Running:
    def __init__(self, pid: int, fd: int, job: tuple[str, int, Any], timeout: float):
        self.pid, self.fd, self.job = pid, fd, job
        self.t0 = time.monotonic()
        self.deadline = self.t0 + timeout
        self.chunks: list[bytes] = []


def _finish(r: _Running, timed_out: bool) -> Any:
    from tensorforge.autotune.executor import JobResult

    if timed_out:
        try:
            os.kill(r.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(r.pid, 0)
    os.close(r.fd)
    seconds = time.monotonic() - r.t0
    if timed_out:
        return JobResult("timeout", None, f"no result after {seconds:.0f} s (killed)", seconds)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return JobResult("crash", None, f"the job's process was killed by {name}", seconds)
    code = os.WEXITSTATUS(status)
    try:
        st, value, error, took = pickle.loads(b"".join(r.chunks))
    except Exception:  # noqa: BLE001 - no complete result: the child died another way
        return JobResult("crash", None, f"the job's process exited with status {code} "
                         "without a result", seconds)
    return JobResult(st, value, error, took)


def serve(cfg: dict[str, Any], out: Any) -> None:
    kind, target = cfg["kind"], cfg["target"]
    workers, timeout = max(1, int(cfg["workers"])), float(cfg["timeout"])
    budget = cfg.get("time_budget")
    t0 = time.monotonic()
    _prepare(kind)
    _send(out, ("ready", time.monotonic() - t0))
    t0 = time.monotonic()
    seeds = deque(cfg["seeds"])
    refs: deque[tuple[str, int, Any]] = deque()
    running: dict[int, _Running] = {}
    while seeds or refs or running:
        if budget is not None and time.monotonic() - t0 > budget:
            seeds.clear()  # the time box: finish what runs, start no new case
        while len(running) < workers and (refs or seeds):
            job = refs.popleft() if refs else ("ours", seeds.popleft(), None)
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                os.close(rfd)
                try:
                    _child(job, target, kind, wfd)
                finally:
                    os._exit(70)
            os.close(wfd)
            running[rfd] = _Running(pid, rfd, job, timeout)
        if not running:
            continue
        wait = max(0.0, min(r.deadline for r in running.values()) - time.monotonic())
        ready, _, _ = select.select(list(running), [], [], min(wait, 1.0))
        done: list[tuple[_Running, bool]] = []
        for fd in ready:
            r = running[fd]
            chunk = os.read(fd, _CHUNK)
            if chunk:
                r.chunks.append(chunk)
            else:
                done.append((r, False))
        now = time.monotonic()
        done += [(r, True) for r in running.values()
                 if r.deadline <= now and all(r is not d for d, _ in done)]
        for r, timed_out in done:
            del running[r.fd]
            result = _finish(r, timed_out)
            which, seed, _ = r.job
            _send(out, (which, seed, result))
            if which == "ours" and result.status == "ok" and result.value.get(
                    "status") == "ok":
                refs.append(("reference", seed, result.value["reference"]))
    _send(out, ("done",))


def _send(out: Any, event: tuple[Any, ...]) -> None:
    pickle.dump(event, out)
    out.flush()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides when we stop
    cfg = json.loads(sys.stdin.readline())
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray prints must not corrupt the stream
    serve(cfg, out)


if __name__ == "__main__":
    main()
