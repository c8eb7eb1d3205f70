"""Error text that lists valid values, the closest matches to what was given first.

Used by every "unknown value" error of targets (kinds, tags, options, enum values, LLVM CPU
and feature names), so a typo shows its likely fix before a long list."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest_first", "valid_values"]


def closest_first(value: str, candidates: Iterable[str], n: int = 5) -> list[str]:
    """`candidates` (deduplicated) with up to `n` close matches of `value` first, then the
    rest in sorted order."""
    pool = sorted(set(candidates))
    close = difflib.get_close_matches(value, pool, n=n, cutoff=0.5)
    if not close:  # a prefix or substring still says something ("skylake" -> skylake-avx512)
        low = value.lower()
        close = [c for c in pool if low and (c.lower().startswith(low) or low in c.lower())][:n]
    return close + [c for c in pool if c not in close]


def valid_values(value: str, candidates: Iterable[str], what: str = "valid values",
                 n: int = 5) -> str:
    """``"Did you mean 'znver3'? The 140 valid values, closest first: znver3, znver2, ..."``."""
    ordered = closest_first(value, candidates, n)
    if not ordered:
        return f"There are no {what}."
    close = difflib.get_close_matches(value, ordered, n=1, cutoff=0.6)
    hint = f"Did you mean {close[0]!r}? " if close else ""
    return f"{hint}The {len(ordered)} {what}, closest first: {', '.join(ordered)}."
