"""Dependency tokens between the load, compute and store modules: placed on the instruction
stream after virtual threads are woven and the host loops are run (`inject_dep_tokens`), and
checked for every timing at once (`verify_tokens`).

Here every SRAM range is an exact set of tiles (the simulator's own `footprint`), so a token
goes exactly where data flows: before instruction j of module B, B pops a token that A pushes
after instruction i, when i is the latest instruction of A that wrote a tile j touches, or
still reads a tile j writes (read-after-write, write-after-write, write-after-read). Modules
run in order, so one token also orders everything of A before i against everything of B
after j: a pair is only added when i is newer than the last one B already waited for on that
queue (this also keeps one push and one pop per queue per instruction, as the flag bits
allow). Every pop follows its push in program order, so a serial run never blocks; FIFO order
holds because pairs are made with i and j both increasing. Load and store never touch the
same SRAM (load writes inp/wgt, store reads acc), so no token crosses the compute module.
A final `Finish` on compute waits for the last load and the last store.

`verify_tokens` matches pushes to pops (FIFO per queue), gives every instruction a vector
clock (the newest instruction of each module known to have ended before it starts) and checks
that every dependency above is covered: then no timing of the modules can break program order,
which the simulator's hazard checker can only confirm for the timings it runs.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterator

import numpy as np

from .errors import VDLACompileError, VDLAHazardError
from .isa import QUEUES, Finish, Insn, Load, MemId, Stage, neighbours, queue_name, stage_of
from .program import Program
from .sim.functional import execute, footprint
from .sim.memory import Memory


def dependencies(program: Program, insns: list[Insn]) -> Iterator[tuple[int, dict[Stage, int]]]:
    """(j, {module: newest instruction of that module that j must follow}) in program order."""
    c = program.config
    stages = [stage_of(i) for i in insns]
    stage_arr = np.array([int(s) for s in stages], np.int64)
    mem = Memory(c, program.new_dram())
    depth = {m: c.depth(m) for m in ("inp", "wgt", "acc", "uop")}
    writer = {m: np.full(depth[m], -1, np.int64) for m in depth}
    reader = {(m, s): np.full(depth[m], -1, np.int64) for m in depth for s in Stage}
    last_of: dict[Stage, int] = {}
    for j, insn in enumerate(insns):
        b = stages[j]
        need: dict[Stage, int] = {}
        if isinstance(insn, Finish):
            need = {s: k for s, k in last_of.items() if s != b}
            yield j, need
            last_of[b] = j
            continue
        fp = footprint(insn, mem)
        reads = {m: idx[(idx >= 0) & (idx < depth[m])] for m, idx in fp.reads.items()}
        writes = {m: idx[(idx >= 0) & (idx < depth[m])] for m, idx in fp.writes.items()}
        for m, idx in [*reads.items(), *writes.items()]:
            _newest(need, writer[m][idx], stage_arr, b)
        for m, idx in writes.items():
            for a in Stage:
                if a != b:
                    _newest(need, reader[(m, a)][idx], stage_arr, b)
        yield j, need
        if isinstance(insn, Load) and insn.mem == MemId.UOP:
            execute(insn, mem)  # later footprints read the micro-op SRAM
        for m, idx in reads.items():
            reader[(m, b)][idx] = j
        for m, idx in writes.items():
            writer[m][idx] = j
        last_of[b] = j


def inject_dep_tokens(program: Program) -> Program:
    insns = list(program.insns) + [Finish()]
    stages = [stage_of(i) for i in insns]
    synced: dict[tuple[Stage, Stage], int] = {}
    flags: list[dict[str, bool]] = [{} for _ in insns]
    for j, need in dependencies(program, insns):
        b = stages[j]
        for a, i in sorted(need.items()):
            if i <= synced.get((a, b), -1):
                continue
            if b not in neighbours(a):
                raise VDLACompileError(
                    f"{program.name}: instruction {j} ({insns[j]}) on {b.name.lower()} depends "
                    f"on instruction {i} ({insns[i]}) on {a.name.lower()}, which shares no "
                    "token queue with it")
            prev, _ = neighbours(a)
            flags[i]["push_prev" if b == prev else "push_next"] = True
            prev_b, _ = neighbours(b)
            flags[j]["pop_prev" if a == prev_b else "pop_next"] = True
            synced[(a, b)] = i
    program.insns = [dataclasses.replace(i, **f) if f else i for i, f in zip(insns, flags)]
    return program


def verify_tokens(program: Program) -> None:
    """Raise `VDLAHazardError` naming a dependency no chain of tokens orders."""
    insns = list(program.insns)
    stages = [stage_of(i) for i in insns]
    queues: dict[tuple[Stage, Stage], deque[int]] = {q: deque() for q in QUEUES}
    last: dict[Stage, int] = {}
    clocks: list[dict[Stage, int]] = []
    for j, insn in enumerate(insns):
        b = stages[j]
        clock = dict(clocks[last[b]]) if b in last else {}
        prev, nxt = neighbours(b)
        for flag, a in (("pop_prev", prev), ("pop_next", nxt)):
            if getattr(insn, flag) and a is not None:
                q = queues[(a, b)]
                if not q:
                    raise VDLAHazardError(
                        f"{program.name}: instruction {j} ({insn}) pops the "
                        f"{queue_name(a, b)} queue before anything was pushed on it (in program "
                        "order): a serial run would block")
                i = q.popleft()
                for s, k in clocks[i].items():
                    clock[s] = max(clock.get(s, -1), k)
        clock[b] = j
        clocks.append(clock)
        for flag, a in (("push_prev", prev), ("push_next", nxt)):
            if getattr(insn, flag) and a is not None:
                queues[(b, a)].append(j)
        last[b] = j
    for j, need in dependencies(program, insns):
        for a, i in need.items():
            if clocks[j].get(a, -1) < i:
                raise VDLAHazardError(
                    f"{program.name}: instruction {j} ({insns[j]}, {stages[j].name.lower()}) "
                    f"touches SRAM that instruction {i} ({insns[i]}, {a.name.lower()}) uses "
                    "first, and no chain of tokens makes it wait: a dependency token is missing")


def _newest(need: dict[Stage, int], who: np.ndarray, stage_arr: np.ndarray, b: Stage) -> None:
    """Record, per other module, the newest instruction index among `who`."""
    who = who[who >= 0]
    if not who.size:
        return
    of = stage_arr[who]
    for a in Stage:
        if a != b:
            sel = who[of == int(a)]
            if sel.size and int(sel.max()) > need.get(a, -1):
                need[a] = int(sel.max())
