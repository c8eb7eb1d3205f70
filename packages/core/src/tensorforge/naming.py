"""Names: unique within a namespace, and C identifiers for symbols in generated code."""

from __future__ import annotations

import re


def unique_name(base: str, used: set[str]) -> str:
    """`base`, or `base_1`, `base_2`, ... : the first not in `used` (which is updated).

    The suffixes taken are usually a prefix 1..m, so the search gallops (1, 2, 4, ...) to a
    free one and bisects back to m + 1: O(log m) lookups, not m (an unrolled recurrence
    names thousands of nodes after one base; the linear scan made import quadratic)."""
    base = base or "v"
    if base not in used:
        used.add(base)
        return base
    hi = 1
    while f"{base}_{hi}" in used:
        hi *= 2
    lo = hi // 2  # taken (or 0: base itself)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if f"{base}_{mid}" in used:
            lo = mid
        else:
            hi = mid
    name = f"{base}_{hi}"
    used.add(name)
    return name


def c_identifier(name: str, used: set[str], max_len: int = 40) -> str:
    """A unique C identifier made from `name` (other characters become `_`)."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    if base[0].isdigit():
        base = "v" + base
    return unique_name(base[:max_len], used)
