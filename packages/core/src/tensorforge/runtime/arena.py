"""A bounded pool of per-call arenas: what lets many threads run one compiled model at once.

An arena is one call's private memory (the memory plan's pools, the input and output buffers
and every kernel's bound argument pointers); constants are shared read-only and never live in
an arena. `ArenaPool.borrow()` hands a free arena to the calling thread, making a new one when
none is free and fewer than `limit` exist, and otherwise waits until another thread gives one
back. A thread that already holds an arena (a re-entrant call: a kernel or callback that runs
the model again) never waits, because it could be waiting for itself: it gets an extra arena
beyond the bound, dropped again when it is returned.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from tensorforge.errors import TensorforgeError

__all__ = ["ArenaPool", "ClosedError", "default_limit"]

A = TypeVar("A")


class ClosedError(TensorforgeError):
    """The model was closed (`CompiledModel.close`); it cannot run any more."""


class ArenaPool(Generic[A]):
    """Arenas made by `make()`, at most `limit` of them (plus re-entrant extras)."""

    def __init__(self, make: Callable[[], A], limit: int, what: str = "model"):
        if limit < 1:
            raise TensorforgeError(f"max_concurrency must be at least 1, got {limit}")
        self._make = make
        self._limit = int(limit)
        self._what = what
        self._free: list[A] = []
        self._count = 0  # arenas in existence (free + borrowed)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0  # threads in `_cond.wait()`: acquirers and `close`
        self._held = threading.local()
        self._closed = False

    @property
    def limit(self) -> int:
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        if int(value) < 1:
            raise TensorforgeError(f"max_concurrency must be at least 1, got {value}")
        with self._cond:
            self._limit = int(value)
            while self._free and self._count > self._limit:
                self._free.pop()
                self._count -= 1
            self._cond.notify_all()

    @property
    def created(self) -> int:
        """Arenas that exist now (free or in use)."""
        return self._count

    def add(self, arena: A) -> None:
        """Put an arena made elsewhere (the one made at load to check the kernels) in the pool."""
        with self._cond:
            self._free.append(arena)
            self._count += 1

    def _depth(self) -> int:
        return getattr(self._held, "depth", 0)

    def acquire(self) -> A:
        depth = getattr(self._held, "depth", 0)
        with self._lock:  # the common case, a free arena: no Condition, no Python frames
            arena = self._free.pop() if self._free and not self._closed else None
        if arena is None:
            arena = self._acquire_slow(depth)
        self._held.depth = depth + 1
        return arena

    def _acquire_slow(self, depth: int) -> A:
        with self._cond:
            while True:
                if self._closed:
                    raise ClosedError(f"this {self._what} was closed; load or compile it again")
                if self._free:
                    return self._free.pop()
                if self._count < self._limit or depth > 0:
                    self._count += 1
                    break
                self._waiting += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1
        try:
            return self._make()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def release(self, arena: A) -> None:
        self._held.depth = getattr(self._held, "depth", 0) - 1
        with self._lock:
            if self._closed or self._count > self._limit:
                self._count -= 1  # a re-entrant extra, or the bound was lowered: drop it
            else:
                self._free.append(arena)
            if self._waiting:  # only a waiter needs waking (counted under this lock)
                self._cond.notify()

    @contextmanager
    def borrow(self) -> Iterator[A]:
        arena = self.acquire()
        try:
            yield arena
        finally:
            self.release(arena)

    def close(self, wait: bool = True) -> None:
        """Refuse new borrowers, wait for the arenas in use to come back (unless `wait` is
        false or the caller holds one itself), and drop every arena."""
        with self._cond:
            self._closed = True
            if wait and self._depth() == 0:
                while self._count > len(self._free):
                    self._waiting += 1
                    try:
                        self._cond.wait()
                    finally:
                        self._waiting -= 1
            self._count -= len(self._free)
            self._free.clear()
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return f"<ArenaPool {self._count} arena(s), limit {self._limit}>"


def default_limit() -> int:
    """Default bound on concurrent calls: the CPUs this process may use (at least 2)."""
    import os

    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, int(n or 1))

