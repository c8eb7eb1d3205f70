"""A bounded pool of per-call arenas: what lets many threads run one compiled model at once.

An arena is one call's private memory (the memory plan's pools, the input and output buffers
and every kernel's bound argument pointers); constants are shared read-only and never live in
an arena. `ArenaPool.borrow()` hands a free arena to the calling thread, making a new one when
none is free and fewer than `limit` exist, and otherwise waits until another thread gives one
back. A thread that already holds an arena (a re-entrant call: a kernel or callback that runs
the model again) never waits, because it could be waiting for itself: it gets an extra arena
beyond the bound, dropped again when it is returned.

A pool may also have a *fast arena* (`set_fast`) that a native caller takes and gives back
without this pool's lock (the ahead-of-time executor's quick path, `aot_quick.py`): it counts
towards the bound and the general path lends it only at the bound (a thread holding an arena
for long, as `benchmark` does, would otherwise keep the native caller off it), and its slot
is told how many threads wait, so that a native holder can ask to wake one
(`fast_returned`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

from tensorforge.errors import TensorforgeError

__all__ = ["ArenaPool", "ClosedError", "default_limit"]

A = TypeVar("A")


class ClosedError(TensorforgeError):
    """The model was closed (`CompiledModel.close`); it cannot run any more."""


class FastSlot(Protocol):
    """The lock of a fast arena, kept where native code can take it (all calls under the GIL)."""

    def take(self) -> bool: ...  # take it if free
    def give(self) -> None: ...
    def waiting(self, n: int) -> None: ...  # how many threads wait in the pool
    def close(self) -> None: ...  # refuse every later take
    def busy(self) -> bool: ...


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
        self._slot: FastSlot | None = None
        self._fast: A | None = None

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

    def set_fast(self, arena: A, slot: FastSlot) -> None:
        """Make `arena` the fast one, taken and given through `slot` (see the module
        docstring)."""
        with self._cond:
            self._fast, self._slot = arena, slot
            self._count += 1
            slot.waiting(self._waiting)

    def fast_returned(self) -> None:
        """A native caller gave the fast arena back while threads waited: wake one."""
        with self._lock:
            if self._waiting:
                self._cond.notify()

    def _wait(self) -> None:
        """Wait on the condition (held), counted in `_waiting` and told to the fast slot."""
        self._waiting += 1
        if self._slot is not None:
            self._slot.waiting(self._waiting)
        try:
            self._cond.wait()
        finally:
            self._waiting -= 1
            if self._slot is not None:
                self._slot.waiting(self._waiting)

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
                if self._count < self._limit:
                    self._count += 1
                    break
                # at the bound: the fast arena (kept for the native caller until now)
                if self._slot is not None and self._slot.take():
                    return self._fast  # type: ignore[return-value]
                if depth > 0:
                    self._count += 1
                    break
                self._wait()
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
            if arena is self._fast and self._slot is not None:
                self._slot.give()  # closed: the slot refuses later takes itself
            elif self._closed or self._count > self._limit:
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
            if not self._closed and self._slot is not None:
                self._slot.close()
                self._count -= 1  # dropped now; waited for below while in use
            self._closed = True
            slot = self._slot
            if wait and self._depth() == 0:
                while self._count > len(self._free) or (slot is not None and slot.busy()):
                    self._wait()
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

