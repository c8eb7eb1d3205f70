"""Progress of a long job in named stages (import, graph passes, lowering N kernels, ...).

``tensorforge.compile(..., progress=p)`` calls ``p.stage(name, total, unit)`` as each stage starts
and ``p.advance()`` per item of a counted stage; ``p.finish()`` ends the last stage.
:class:`StageProgress` is what ``tforge compile`` shows: on a terminal one line per stage that
counts up while it runs and ends with the stage's time; when the stream is not a terminal it
prints nothing unless ``verbose`` (then one line per finished stage, no control characters).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .text import plural

__all__ = ["NullProgress", "StageProgress"]


class NullProgress:
    """Progress that shows nothing (the library default)."""

    def stage(self, name: str, total: int | None = None, unit: str = "") -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass


class StageProgress(NullProgress):
    """One line per stage on ``stream``: live on a terminal, plain lines when ``verbose``."""

    def __init__(self, stream: TextIO | None = None, verbose: bool = False,
                 live: bool | None = None, prefix: str = "tforge: "):
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)()
        self.live = isatty if live is None else live
        self.enabled = self.live or verbose
        self.prefix = prefix
        self.times: dict[str, float] = {}
        self._name: str | None = None
        self._total: int | None = None
        self._unit = ""
        self._done = 0
        self._t0 = 0.0
        self._last_draw = 0.0

    def _label(self, final: bool = False) -> str:
        if self._total is None:
            return f"{self.prefix}{self._name}"
        counted = plural(self._total, self._unit) if self._unit else str(self._total)
        return f"{self.prefix}{self._name} {counted if final else f'{self._done}/{counted}'}"

    def _draw(self, text: str, final: bool) -> None:
        if not self.enabled:
            return
        if self.live:
            self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
        elif final:
            self.stream.write(text + "\n")
        self.stream.flush()

    def stage(self, name: str, total: int | None = None, unit: str = "") -> None:
        self.finish()
        self._name, self._total, self._unit, self._done = name, total, unit, 0
        self._t0 = self._last_draw = time.perf_counter()
        self._draw(self._label() + " ...", final=False)

    def advance(self, n: int = 1) -> None:
        self._done += n
        now = time.perf_counter()
        if self.live and now - self._last_draw > 0.1:  # at most 10 redraws a second
            self._last_draw = now
            self._draw(self._label() + " ...", final=False)

    def finish(self) -> None:
        if self._name is None:
            return
        took = time.perf_counter() - self._t0
        self.times[self._name] = took
        self._draw(f"{self._label(final=True)}  {took:.2f} s", final=True)
        self._name = None
