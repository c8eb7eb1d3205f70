"""inject_dep_tokens: dependency tokens between the load, compute and store modules, placed on
the instruction stream after virtual threads are woven and the host loops are run.

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
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .errors import VDLACompileError
from .isa import Finish, Load, MemId, Stage, neighbours, stage_of
from .program import Program
from .sim.functional import execute, footprint
from .sim.memory import Memory


def inject_dep_tokens(program: Program) -> Program:
    c = program.config
    insns = list(program.insns) + [Finish()]
    stages = [stage_of(i) for i in insns]
    stage_arr = np.array([int(s) for s in stages], np.int64)
    mem = Memory(c, program.new_dram())
    depth = {m: c.depth(m) for m in ("inp", "wgt", "acc", "uop")}
    writer = {m: np.full(depth[m], -1, np.int64) for m in depth}
    reader = {(m, s): np.full(depth[m], -1, np.int64) for m in depth for s in Stage}
    synced: dict[tuple[Stage, Stage], int] = {}
    flags: list[dict[str, bool]] = [{} for _ in insns]
    last_of: dict[Stage, int] = {}
    for j, insn in enumerate(insns):
        b = stages[j]
        need: dict[Stage, int] = {}
        if isinstance(insn, Finish):
            need = {s: k for s, k in last_of.items() if s != b}
        else:
            fp = footprint(insn, mem)
            for m, idx in [*fp.reads.items(), *fp.writes.items()]:
                idx = idx[(idx >= 0) & (idx < depth[m])]
                _newest(need, writer[m][idx], stage_arr, b)
            for m, idx in fp.writes.items():
                idx = idx[(idx >= 0) & (idx < depth[m])]
                for a in Stage:
                    if a != b:
                        _newest(need, reader[(m, a)][idx], stage_arr, b)
        for a, i in sorted(need.items()):
            if i <= synced.get((a, b), -1):
                continue
            if b not in neighbours(a):
                raise VDLACompileError(
                    f"{program.name}: instruction {j} ({insn}) on {b.name.lower()} depends on "
                    f"instruction {i} ({insns[i]}) on {a.name.lower()}, which shares no token "
                    "queue with it")
            prev, _ = neighbours(a)
            flags[i]["push_prev" if b == prev else "push_next"] = True
            prev_b, _ = neighbours(b)
            flags[j]["pop_prev" if a == prev_b else "pop_next"] = True
            synced[(a, b)] = i
        if not isinstance(insn, Finish):
            if isinstance(insn, Load) and insn.mem == MemId.UOP:
                execute(insn, mem)  # later footprints read the micro-op SRAM
            for m, idx in fp.reads.items():
                idx = idx[(idx >= 0) & (idx < depth[m])]
                reader[(m, b)][idx] = j
            for m, idx in fp.writes.items():
                idx = idx[(idx >= 0) & (idx < depth[m])]
                writer[m][idx] = j
        last_of[b] = j
    program.insns = [dataclasses.replace(i, **f) if f else i for i, f in zip(insns, flags)]
    return program


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
