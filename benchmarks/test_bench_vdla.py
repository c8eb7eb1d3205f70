"""Latency hiding on VDLA (issue 11), the pytest form of `vdla_latency_hiding.py`: every
ResNet-18 conv2d with one and two virtual threads on the simulator. Cycle counts are exact,
so the goals are asserted directly: peak GEMM utilization up by at least 10 points, no layer
slower."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from vdla_latency_hiding import measure  # noqa: E402


def test_vdla_latency_hiding():
    rows, cfg, _ = measure("vdla/pynq-z1")
    assert len(rows) == 11
    u1 = max(r.reports[1].utilization for r in rows)
    u2 = max(r.reports[2].utilization for r in rows)
    assert u2 - u1 >= 0.10, (u1, u2)
    for r in rows:
        assert r.reports[2].total_cycles <= r.reports[1].total_cycles, r.key
