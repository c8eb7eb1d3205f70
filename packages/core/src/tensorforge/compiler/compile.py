"""`tensorforge.compile`: model -> optimized graph -> fused groups -> one module -> model."""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TensorforgeError
from ..graph.groups import FusedGroup, MemoryPlan
from ..graph.ir import Graph, Value, freeze
from ..graph.narrow_types import storage_dtype
from ..graph.passes import fuse_ops, optimize, plan_memory
from ..graph.passes.placement import Placement, placement_of
from ..progress import NullProgress
from ..runtime.module import ModuleSet
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
    """What the graph level decided: the optimized graph, its groups and memory plan, and
    (for a device target) where each node runs."""

    graph: Graph
    groups: list[FusedGroup]
    memory: MemoryPlan
    times: dict[str, float] = field(default_factory=dict)
    placement: Placement | None = None

    def device_of(self, grp: FusedGroup) -> str:
        """The kind name of the target a group runs on ("" without placement)."""
        return self.placement.device_of(grp.master) if self.placement is not None else ""


def resolve_host(target: Any, host: Any = None) -> Any:
    """The host target of a device target: `host`, else the target's own `host` option (an
    accelerator's), else `llvm` for a GPU when the llvm plugin is there; None for CPUs."""
    if target is None or target.kind.device_type == "cpu":
        return None
    if host is None and "host" in target.kind.options:
        host = target.options.get("host") or None
    if host is None:
        from ..plugins import get_registry
        from ..tir.transform.pipeline import is_gpu

        if is_gpu(target) and "llvm" in get_registry().targets:
            host = "llvm"
    return Target.coerce(host) if host else None


def plan(model: Any, target: Any = None, input_shapes: dict[str, Any] | None = None,
         opt_level: int = 3, progress: Any = None, model_format: str | None = None,
         host: Any = None) -> Plan:
    """Run the graph level only (no code generation): `tforge inspect` uses this.
    `progress` (see `tensorforge.progress`) hears of the import and graph-pass stages."""
    progress = progress or NullProgress()
    t0 = time.perf_counter()
    progress.stage("import")
    g = load_graph(model, input_shapes, model_format)
    t1 = time.perf_counter()
    progress.stage("graph passes")
    tgt = Target.coerce(target) if target is not None else None
    host_t = resolve_host(tgt, host)
    g = optimize(g, tgt, opt_level, host_t)
    placement = placement_of(g, tgt, host_t) if tgt is not None and \
        tgt.kind.device_type != "cpu" else None
    groups = fuse_ops(g, enabled=opt_level >= 1,
                      device_of=placement.device_of if placement is not None else None)
    memory = plan_memory(g, groups,
                         device_of=placement.value_device if placement is not None else None)
    t2 = time.perf_counter()
    return Plan(g, groups, memory, {"load_s": t1 - t0, "graph_s": t2 - t1}, placement)


def compile(model: Any, target: Any = "llvm", input_shapes: dict[str, Any] | None = None,
            opt_level: int = 3, tuning_db: Any = None, progress: Any = None,
            host: Any = None, model_format: str | None = None,
            shared_params: dict[Any, np.ndarray] | None = None,
            dynamic: str = "symbolic") -> Any:
    """Compile `model` (a path: a file or a SavedModel directory; an ONNX ModelProto; a Keras
    model; a Graph) for `target`; returns a CompiledModel (`run`, `benchmark`, `export`).
    `model_format` names the frontend when the suffix does not (`"tensorflow"`). opt_level 0
    disables folding and fusion (one kernel per op). `tuning_db` (a path or an
    `autotune.Database`): each group whose task has records is scheduled with its best
    config; tasks without records are listed in a warning and in
    `desc["tuning"]["missing"]`. For a device target (`opencl`, an accelerator), nodes it
    cannot run go to `host` (default: the target's `host` option, else `llvm`): one module per
    device, the placement, fallbacks and copies in `desc["placement"]`. `progress` (a
    `tensorforge.progress.StageProgress`) is told each stage: import, graph passes, lowering
    N kernels, code generation.

    A dimension of `input_shapes` given as a bounded name (``{"input_ids": (1, "seq<=512")}``)
    makes it dynamic: with `dynamic="symbolic"` (the default) the model is compiled once, its
    kernels taking the size as an argument (`compiler.symbolic`; a `SymbolicModel`), falling
    back with a warning to `dynamic="specialize"`: a `DynamicModel` (`compiler.dynamic`) of
    static compiles per size, when the model's plans differ between sizes.
    `shared_params`: a dict kept across compiles (a `DynamicModel`'s specializations): a
    constant equal (dtype, shape, bytes) to one in it is that array, not a copy."""
    from .dynamic import DynamicModel, split_input_shapes

    template, dims = split_input_shapes(input_shapes)
    if dims:
        if dynamic not in ("symbolic", "specialize"):
            raise TensorforgeError(f"dynamic={dynamic!r}: use 'symbolic' (one compile) or "
                                   "'specialize' (a static compile per size)")
        if dynamic == "symbolic":
            from .symbolic import NotSymbolic, compile_symbolic, warn_fallback

            try:
                return compile_symbolic(model, target, template, dims, opt_level=opt_level,
                                        progress=progress, model_format=model_format,
                                        host=host, tuning_db=tuning_db)
            except NotSymbolic as exc:
                warn_fallback(exc)
        return DynamicModel(model, target, template, dims, opt_level=opt_level,
                            tuning_db=tuning_db, progress=progress, host=host,
                            model_format=model_format)
    from ..plugins import get_registry
    from ..runtime.graph_executor import CompiledModel

    tgt = Target.coerce(target)
    tgt.kind.load_build()  # a target that cannot compile here fails before the work
    check_pass_switches()
    progress = progress or NullProgress()
    p = plan(model, tgt, input_shapes, opt_level, progress, model_format, host)
    t0 = time.perf_counter()
    contexts: dict[str, Any] = {}

    def target_of(kind: str) -> Target:
        return p.placement.target_for(kind) if p.placement is not None else tgt

    def context(gt: Target) -> tuple[dict[str, list[Any]], Any]:
        """Strategies and tuning records of one device's target."""
        if gt.kind.name not in contexts:
            tun = None
            if tuning_db is not None:  # the search engine loads only when tuning records apply
                from .group_tasks import TuningContext

                tun = TuningContext(tuning_db, gt)
            contexts[gt.kind.name] = (get_registry().strategies(gt), tun)
        return contexts[gt.kind.name]

    funcs: dict[str, list[Any]] = {}
    how: dict[str, str] = {}
    # groups with the same workload (ops, attributes, shapes, wiring) share one kernel: an
    # unrolled LSTM repeats the same cell dozens of times
    func_of: dict[str, str] = {}
    by_key: dict[Any, str] = {}
    on_host: dict[str, str] = {}  # groups the device failed to compile -> why
    keys = [workload_key(grp) for grp in p.groups if not grp.view]
    progress.stage("lowering", len(set(keys)), "kernel")
    for grp in p.groups:
        if grp.view:  # a zero-copy concat: its parts are written in place, no kernel
            continue
        key = workload_key(grp)
        if key in by_key:
            func_of[grp.name] = by_key[key]
            how[grp.name] = how[by_key[key]]
            if by_key[key] in on_host:  # its twin fell back to the host: so does it
                _mark_host(p, grp, on_host[by_key[key]])
            continue
        gt = target_of(p.device_of(grp))
        strategies, tuning = context(gt)
        try:
            f, how[grp.name] = lower_group(grp, gt, strategies, tuning)
        except TensorforgeError as exc:
            host_t = p.placement.host if p.placement is not None else None
            if host_t is None or gt is host_t:
                raise
            warnings.warn(f"{grp.name}: cannot run on {gt.kind.name} ({type(exc).__name__}: "
                          f"{exc}); it runs on the host", stacklevel=2)
            on_host[grp.name] = f"its kernel failed on the device: {type(exc).__name__}"
            _mark_host(p, grp, on_host[grp.name])
            f, how[grp.name] = lower_group(grp, host_t, *context(host_t))
            gt = host_t
        funcs.setdefault(gt.kind.name, []).append(f)
        by_key[key] = func_of[grp.name] = grp.name
        progress.advance()
    t1 = time.perf_counter()
    progress.stage(f"code generation ({', '.join(funcs) or tgt.kind.name})")
    modules = build_modules(p, funcs, func_of, how, target_of, context)
    progress.finish()
    module = None if not modules else next(iter(modules.values())) if len(modules) == 1 \
        else ModuleSet(modules)
    t2 = time.perf_counter()
    p.times.update(lower_s=t1 - t0, build_s=t2 - t1)
    desc, params, derived = describe(p, tgt, how, func_of)
    if shared_params is not None:
        params = share_params(params, shared_params)
    desc["opt_level"] = opt_level  # `tforge run --verify` plans the model again with it
    tunings = [tun for _, tun in contexts.values() if tun is not None]
    if tunings:
        tuning = tunings[0]
        for extra in tunings[1:]:
            tuning.applied.update(extra.applied)
            tuning.missing.update(extra.missing)
        desc["tuning"] = tuning.summary()
        if tuning.missing:
            warnings.warn(tuning.missing_message(), stacklevel=2)
        for tun in tunings:
            tun.close()
    return CompiledModel(module, desc, params, derived=derived)


def share_params(params: dict[str, np.ndarray], pool: dict[Any, np.ndarray]
                 ) -> dict[str, np.ndarray]:
    """`params` with each array replaced by an equal one of `pool` (same dtype, shape and
    bytes: a BLAKE2 digest), which learns the others: compiles of one model at several sizes
    hold one copy of the weights."""
    import hashlib

    out = {}
    for key, arr in params.items():
        a = np.asarray(arr)
        if not a.flags.c_contiguous:  # (not ascontiguousarray: it makes a 0-d array 1-d)
            a = a.copy(order="C")
        fp = (a.dtype.str, a.shape, hashlib.blake2b(a.reshape(-1).view(np.uint8)).digest())
        out[key] = pool.setdefault(fp, a)
    return out


def _recipe(v: Value, depth: int = 0) -> Any:
    """A constant's `Derived` recipe from its `origin` chain (export stores the source, load
    redoes the transforms), or its array."""
    from ..runtime.params_store import Derived

    if v.origin is None or depth > 8:
        return v.const
    name, attrs, src = v.origin
    return Derived(name, dict(attrs), _recipe(src, depth + 1))


def build_modules(p: Plan, funcs: dict[str, list[Any]], func_of: dict[str, str],
                  how: dict[str, str], target_of: Callable[[str], Target],
                  context: Callable[[Target], tuple[Any, Any]]) -> dict[str, Any]:
    """One module per device kind. Device modules are built first: a kernel the device's code
    generator refuses (a math function its language lacks ...) goes to the host with its twin
    groups, lowered again for the host, before the host module is built."""
    host_t = p.placement.host if p.placement is not None else None
    host = host_t.kind.name if host_t is not None else None
    modules: dict[str, Any] = {}
    for kind in [k for k in funcs if k != host] + [host]:  # the host last
        if kind is None or kind not in funcs:
            continue
        gt = target_of(kind)
        build = gt.kind.load_build()
        try:
            modules[kind] = build(funcs[kind], gt)
            continue
        except TensorforgeError:
            if host_t is None or kind == host:
                raise
        keep = []
        for f in funcs[kind]:
            try:
                build([f], gt)
                keep.append(f)
            except TensorforgeError as exc:
                why = f"its kernel failed {kind} code generation: {exc}"
                warnings.warn(f"{f.name}: {why}; it runs on the host", stacklevel=3)
                twins = [grp for grp in p.groups if func_of.get(grp.name) == f.name]
                for grp in twins:
                    _mark_host(p, grp, why)
                first = next(grp for grp in twins if grp.name == f.name)
                g, how[f.name] = lower_group(first, host_t, *context(host_t))
                funcs.setdefault(host, []).append(g)
                for grp in twins:
                    how[grp.name] = how[f.name]
        funcs[kind] = keep
        if keep:
            modules[kind] = build(keep, gt)
    return modules


def _mark_host(p: Plan, grp: FusedGroup, why: str) -> None:
    """A group the device could not compile after all (its schedules failed: too much shared
    memory, a dtype the device lacks ...) runs on the host; placement says why."""
    from ..graph.passes.placement import DEVICE_ATTR

    assert p.placement is not None and p.placement.host is not None
    for n in grp.nodes:
        n.attrs[DEVICE_ATTR] = p.placement.host.kind.name
        p.placement.fallbacks.append((n.name, n.op, why))


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
        k = {"name": (func_of or {}).get(grp.name, grp.name), "group": grp.name,
             "args": [ref(v) for v in group_args(grp)],
             "outputs": len(grp.outputs), "ops": [n.op for n in grp.nodes],
             "nodes": [n.name for n in grp.nodes],
             "master": grp.master.op, "pattern": grp.pattern.name,
             "schedule": (how or {}).get(grp.name, "")}
        if p.placement is not None:
            k["device"] = p.device_of(grp)
        kernels.append(k)
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
    if p.placement is not None:
        desc["placement"] = placement_report(p)
    return desc, params, derived


def placement_report(p: Plan) -> dict[str, Any]:
    """Devices, the nodes that fell back to the host (and why), and the copies between
    devices: each value read on another device than the one that holds it, once."""
    pl = p.placement
    assert pl is not None
    copies: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    outputs = {id(v) for v in p.graph.outputs}
    host = pl.host.kind.name if pl.host is not None else pl.target.kind.name
    for grp in p.groups:
        dev = p.device_of(grp)
        for v in grp.inputs:
            src = pl.value_device(v)
            if src != dev and (id(v), dev) not in seen:
                seen.add((id(v), dev))
                copies.append({"value": v.name, "from": src, "to": dev, "bytes": v.nbytes,
                               "when": "once, at load" if v.is_const else "every run"})
        for v in grp.outputs:
            if id(v) in outputs and dev != host and (id(v), host) not in seen:
                seen.add((id(v), host))
                copies.append({"value": v.name, "from": dev, "to": host, "bytes": v.nbytes,
                               "when": "every run (graph output)"})
    counts: dict[str, int] = {}
    for grp in p.groups:
        if not grp.view:  # a zero-copy concat has no kernel
            counts[p.device_of(grp)] = counts.get(p.device_of(grp), 0) + 1
    return {"target": str(pl.target), "host": str(pl.host) if pl.host is not None else None,
            "kernels": counts,
            "fallbacks": [{"node": n, "op": op, "why": why} for n, op, why in pl.fallbacks],
            "copies": copies}
