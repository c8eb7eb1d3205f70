"""Size limits checked while a graph is built, so an absurd shape is a clear error before
anything is allocated (not a MemoryError, an OOM kill or an hour of compiling).

* `memory_limit()`: the most bytes one tensor, or a model's planned buffers together, may
  take. Default: the machine's physical memory. ``TENSORFORGE_MEMORY_LIMIT`` sets it (bytes,
  or with a K/M/G/T suffix: ``512M``, ``8G``; ``0`` or ``none``: no limit).
* `max_graph_nodes()`: the most nodes a graph may have (an LSTM over 100,000 steps unrolls
  into millions; a graph this large already takes minutes to compile). Default 50,000;
  ``TENSORFORGE_MAX_GRAPH_NODES`` sets it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ..errors import TensorforgeError

__all__ = ["GraphLimitError", "check_graph_nodes", "check_tensor_bytes", "format_bytes",
           "max_graph_nodes", "memory_limit"]

DEFAULT_MAX_GRAPH_NODES = 50_000
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class GraphLimitError(TensorforgeError, ValueError):
    """A tensor or a graph is larger than the configured limit."""


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def parse_bytes(text: str) -> int | None:
    """``"512M"`` -> 536870912; ``"0"``/``"none"`` -> None (no limit)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    if t in ("", "0", "NONE", "OFF"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)", t)
    if not m:
        raise GraphLimitError(f"TENSORFORGE_MEMORY_LIMIT={text!r} is not a size; write bytes "
                              "or a number with K, M, G or T (e.g. 8G), or 0 for no limit.")
    return int(float(m.group(1)) * _SUFFIX[m.group(2)])


def memory_limit() -> int | None:
    """Bytes one tensor (or a model's buffers together) may take; None: unlimited."""
    env = os.environ.get("TENSORFORGE_MEMORY_LIMIT")
    if env is not None:
        return parse_bytes(env)
    return _physical_memory()


def max_graph_nodes() -> int:
    env = os.environ.get("TENSORFORGE_MAX_GRAPH_NODES")
    if env is None:
        return DEFAULT_MAX_GRAPH_NODES
    try:
        return max(1, int(env))
    except ValueError:
        raise GraphLimitError(f"TENSORFORGE_MAX_GRAPH_NODES={env!r} is not an integer") from None


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def _limit_hint(limit: int) -> str:
    src = ("TENSORFORGE_MEMORY_LIMIT" if "TENSORFORGE_MEMORY_LIMIT" in os.environ
           else "this machine's physical memory")
    return (f"the limit is {format_bytes(limit)} ({src}; set TENSORFORGE_MEMORY_LIMIT to "
            "change it)")


def check_tensor_bytes(shape: Sequence[int], itemsize: int, what: str) -> None:
    """GraphLimitError if a tensor of `shape` would not fit (or has a negative dim)."""
    if any(int(d) < 0 for d in shape):
        raise GraphLimitError(f"{what} has a negative dimension in shape {list(shape)}")
    limit = memory_limit()
    if limit is None:
        return
    n = itemsize
    for d in shape:
        n *= int(d)
    if n > limit:
        raise GraphLimitError(f"{what} of shape {list(shape)} needs {format_bytes(n)}, more "
                              f"than one tensor may take: {_limit_hint(limit)}. Check the "
                              "model's shapes (or the input_shapes given).")


def check_total_bytes(n: int, what: str) -> None:
    limit = memory_limit()
    if limit is not None and n > limit:
        raise GraphLimitError(f"{what} need {format_bytes(n)}: {_limit_hint(limit)}.")


def check_graph_nodes(count: int, graph_name: str) -> None:
    limit = max_graph_nodes()
    if count > limit:
        raise GraphLimitError(
            f"graph {graph_name!r} has more than {limit} nodes (an unrolled recurrence over "
            "a very long sequence, or a runaway export); set TENSORFORGE_MAX_GRAPH_NODES to "
            "allow more.")
