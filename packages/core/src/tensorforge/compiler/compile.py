"""`tensorforge.compile`: model -> optimized graph -> fused groups -> one module -> model."""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TensorforgeError
from ..graph.groups import FusedGroup, MemoryPlan
from ..graph.ir import Graph, Value, freeze
from ..graph.narrow_types import storage_dtype
from ..graph.passes import fuse_ops, optimize, plan_memory
from ..progress import NullProgress
from ..runtime.validate import GRAPH_FORMAT, GRAPH_VERSION  # noqa: F401 (re-exported)
from ..target import Target
from .kernels import group_args, lower_group


def load_graph(model: Any, input_shapes: dict[str, Any] | None = None,
               model_format: str | None = None) -> Graph:
    """A Graph from a Graph, a model path (a file: the frontend chosen by its suffix; a
    directory: by the files it holds, e.g. a SavedModel's saved_model.pb), an ONNX ModelProto,
    or a model object a frontend reads (a Keras model). `model_format` names the frontend
    instead (`"onnx"`, `"tensorflow"`)."""
    if isinstance(model, Graph):
        if input_shapes:
            bad = set(input_shapes) - {v.name for v in model.inputs}
            if bad:
                raise TensorforgeError(f"input_shapes names {sorted(bad)}, which are not inputs "
                                       f"of the graph ({[v.name for v in model.inputs]})")
        return model
    from ..plugins import get_registry

    reg = get_registry()
    opts = {"input_shapes": dict(input_shapes)} if input_shapes else {}
    chosen = _named_frontend(reg, model_format) if model_format else None
    if type(model).__name__ == "ModelProto" and model_format in (None, "onnx"):
        fe = reg.frontends.get("onnx")  # an in-memory ONNX model
        if fe is None:
            raise TensorforgeError("compiling an ONNX ModelProto needs the ONNX frontend: "
                                   + _frontend_hint("onnx"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "model.onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
            return fe.load_loader()(path, **opts)
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise TensorforgeError(f"model file {path!r} does not exist")
        fe = chosen or reg.frontend_for(path)
        if fe is None:
            raise TensorforgeError(_no_frontend_message(reg, path))
        return fe.load_loader()(path, **opts)
    fe = chosen or reg.frontend_for(model)
    if fe is None:
        from ..plugins.known import FRONTEND_OBJECT_MODULES

        roots = [getattr(c, "__module__", "").partition(".")[0] for c in type(model).__mro__]
        name = next((FRONTEND_OBJECT_MODULES[r] for r in roots if r in FRONTEND_OBJECT_MODULES),
                    None)
        if name:
            raise TensorforgeError(f"compiling a {type(model).__name__} object needs the "
                                   f"{name} frontend: {_frontend_hint(name)}")
        raise TensorforgeError(f"compile takes a model path, an ONNX ModelProto, a model object "
                               f"a frontend reads (e.g. a Keras model) or a tensorforge Graph, "
                               f"not {type(model).__name__}")
    return fe.load_loader()(model, **opts)


def _named_frontend(reg: Any, name: str) -> Any:
    """The frontend registered as `name` (`model_format=` / `--model-format`)."""
    fe = reg.frontends.get(name)
    if fe is not None:
        return fe
    from ..plugins.known import FRONTEND_DISTRIBUTIONS

    if name in FRONTEND_DISTRIBUTIONS:
        raise TensorforgeError(f"model format {name!r} needs the {name} frontend: "
                               f"{_frontend_hint(name)}")
    known = ", ".join(sorted(reg.frontends)) or "none"
    raise TensorforgeError(f"unknown model format {name!r}: no frontend of that name is loaded "
                           f"(loaded frontends: {known})")


def _no_frontend_message(reg: Any, path: str) -> str:
    from ..plugins.known import FRONTEND_DIRECTORY_MARKERS, FRONTEND_SUFFIXES

    known = ", ".join(f"{f.name} ({', '.join(f.suffixes + f.directory_markers)})"
                      for f in reg.frontends.values())
    if os.path.isdir(path):
        name = next((n for m, n in FRONTEND_DIRECTORY_MARKERS.items()
                     if os.path.isfile(os.path.join(path, m))), None)
        what = f"the directory {os.path.basename(os.path.normpath(path))!r}"
    else:
        name = FRONTEND_SUFFIXES.get(os.path.splitext(path)[1].lower())
        what = repr(os.path.basename(path))
    why = f": {_frontend_hint(name)}" if name else ""
    return (f"no frontend reads {what}{why}; loaded frontends: {known or 'none'} (or name one "
            "with model_format= / --model-format)")


def _frontend_hint(name: str) -> str:
    """Why the first-party frontend `name` is not loaded (disabled, failed, not installed)."""
    from ..plugins.known import FRONTEND_DISTRIBUTIONS
    from ..plugins.status import missing_plugin_hint

    return missing_plugin_hint(*FRONTEND_DISTRIBUTIONS[name])


@dataclass
class Plan:
    """What the graph level decided: the optimized graph, its groups and memory plan."""

    graph: Graph
    groups: list[FusedGroup]
    memory: MemoryPlan
    times: dict[str, float] = field(default_factory=dict)


def plan(model: Any, target: Any = None, input_shapes: dict[str, Any] | None = None,
         opt_level: int = 3, progress: Any = None, model_format: str | None = None) -> Plan:
    """Run the graph level only (no code generation): `tforge inspect` uses this.
    `progress` (see `tensorforge.progress`) hears of the import and graph-pass stages."""
    progress = progress or NullProgress()
    t0 = time.perf_counter()
    progress.stage("import")
    g = load_graph(model, input_shapes, model_format)
    t1 = time.perf_counter()
    progress.stage("graph passes")
    g = optimize(g, target, opt_level)
    groups = fuse_ops(g, enabled=opt_level >= 1)
    memory = plan_memory(g, groups)
    t2 = time.perf_counter()
    return Plan(g, groups, memory, {"load_s": t1 - t0, "graph_s": t2 - t1})


def compile(model: Any, target: Any = "llvm", input_shapes: dict[str, Any] | None = None,
            opt_level: int = 3, tuning_db: Any = None, progress: Any = None,
            model_format: str | None = None) -> Any:
    """Compile `model` (a path: a file or a SavedModel directory; an ONNX ModelProto; a Keras
    model; a Graph) for `target`; returns a CompiledModel (`run`, `benchmark`, `export`).
    `model_format` names the frontend when the suffix does not (`"tensorflow"`). opt_level 0
    disables folding and fusion (one kernel per op). `tuning_db` (a path or an
    `autotune.Database`): each group whose task has records is scheduled with its best
    config; tasks without records are listed in a warning and in
    `desc["tuning"]["missing"]`. `progress` (a `tensorforge.progress.StageProgress`) is told
    each stage: import, graph passes, lowering N kernels, code generation."""
    from ..plugins import get_registry
    from ..runtime.graph_executor import CompiledModel

    tgt = Target.coerce(target)
    build = tgt.kind.load_build()  # a target that cannot compile here fails before the work
    check_pass_switches()
    progress = progress or NullProgress()
    p = plan(model, tgt, input_shapes, opt_level, progress, model_format)
    t0 = time.perf_counter()
    strategies = get_registry().strategies(tgt)
    tuning = None
    if tuning_db is not None:  # the search engine sits above the compiler: import it late
        from ..autotune.graph_tasks import TuningContext

        tuning = TuningContext(tuning_db, tgt)
    funcs, how = [], {}
    # groups with the same workload (ops, attributes, shapes, wiring) share one kernel: an
    # unrolled LSTM repeats the same cell dozens of times
    func_of: dict[str, str] = {}
    by_key: dict[Any, str] = {}
    keys = [workload_key(grp) for grp in p.groups if not grp.view]
    progress.stage("lowering", len(set(keys)), "kernel")
    for grp in p.groups:
        if grp.view:  # a zero-copy concat: its parts are written in place, no kernel
            continue
        key = workload_key(grp)
        if key in by_key:
            func_of[grp.name] = by_key[key]
            how[grp.name] = how[by_key[key]]
            continue
        f, how[grp.name] = lower_group(grp, tgt, strategies, tuning)
        funcs.append(f)
        by_key[key] = func_of[grp.name] = grp.name
        progress.advance()
    t1 = time.perf_counter()
    progress.stage(f"code generation ({tgt.kind.name})")
    module = build(funcs, tgt) if funcs else None
    progress.finish()
    t2 = time.perf_counter()
    p.times.update(lower_s=t1 - t0, build_s=t2 - t1)
    desc, params, derived = describe(p, tgt, how, func_of)
    desc["opt_level"] = opt_level  # `tforge run --verify` plans the model again with it
    if tuning is not None:
        desc["tuning"] = tuning.summary()
        if tuning.missing:
            warnings.warn(tuning.missing_message(), stacklevel=2)
        tuning.close()
    return CompiledModel(module, desc, params, derived=derived)


def _recipe(v: Value, depth: int = 0) -> Any:
    """A constant's `Derived` recipe from its `origin` chain (export stores the source, load
    redoes the transforms), or its array."""
    from ..runtime.params_store import Derived

    if v.origin is None or depth > 8:
        return v.const
    name, attrs, src = v.origin
    return Derived(name, dict(attrs), _recipe(src, depth + 1))


def check_pass_switches() -> None:
    """Unknown pass names in the print/disable switches (TENSORFORGE_PRINT_IR_AFTER ...) are
    an error before any work, not a warning per kernel."""
    from ..graph.passes.pipeline import GraphPassContext
    from ..tir.transform.pipeline import PassContext

    for ctx in (GraphPassContext, PassContext):
        ctx.current().check_names()


def workload_key(grp: Any) -> tuple[Any, ...]:
    """What a group's kernel depends on: its ops with attributes and output types, how they
    are wired to each other and to the group's inputs (by position), and the input types.
    Two groups with equal keys compile to the same code."""
    where: dict[int, tuple[Any, ...]] = {id(v): ("in", k) for k, v in enumerate(grp.inputs)}
    nodes = []
    for i, n in enumerate(grp.nodes):
        refs = tuple(where.get(id(v)) for v in n.inputs)
        outs = tuple((o.shape, o.dtype) for o in n.outputs)
        nodes.append((n.op, freeze(n.attrs), refs, outs))
        for j, o in enumerate(n.outputs):
            where[id(o)] = ("node", i, j)
    ins = tuple((v.shape, v.dtype) for v in grp.inputs)
    return ins, tuple(nodes), tuple(where[id(v)] for v in grp.outputs)


def _outputs(g: Graph, ref: Any) -> list[dict[str, Any]]:
    """Output entries; a data-dependent size (`Graph.sized_outputs`) names the value holding
    the count (`size_from`), and that count output is `hidden` from the caller."""
    outs = [{"name": v.name, "shape": list(v.shape), "dtype": v.dtype, "value": ref(v)}
            for v in g.outputs]
    for i, (j, axis) in g.sized_outputs.items():
        outs[i]["size_from"] = {"value": outs[j]["value"], "axis": axis}
        outs[j]["hidden"] = True
    return outs


def describe(p: Plan, target: Target, how: dict[str, str] | None = None,
             func_of: dict[str, str] | None = None
             ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
    """The executor's description (JSON-able), its parameters (constants) by key, and the
    `Derived` recipes of the constants computed from smaller ones (see `params_store`)."""
    g = p.graph
    vid: dict[int, int] = {}
    values: list[dict[str, Any]] = []
    params: dict[str, np.ndarray] = {}
    derived: dict[str, Any] = {}
    inputs = {id(v) for v in g.inputs}
    outputs = {id(v) for v in g.outputs}

    def ref(v: Value) -> int:
        if id(v) not in vid:
            vid[id(v)] = len(values)
            kind = ("input" if id(v) in inputs else "const" if v.is_const
                    else "output" if id(v) in outputs else "intermediate")
            # buffers hold narrow types (bfloat16, float8 ...) as their stored bits
            entry = {"name": v.name, "shape": list(v.shape), "dtype": storage_dtype(v.dtype),
                     "kind": kind, "storage": p.memory.storage_of.get(v)}
            if p.memory.offset_of.get(v):
                entry["offset"] = p.memory.offset_of[v]
            if kind == "const":
                entry["param"] = f"p{len(params)}"
                params[entry["param"]] = v.const.view(entry["dtype"]) if \
                    entry["dtype"] != v.dtype else v.const
                if v.origin is not None:
                    derived[entry["param"]] = _recipe(v)
            values.append(entry)
        return vid[id(v)]

    for v in g.inputs:
        ref(v)
    kernels = []
    for grp in p.groups:
        if grp.view:
            for v in group_args(grp):
                ref(v)
            continue
        kernels.append({"name": (func_of or {}).get(grp.name, grp.name), "group": grp.name,
                        "args": [ref(v) for v in group_args(grp)],
                        "outputs": len(grp.outputs), "ops": [n.op for n in grp.nodes],
                        "nodes": [n.name for n in grp.nodes],
                        "master": grp.master.op, "pattern": grp.pattern.name,
                        "schedule": (how or {}).get(grp.name, "")})
    desc = {
        "format": GRAPH_FORMAT, "version": GRAPH_VERSION, "name": g.name,
        "target": str(target),
        "inputs": [{"name": v.name, "shape": list(v.shape), "dtype": v.dtype, "value": ref(v)}
                   for v in g.inputs],
        "outputs": _outputs(g, ref),
        "values": values,
        "storages": list(p.memory.storage_bytes),
        "kernels": kernels,
        "memory": {"planned_bytes": p.memory.planned_bytes,
                   "unplanned_bytes": p.memory.unplanned_bytes(),
                   "concat_copy_bytes": p.memory.concat_copy_bytes,
                   "concat_view_bytes": p.memory.concat_view_bytes,
                   "params_bytes": int(sum(a.nbytes for a in params.values()))},
        "times": {k: round(v, 4) for k, v in p.times.items()},
    }
    return desc, params, derived
