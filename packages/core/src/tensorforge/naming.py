"""Names: unique within a namespace, and C identifiers for symbols in generated code."""

from __future__ import annotations

import re


def unique_name(base: str, used: set[str]) -> str:
    """`base`, or `base_1`, `base_2`, ... : the first not in `used` (which is updated)."""
    base = base or "v"
    name, k = base, 1
    while name in used:
        name = f"{base}_{k}"
        k += 1
    used.add(name)
    return name


def c_identifier(name: str, used: set[str], max_len: int = 40) -> str:
    """A unique C identifier made from `name` (other characters become `_`)."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    if base[0].isdigit():
        base = "v" + base
    return unique_name(base[:max_len], used)
