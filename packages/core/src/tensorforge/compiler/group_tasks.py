"""The tuning tasks of fused groups, and applying their records at compile time.

A task is one distinct fused-group workload: the master op's strategy plus the group's ops,
attributes, shapes, dtypes and wiring (what ``compiler.compile.workload_key`` compares) on a
target; its weight is how many groups of the model share it (``model_tuning.extract_tasks``).
The workload travels as JSON (``group_workload``), so the ``graph_group`` template rebuilds the
group's TE, epilogue included, in a measurement worker and schedules it with the strategy and a
config: the kernel measured is the kernel the model runs. Constants become inputs filled with
random data (their values do not change the timing).

``TuningContext`` is what ``tensorforge.compile(..., tuning_db=...)`` uses: for each group it
looks the task up and hands the strategy the best record's config, and remembers the tasks
that had none. The compiler sits above the search engine (``autotune``), which knows tasks
and templates but no graph.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autotune.database import Database, Record
from ..autotune.task import Task
from ..autotune.template import template
from ..graph.groups import FusedGroup
from ..graph.ir import Node, Value
from ..graph.registry import OpPattern
from ..plugins.descriptors import load_ref
from ..text import plural
from .kernels import build_group_te

__all__ = ["TEMPLATE", "GroupTask", "TuningContext", "group_task", "group_workload",
           "rebuild_group"]

TEMPLATE = "graph_group"


# ---- the workload as JSON ----------------------------------------------------------------------
def _enc(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return ["__ndarray__", x.dtype.str, list(x.shape), x.reshape(-1).tolist()]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return ["__dict__", [[k, _enc(v)] for k, v in sorted(x.items())]]
    if isinstance(x, (list, tuple)):
        return [_enc(v) for v in x]
    return x


def _dec(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        if len(x) == 4 and x[0] == "__ndarray__":
            return np.asarray(x[3], dtype=np.dtype(x[1])).reshape(tuple(x[2]))
        if len(x) == 2 and x[0] == "__dict__":
            return {k: _dec(v) for k, v in x[1]}
        return tuple(_dec(v) for v in x)
    return x


def group_workload(group: FusedGroup) -> list[Any]:
    """``[inputs, nodes, outputs, master, pattern]`` of ``group`` as JSON values: input types,
    nodes as ``[op, attrs, input refs, output types]`` (a ref is ``["in", k]`` or
    ``["node", i, j]``), output refs, the master node's position and the fusion pattern."""
    where: dict[int, list[Any]] = {id(v): ["in", k] for k, v in enumerate(group.inputs)}
    nodes = []
    for i, n in enumerate(group.nodes):
        attrs = [[k, _enc(v)] for k, v in sorted(n.attrs.items())]
        outs = [[list(o.shape), o.dtype] for o in n.outputs]
        nodes.append([n.op, attrs, [where[id(v)] for v in n.inputs], outs])
        for j, o in enumerate(n.outputs):
            where[id(o)] = ["node", i, j]
    ins = [[list(v.shape), v.dtype] for v in group.inputs]
    master = next(i for i, n in enumerate(group.nodes) if n is group.master)
    return [ins, nodes, [where[id(v)] for v in group.outputs], master, group.pattern.name]


def rebuild_group(workload: Sequence[Any]) -> FusedGroup:
    """A FusedGroup equal (by workload) to the one ``group_workload`` described."""
    ins, nodes, outs, master, pattern = workload
    inputs = [Value(f"in{k}", tuple(shape), dtype) for k, (shape, dtype) in enumerate(ins)]
    built: list[Node] = []

    def ref(r: Sequence[Any]) -> Value:
        return inputs[r[1]] if r[0] == "in" else built[r[1]].outputs[r[2]]

    for i, (op, attrs, refs, types) in enumerate(nodes):
        values = [Value(f"n{i}_{j}", tuple(shape), dtype) for j, (shape, dtype) in
                  enumerate(types)]
        node = Node(op, [ref(r) for r in refs], values, {k: _dec(v) for k, v in attrs},
                    f"n{i}")
        for v in values:
            v.producer = node
        built.append(node)
    return FusedGroup("group", built, inputs, [ref(r) for r in outs], built[master],
                      OpPattern[pattern])


@template(TEMPLATE)
def group_template(cfg: Any, strategy: str, schedule: str, *workload: Any) -> tuple[Any, list]:
    """The group's TE (``build_group_te``) scheduled by ``schedule(outs, target, cfg)``."""
    placeholders, outs = build_group_te(rebuild_group(workload))
    return load_ref(schedule)(outs, cfg.target, cfg), placeholders + outs


# ---- tasks ---------------------------------------------------------------------------------------
def _shape(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


class GroupTask(Task):
    """A task of the ``graph_group`` template; ``name`` is a short label (ops and shapes)."""

    @property
    def name(self) -> str:
        _, _, ins, nodes, outs, *_ = self.args
        ops = "+".join(n[0] for n in nodes)
        first = nodes[outs[0][1]][3][outs[0][2]][0] if outs[0][0] == "node" else ins[0][0]
        return f"{ops} {_shape(ins[0][0])}->{_shape(first)}"


def _takes_cfg(strategy: Any) -> bool:
    try:
        return "cfg" in inspect.signature(strategy.load_schedule()).parameters
    except (TypeError, ValueError):
        return False


def group_task(group: FusedGroup, strategy: Any, target: Any,
               weight: float = 1.0) -> GroupTask | None:
    """The task of ``group`` scheduled by ``strategy`` on ``target``, or None when the
    strategy takes no config or its space has a single point (nothing to tune)."""
    if strategy is None or not _takes_cfg(strategy):
        return None
    task = GroupTask(TEMPLATE, [strategy.key, strategy.schedule, *group_workload(group)],
                     target, weight)
    try:
        if len(task.config_space) <= 1:
            return None
    except Exception:  # noqa: BLE001 - a schedule that fails here fails at compile time too
        return None
    return task


# ---- compile time ------------------------------------------------------------------------------
class TuningContext:
    """The best records of a database for ``compile``: ``config(group, strategy)`` is the
    best config of the group's task, or None (the strategy's default); ``applied`` and
    ``missing`` list task names."""

    def __init__(self, db: Any, target: Any):
        self.target = target
        self.path = db.path if isinstance(db, Database) else os.fspath(db)
        # read-only: compiling never writes the records (a read-only file or folder works)
        self.db = db if isinstance(db, Database) else Database(self.path, readonly=True)
        self._own = not isinstance(db, Database)
        self.applied: dict[str, str] = {}
        self.missing: dict[str, str] = {}
        self.stale: dict[str, str] = {}  #: missing because the records' knobs no longer fit
        self._missing_tasks: list[Task] = []

    def config(self, group: FusedGroup, strategy: Any) -> Any:
        task = group_task(group, strategy, self.target)
        if task is None:
            return None
        best = self.db.best(task.key, task.target_str)
        if not isinstance(best, Record):
            self.missing[task.key] = task.name
            self._missing_tasks.append(task)
            return None
        cfg = task.config_space.from_record(best.config, best.config_index)
        if cfg is None:  # tuned before the template's knobs changed: tune it again
            self.missing[task.key] = task.name
            self.stale[task.key] = task.name
            self._missing_tasks.append(task)
            return None
        self.applied[task.key] = task.name
        return cfg

    def summary(self) -> dict[str, Any]:
        return {"db": self.path, "applied": sorted(self.applied.values()),
                "missing": sorted(self.missing.values()),
                "stale": sorted(self.stale.values()),
                "tuned_for_other_targets": self.other_targets()}

    def other_targets(self) -> list[str]:
        """Targets other than this one that the database has records for: those whose tasks
        have the same workload as a task without records here, else any."""
        if not self.missing:
            return []
        here = str(self.target)
        tasks = self.db.tasks()
        with_records = {t for (t,) in self.db.conn.execute("SELECT DISTINCT target FROM records")}
        same = set()
        for task in self._missing_tasks:
            args = json.loads(json.dumps(task.args))
            same |= {t["target"] for t in tasks if t["template"] == task.template_name
                     and t["args"] == args and t["target"] != here}
        found = same & with_records or with_records - {here}
        return sorted(found)

    def missing_message(self) -> str:
        """The warning for kernels without records: how many, which, and the targets the
        records were tuned for when they differ from this one."""
        n, total = len(self.missing), len(self.missing) + len(self.applied)
        verb = "has" if n == 1 else "have"
        msg = (f"{n} of {plural(total, 'tunable kernel')} {verb} no record in {self.path} for "
               f"target {str(self.target)!r} (default schedules): "
               f"{'; '.join(sorted(self.missing.values()))}")
        if self.stale:
            msg += (f". {plural(len(self.stale), 'kernel')}' records name knobs the schedule no "
                    f"longer has ({'; '.join(sorted(self.stale.values()))}): tune them again")
        other = self.other_targets()
        if other:
            names = ", ".join(repr(t) for t in other)
            msg += (f". The database holds records tuned for {names}, not for "
                    f"{str(self.target)!r}: compile with --target {other[0]!r} or tune for "
                    "this target")
        return msg

    def close(self) -> None:
        if self._own:
            self.db.close()
