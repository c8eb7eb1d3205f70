"""Summarize node_suite_expected.txt: our and onnxruntime's pass counts, and our failures
grouped by reason (unconverted op, non-tensor type, attribute, numeric mismatch ...).

    python packages/frontend-onnx/tests/node_suite_report.py [--cases]"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

EXPECTED_FILE = Path(__file__).with_name("node_suite_expected.txt")

_GROUPS = (  # (label, pattern on the reason), first match wins
    ("op not converted", re.compile(r"ops not converted: (.*?) \(opset")),
    ("sequence / optional / string values", re.compile(
        r"(not a tensor|element type STRING|SequenceEmpty|Optional|Sequence)")),
    ("attribute or form not supported", re.compile(r"UnsupportedAttributeError: (\w+)")),
    ("numeric mismatch", re.compile(r"AssertionError")),
)


def read(path: Path = EXPECTED_FILE) -> list[tuple[str, str, str, str]]:
    """(name, our status, onnxruntime's status, reason) per case."""
    rows = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(maxsplit=4)
        rows.append((parts[0], parts[1], parts[3].removeprefix("ort="),
                     parts[4] if len(parts) > 4 else ""))
    return rows


def group(reason: str) -> tuple[str, str]:
    """(group label, detail: the ops or attribute named)."""
    for label, pat in _GROUPS:
        m = pat.search(reason)
        if m:
            detail = m.group(1) if m.groups() else ""
            return label, re.sub(r"\s*\(nodes? [^)]*\)", "", detail)
    return "other", reason.split(":")[0]


def report(rows: list[tuple[str, str, str, str]], cases: bool = False) -> str:
    ours = sum(r[1] == "PASS" for r in rows)
    ort = sum(r[2] == "PASS" for r in rows)
    lines = [f"{len(rows)} cases: tensorforge PASS {ours}, onnxruntime PASS {ort}"]
    by: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, status, _, reason in rows:
        if status != "PASS":
            label, detail = group(reason)
            by[label][detail].append(name)
    for label, details in sorted(by.items(), key=lambda kv: -sum(map(len, kv[1].values()))):
        lines.append(f"\n{label}: {sum(map(len, details.values()))}")
        for detail, names in sorted(details.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"  {len(names):4d}  {detail}")
            if cases:
                lines += [f"          {n}" for n in names]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(read(), cases="--cases" in sys.argv))
