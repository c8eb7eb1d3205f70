"""Executors: where build and run jobs execute. One interface, two engines.

``executor.map("module:function", payloads, timeout)`` runs ``function(payload)`` for each
payload and returns a :class:`JobResult` per payload, in order, whatever happens to the job:
``ok`` (its value), ``error`` (it raised: the message), ``timeout`` (it ran past ``timeout``
seconds: the worker was killed and replaced) or ``crash`` (the worker process died, e.g. of
SIGSEGV: it is replaced). A job never takes the caller down.

* :class:`LocalExecutor` (the default): a pool of worker processes of this machine, each a
  fresh interpreter (``python -m tensorforge.autotune._worker``) that registers the same
  plugins as the caller's registry.
* :class:`RayExecutor`: jobs are Ray tasks on a cluster (``ray`` is optional). ``resource``
  names a Ray custom resource, so a job for a device kind (e.g. ``"cuda-h200"``) runs only on
  nodes started with it (``ray start --resources='{"cuda-h200": 1}'``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

__all__ = ["Executor", "JobResult", "LocalExecutor", "RayExecutor", "current_plugins"]


@dataclass
class JobResult:
    status: str  # "ok", "error", "timeout", "crash"
    value: Any = None
    error: str = ""
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Executor(ABC):
    """Runs named functions on payloads with a hard time-out per job."""

    @abstractmethod
    def map(self, fn: str, payloads: Sequence[Any], timeout: float,
            resource: str | None = None) -> list[JobResult]: ...

    def close(self) -> None:  # noqa: B027 - optional
        pass

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def current_plugins() -> list[tuple[str, str, str | None]]:
    """(name, module, distribution) of the plugins loaded in this process's registry."""
    from ..plugins import get_registry

    return [(p.name, p.module, p.distribution) for p in get_registry().plugins
            if p.status == "loaded" and p.module]


_registered: set[str] | None = None


def init_worker(plugins: Sequence[tuple[str, str, str | None]]) -> None:
    """Make a worker's registry hold ``plugins`` (and nothing auto-loaded); a reused worker
    (Ray keeps them) registers only what it lacks."""
    global _registered
    from .. import plugins as P

    if _registered is None:
        P.set_autoload(False)
        _registered = set()
    reg = P.get_registry()
    for name, module, dist in plugins:
        if name in _registered:
            continue
        try:
            reg.register(module, name, distribution=dist)
        except Exception:  # noqa: BLE001 - a plugin failing here fails its jobs, not the worker
            pass
        _registered.add(name)


def call_job(fn: str, payload: Any) -> tuple[str, Any, str, float]:
    from ..plugins import load_ref

    t0 = time.perf_counter()
    try:
        value = load_ref(fn)(payload)
        return "ok", value, "", time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported to the caller
        tb = traceback.format_exc(limit=-4)
        return "error", None, f"{type(exc).__name__}: {exc}\n{tb}", time.perf_counter() - t0


def _worker_main(conn: Connection, plugins: Sequence[tuple[str, str, str | None]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    init_worker(plugins)
    conn.send(("ready",))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        conn.send(call_job(*msg))


def worker_main(argv: Sequence[str]) -> None:
    """Entry of a worker process: ``python -m tensorforge.autotune._worker FD PLUGINS``."""
    _worker_main(Connection(int(argv[0])), [tuple(p) for p in json.loads(argv[1])])


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "the worker died"
    if code < 0:
        try:
            return f"the worker was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the worker was killed by signal {-code}"
    return f"the worker exited with status {code}"


class _Worker:
    """A worker process (a fresh interpreter, not a fork: no inherited threads or JIT state,
    and no re-import of the caller's ``__main__``) talking over a socket pair."""

    def __init__(self, plugins: Sequence[tuple[str, str, str | None]]):
        ours, theirs = socket.socketpair()
        fd = theirs.fileno()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tensorforge.autotune._worker", str(fd),
             json.dumps(list(plugins))], pass_fds=(fd,), stdin=subprocess.DEVNULL)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False
        self.started = time.monotonic()
        self.job: tuple[int, float, float] | None = None  # (payload index, deadline, t0)

    @property
    def exitcode(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - an unkillable process
            pass
        self.conn.close()


class LocalExecutor(Executor):
    """``n_workers`` worker processes on this machine (default: all CPUs)."""

    def __init__(self, n_workers: int | None = None,
                 plugins: Sequence[tuple[str, str, str | None]] | None = None,
                 startup_timeout: float = 120.0):
        self.n_workers = max(1, n_workers or os.cpu_count() or 1)
        self.plugins = list(current_plugins() if plugins is None else plugins)
        self.startup_timeout = startup_timeout
        self.workers: list[_Worker] = []
        self.restarts = 0

    def _spawn(self) -> _Worker:
        w = _Worker(self.plugins)
        self.workers.append(w)
        return w

    def _replace(self, w: _Worker) -> None:
        w.kill()
        self.workers.remove(w)
        self.restarts += 1

    def map(self, fn: str, payloads: Sequence[Any], timeout: float,
            resource: str | None = None) -> list[JobResult]:
        results: list[JobResult | None] = [None] * len(payloads)
        pending = deque(range(len(payloads)))
        while len(self.workers) < min(self.n_workers, len(payloads)):
            self._spawn()
        while pending or any(w.job for w in self.workers):
            for w in list(self.workers):
                if w.ready and w.job is None and pending:
                    i = pending.popleft()
                    w.conn.send((fn, payloads[i]))
                    now = time.monotonic()
                    w.job = (i, now + timeout, now)
            if pending:
                while len(self.workers) < min(self.n_workers, len(payloads)):
                    self._spawn()
            now = time.monotonic()
            deadlines = [w.job[1] for w in self.workers if w.job]
            deadlines += [w.started + self.startup_timeout for w in self.workers if not w.ready]
            wait_for = max(0.0, min(deadlines) - now) if deadlines else 0.05
            ready = wait([w.conn for w in self.workers], timeout=wait_for)
            by_conn = {w.conn: w for w in self.workers}
            for conn in ready:
                w = by_conn[conn]
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    try:
                        w.proc.wait(5)
                    except subprocess.TimeoutExpired:
                        pass
                    if w.job is not None:
                        i, _, t0 = w.job
                        results[i] = JobResult("crash", None, _describe_exit(w.exitcode),
                                               time.monotonic() - t0)
                    elif not w.ready:
                        self._replace(w)
                        raise RuntimeError(f"a measurement worker failed to start: "
                                           f"{_describe_exit(w.exitcode)}") from None
                    self._replace(w)
                    continue
                if msg[0] == "ready":
                    w.ready = True
                    continue
                assert w.job is not None
                status, value, error, dt = msg
                results[w.job[0]] = JobResult(status, value, error, dt)
                w.job = None
            now = time.monotonic()
            for w in list(self.workers):
                if w.job is not None and now >= w.job[1]:
                    i, _, t0 = w.job
                    results[i] = JobResult("timeout", None,
                                           f"no result after {timeout:g} s (worker killed)",
                                           now - t0)
                    self._replace(w)
                elif not w.ready and now >= w.started + self.startup_timeout:
                    self._replace(w)
                    raise RuntimeError(f"a measurement worker did not start within "
                                       f"{self.startup_timeout:g} s")
        return [r if r is not None else JobResult("crash", None, "lost") for r in results]

    def close(self) -> None:
        for w in self.workers:
            try:
                if w.job is None and w.exitcode is None:
                    w.conn.send(None)
                    w.proc.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                pass
            w.kill()
        self.workers.clear()


def _ray_job(fn: str, payload: Any, plugins: Sequence[tuple[str, str, str | None]]) -> Any:
    init_worker(plugins)
    return call_job(fn, payload)


class RayExecutor(Executor):
    """Jobs as Ray tasks. Connects to ``address`` (or starts a local Ray with ``init``
    options) unless Ray is already initialized in this process."""

    def __init__(self, address: str | None = None, max_in_flight: int | None = None,
                 plugins: Sequence[tuple[str, str, str | None]] | None = None,
                 **init: Any):
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("RayExecutor needs ray: pip install ray") from exc
        self.ray = ray
        if not ray.is_initialized():
            ray.init(address=address, **init)
        self.max_in_flight = max_in_flight or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.plugins = list(current_plugins() if plugins is None else plugins)
        self._remote = ray.remote(_ray_job)

    def map(self, fn: str, payloads: Sequence[Any], timeout: float,
            resource: str | None = None) -> list[JobResult]:
        ray = self.ray
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if resource:
            opts["resources"] = {resource: 1}
        remote = self._remote.options(**opts)
        results: list[JobResult | None] = [None] * len(payloads)
        pending = deque(range(len(payloads)))
        flight: dict[Any, tuple[int, float]] = {}
        while pending or flight:
            while pending and len(flight) < self.max_in_flight:
                i = pending.popleft()
                flight[remote.remote(fn, payloads[i], self.plugins)] = (i, time.monotonic())
            first = min(t for _, t in flight.values()) + timeout
            done, _ = ray.wait(list(flight), num_returns=1,
                               timeout=max(0.0, first - time.monotonic()))
            for ref in done:
                i, t0 = flight.pop(ref)
                try:
                    status, value, error, dt = ray.get(ref)
                    results[i] = JobResult(status, value, error, dt)
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.RayActorError,
                        ray.exceptions.LocalRayletDiedError) as exc:
                    results[i] = JobResult("crash", None, f"the Ray worker died: {exc}",
                                           time.monotonic() - t0)
                except ray.exceptions.RayError as exc:
                    results[i] = JobResult("error", None, str(exc), time.monotonic() - t0)
            now = time.monotonic()
            for ref, (i, t0) in list(flight.items()):
                if now - t0 >= timeout:
                    ray.cancel(ref, force=True)
                    flight.pop(ref)
                    results[i] = JobResult("timeout", None, f"no result after {timeout:g} s "
                                           "(Ray task cancelled)", now - t0)
        return [r if r is not None else JobResult("crash", None, "lost") for r in results]
