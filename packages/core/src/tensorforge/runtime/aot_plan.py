"""The plan of the ahead-of-time (AOT) executor: a model's kernel sequence as data a code
generator turns into ONE native function, and the rule for which models it can take.

The generated entry has the C signature

    int32_t entry(void **inputs, void **outputs, void **params, uint8_t *workspace,
                  int32_t *failed);

`inputs`, `outputs` and `params` are tables of pointers (the values of kind input, output and
the distinct constants, in the order `AotPlan` lists them), `workspace` one call's arena: the
memory plan's storages at fixed 64-byte aligned offsets (`workspace_layout`), every
intermediate at its storage's offset plus its own (a part of a zero-copy concat). The entry
calls each kernel once, in order, with those addresses baked in; a kernel's non-zero status is
returned at once and the kernel's index stored in `*failed`. Each kernel keeps its own
parallel region, its index bounds checks and its status, as when the graph executor calls it.

`AotPlan.digest` names the plan: a package's library records the digest its entry was built
for, and `load` refuses a description (graph.json) whose plan has another digest, so an
edited description cannot make the entry read or write outside the buffers it is given.

Pure Python: the runtime imports this without llvmlite."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["AotCall", "AotPlan", "ENTRY_SIGNATURE", "aot_plan", "workspace_layout"]

_ALIGN = 64
#: what a library's kernel table says of its graph entry's calling convention
ENTRY_SIGNATURE = "i32(ptr inputs, ptr outputs, ptr params, ptr workspace, ptr failed)"


def workspace_layout(storages: Sequence[int]) -> tuple[tuple[int, ...], int]:
    """(offset of each storage, total bytes) of one arena's workspace: the storages one after
    another, each starting on a 64-byte boundary."""
    offsets, at = [], 0
    for n in storages:
        offsets.append(at)
        at += -(-int(n) // _ALIGN) * _ALIGN
    return tuple(offsets), at


@dataclass(frozen=True)
class AotCall:
    """One kernel call: `name` (its symbol), `index` (its position in the description's
    kernel list, reported on failure) and `args`, each ("in"|"out"|"param", table index) or
    ("ws", byte offset in the workspace)."""

    name: str
    index: int
    args: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class AotPlan:
    """What the generated entry does (see the module docstring). `inputs` / `outputs` are value
    indices of the description, `params` constant keys, each with its bytes."""

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    params: tuple[str, ...]
    nbytes: tuple[int, ...]  # of inputs, then outputs, then params, in that order
    workspace_bytes: int
    calls: tuple[AotCall, ...]

    def to_json(self) -> dict[str, Any]:
        return {"inputs": list(self.inputs), "outputs": list(self.outputs),
                "params": list(self.params), "nbytes": list(self.nbytes),
                "workspace_bytes": self.workspace_bytes,
                "calls": [[c.name, c.index, [list(a) for a in c.args]] for c in self.calls]}

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _nbytes(v: Mapping[str, Any]) -> int:
    import numpy as np

    n = 1
    for d in v["shape"]:
        n *= int(d)
    return n * np.dtype(v["dtype"]).itemsize


def aot_plan(desc: Mapping[str, Any], skip: frozenset[int] | set[int] = frozenset()
             ) -> AotPlan:
    """The plan of a checked description (`validate.check_description`); kernels in `skip`
    (those whose work the output copy does) are left out."""
    values = desc["values"]
    offsets, total = workspace_layout(desc["storages"])
    inputs = tuple(i for i, v in enumerate(values) if v["kind"] == "input")
    outputs = tuple(i for i, v in enumerate(values) if v["kind"] == "output")
    params: list[str] = []
    for v in values:
        if v["kind"] == "const" and v["param"] not in params:
            params.append(v["param"])
    where = {**{vi: ("in", j) for j, vi in enumerate(inputs)},
             **{vi: ("out", j) for j, vi in enumerate(outputs)}}
    param_slot = {p: j for j, p in enumerate(params)}
    first = {}
    for i, v in enumerate(values):
        if v["kind"] == "const":
            first.setdefault(v["param"], i)

    def ref(vi: int) -> tuple[str, int]:
        v = values[vi]
        if v["kind"] == "const":
            return ("param", param_slot[v["param"]])
        if v["kind"] == "intermediate":
            return ("ws", offsets[v["storage"]] + int(v.get("offset", 0)))
        return where[vi]

    calls = tuple(AotCall(k["name"], i, tuple(ref(a) for a in k["args"]))
                  for i, k in enumerate(desc["kernels"]) if i not in skip)
    nbytes = tuple(_nbytes(values[vi]) for vi in inputs + outputs) + tuple(
        _nbytes(values[first[p]]) for p in params)
    return AotPlan(inputs, outputs, tuple(params), nbytes, total, calls)
