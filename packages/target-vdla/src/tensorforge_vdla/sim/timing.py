"""The timing model: exact start and end cycles of every instruction, event-driven.

Three in-order modules (load, compute, store) each run their own instructions in program
order, one at a time. An instruction starts when its module is free and every token it pops is
in its queue; it pushes its tokens when it ends. Costs:

- `Load`/`Store`: asks the one shared DRAM port at its start; the port is granted in request
  order and stays busy `ceil(bytes / dram_bytes_per_cycle)` cycles; the instruction ends
  `dram_latency` cycles after its transfer does (a DMA with no DRAM bytes takes one cycle).
  Zero padding is written while the transfer runs, at no extra cost.
- `Gemm`: one micro-op step per cycle (`lp0 * lp1 * uops`); `Alu`: one vector op per cycle;
  `Finish`: one cycle. Every instruction takes at least one cycle.

Instructions are scheduled in order of start time (ties: load, compute, store), so the DRAM
port is first-come first-served. When every module with work left waits for a token nobody
will push, `VDLADeadlockError` names the blocked instructions and the queues. A push that
would exceed `queue_depth` tokens is a `VDLAQueueOverflowError`; tokens left at the end are an
error too. `jitter_seed` adds random delays to explore other interleavings (the hazard checker
then proves the tokens still order every conflicting access)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..config import VDLAConfig
from ..errors import VDLADeadlockError, VDLAQueueOverflowError, VDLASimError
from ..isa import QUEUES, Alu, Gemm, Insn, Load, Stage, Store, neighbours, queue_name, stage_of


@dataclass
class Timeline:
    """Per-instruction schedule and per-module accounting of one run."""

    start: np.ndarray
    end: np.ndarray
    dram_grant: np.ndarray  # cycle the DRAM port was granted (-1: no DRAM access)
    busy: dict[str, int] = field(default_factory=dict)
    stalls: dict[str, dict[str, int]] = field(default_factory=dict)
    dram_bytes_read: int = 0
    dram_bytes_written: int = 0
    max_queue: dict[str, int] = field(default_factory=dict)

    @property
    def total_cycles(self) -> int:
        return int(self.end.max()) if self.end.size else 0


def dram_bytes(insn: Insn, config: VDLAConfig) -> int:
    if isinstance(insn, (Load, Store)):
        return insn.y_size * insn.x_size * config.tile_bytes(insn.mem.key)
    return 0


def compute_cycles(insn: Insn) -> int:
    if isinstance(insn, (Gemm, Alu)):
        return max(1, insn.steps)
    return 1


def _pops(insn: Insn, stage: Stage) -> list[tuple[Stage, Stage]]:
    prev, nxt = neighbours(stage)
    out = []
    if insn.pop_prev and prev is not None:
        out.append((prev, stage))
    if insn.pop_next and nxt is not None:
        out.append((nxt, stage))
    return out


def _pushes(insn: Insn, stage: Stage) -> list[tuple[Stage, Stage]]:
    prev, nxt = neighbours(stage)
    out = []
    if insn.push_prev and prev is not None:
        out.append((stage, prev))
    if insn.push_next and nxt is not None:
        out.append((stage, nxt))
    return out


def schedule(insns: list[Insn], config: VDLAConfig, jitter_seed: int | None = None,
             jitter: int = 64) -> Timeline:
    """Run the timing model over `insns` (program order)."""
    n = len(insns)
    stages = [stage_of(i) for i in insns]
    for k, (insn, st) in enumerate(zip(insns, stages)):
        prev, nxt = neighbours(st)
        if ((insn.pop_prev or insn.push_prev) and prev is None) or (
                (insn.pop_next or insn.push_next) and nxt is None):
            raise VDLASimError(f"instruction {k} ({insn}): the {st.name.lower()} module has no "
                               "such neighbour to exchange tokens with")
    streams = {s: [k for k in range(n) if stages[k] == s] for s in Stage}
    ptr = dict.fromkeys(Stage, 0)
    free = dict.fromkeys(Stage, 0)
    queues: dict[tuple[Stage, Stage], deque[int]] = {q: deque() for q in QUEUES}
    events: dict[tuple[Stage, Stage], list[tuple[int, int, int]]] = {q: [] for q in QUEUES}
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    grant = np.full(n, -1, np.int64)
    busy = {s.name.lower(): 0 for s in Stage}
    stalls: dict[str, dict[str, int]] = {s.name.lower(): {} for s in Stage}
    rng = np.random.default_rng(jitter_seed) if jitter_seed is not None else None
    port_free = 0
    read = written = 0
    while True:
        best: tuple[int, Stage] | None = None
        binding: dict[Stage, tuple[Stage, Stage] | None] = {}
        for s in Stage:
            if ptr[s] >= len(streams[s]):
                continue
            k = streams[s][ptr[s]]
            ready, why = free[s], None
            for q in _pops(insns[k], s):
                if not queues[q]:
                    break
                if queues[q][0] > ready:
                    ready, why = queues[q][0], q
            else:
                binding[s] = why
                if best is None or ready < best[0]:
                    best = (ready, s)
        if best is None:
            if all(ptr[s] >= len(streams[s]) for s in Stage):
                break
            raise VDLADeadlockError(_deadlock_text(insns, streams, ptr, queues))
        t, s = best
        k = streams[s][ptr[s]]
        insn = insns[k]
        gap = t - free[s]
        if gap > 0:
            q = binding[s]
            cause = f"token {queue_name(*q)}" if q else "idle"
            stalls[s.name.lower()][cause] = stalls[s.name.lower()].get(cause, 0) + gap
        for q in _pops(insn, s):
            queues[q].popleft()
            events[q].append((t, 0, k))
        extra = int(rng.integers(0, jitter + 1)) if rng is not None else 0
        nbytes = dram_bytes(insn, config)
        if nbytes:
            g = max(t, port_free)
            xfer = -(-nbytes // config.dram_bytes_per_cycle)
            port_free = g + xfer
            e = g + config.dram_latency + xfer + extra
            grant[k] = g
            if g > t:
                name = s.name.lower()
                stalls[name]["dram port"] = stalls[name].get("dram port", 0) + g - t
            if isinstance(insn, Store):
                written += nbytes
            else:
                read += nbytes
        else:
            e = t + compute_cycles(insn) + extra
        start[k], end[k] = t, e
        busy[s.name.lower()] += e - t
        for q in _pushes(insn, s):
            queues[q].append(e)
            events[q].append((e, 1, k))
        free[s] = e
        ptr[s] += 1
    max_queue = _check_queues(insns, events, queues, config)
    return Timeline(start, end, grant, busy, stalls, read, written, max_queue)


def _check_queues(insns: list[Insn], events: dict, queues: dict, config: VDLAConfig
                  ) -> dict[str, int]:
    """Replay every queue's pushes and pops in time (pops first within a cycle)."""
    peaks = {}
    for q, evs in events.items():
        count = peak = 0
        for t, kind, k in sorted(evs):
            count += 1 if kind else -1
            peak = max(peak, count)
            if count > config.queue_depth:
                raise VDLAQueueOverflowError(
                    f"instruction {k} ({insns[k]}) pushes a token at cycle {t} onto the "
                    f"{queue_name(*q)} queue, which already holds {config.queue_depth} (its "
                    "depth): the consumer pops too rarely; add pops or raise -queue-depth")
        peaks[queue_name(*q)] = peak
        if queues[q]:
            raise VDLASimError(
                f"the program ends with {len(queues[q])} token(s) left on the {queue_name(*q)} "
                "queue: every push needs a matching pop")
    return peaks


def _deadlock_text(insns: list[Insn], streams: dict, ptr: dict, queues: dict) -> str:
    lines = ["VDLA deadlock: every module with work left waits for a token nobody will push"]
    for s in Stage:
        if ptr[s] >= len(streams[s]):
            lines.append(f"  {s.name.lower()}: done")
            continue
        k = streams[s][ptr[s]]
        wants = [queue_name(*q) for q in _pops(insns[k], s) if not queues[q]]
        lines.append(f"  {s.name.lower()}: blocked at instruction {k} ({insns[k]}), "
                     f"waiting on {', '.join(wants)}")
    state = ", ".join(f"{queue_name(*q)}: {len(v)}" for q, v in queues.items())
    lines.append(f"  tokens queued: {state}")
    return "\n".join(lines)
