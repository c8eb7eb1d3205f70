"""``tforge inspect``: a model's ops, fused groups, placement and memory plan, or what a package
holds; ``inspect_report`` is the same as a dict."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tensorforge.cli.common import MODEL_HELP, _registry, _shapes, _wrap, add_model_format
from tensorforge.errors import TensorforgeError


def add_inspect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="show a model's ops, fused groups and memory plan, or "
                       "what a package holds",
                       description="Load MODEL, run the graph passes and show its ops with "
                       "counts, inputs and outputs, the fused groups (one kernel each), ops the "
                       "frontend or compiler cannot handle, and the memory plan. Given a .tfpkg "
                       "PACKAGE: its format version, target, the CPU features it needs, its "
                       "kernels and its parameters by size (nothing of it runs).")
    p.add_argument("model", metavar="MODEL|PACKAGE",
                   help=f"{MODEL_HELP}, or .tfpkg package")
    p.add_argument("--target", default=None, help="target for target-driven passes (layout)")
    p.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                   help="fix the shape of an input (repeatable)")
    add_model_format(p)
    p.add_argument("--opt-level", type=int, default=3, choices=range(4))
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_inspect)


def _unsupported(model: str, model_format: str | None = None) -> list[str] | None:
    """Ops of `model` the frontend cannot convert, if it can tell (`unsupported_ops(path)`)."""
    from tensorforge.plugins.descriptors import load_ref

    reg = _registry()
    fe = reg.frontends.get(model_format) if model_format else reg.frontend_for(model)
    if fe is None:
        return None
    try:
        fn = load_ref(fe.load.partition(":")[0] + ":unsupported_ops")
    except TensorforgeError:
        return None
    found = fn(model)
    return sorted(found) if found is not None else None


def inspect_report(model: str, target: Any = None, input_shapes: Any = None,
                   opt_level: int = 3, model_format: str | None = None) -> dict[str, Any]:
    from tensorforge.compiler import load_graph, plan
    from tensorforge.compiler.compile import placement_report
    from tensorforge.graph import get_op

    unsupported = _unsupported(model, model_format)
    if unsupported:
        return {"model": model, "unsupported_ops": unsupported}
    graph = load_graph(model, input_shapes, model_format)
    p = plan(graph, target, opt_level=opt_level)
    no_compute = sorted({n.op for n in p.graph.nodes if get_op(n.op).compute is None})

    def spec(v: Any) -> dict[str, Any]:
        return {"name": v.name, "shape": list(v.shape), "dtype": v.dtype}

    return {
        "model": model, "name": graph.name,
        "inputs": [spec(v) for v in graph.inputs], "outputs": [spec(v) for v in graph.outputs],
        "ops": dict(sorted(graph.op_counts().items())),
        "ops_after_passes": dict(sorted(p.graph.op_counts().items())),
        "params": len(p.graph.constants()),
        "params_bytes": int(sum(v.nbytes for v in p.graph.constants())),
        "unsupported_ops": unsupported or [], "ops_without_compute": no_compute,
        "groups": [{"name": g.name, "ops": [n.op for n in g.nodes], "master": g.master.op,
                    "pattern": g.pattern.name, "output": spec(g.outputs[0]),
                    **({"device": p.device_of(g)} if p.placement is not None else {})}
                   for g in p.groups],
        "memory": {"storages": len(p.memory.storage_bytes),
                   "peak_bytes": p.memory.planned_bytes,
                   "no_reuse_bytes": p.memory.unplanned_bytes()},
        **({"placement": placement_report(p)} if p.placement is not None else {}),
    }


def _print_placement(pl: dict[str, Any]) -> None:
    kernels = ", ".join(f"{dev} {n}" for dev, n in pl["kernels"].items())
    print(f"\nplacement: target {pl['target']}, host {pl['host']} (kernels: {kernels})")
    for f in pl["fallbacks"]:
        print(f"  on the host: {f['node']} ({f['op']}): {f['why']}")
    runs = [c for c in pl["copies"] if c["when"].startswith("every run")]
    print(f"copies between devices: {len(runs)} every run "
          f"({sum(c['bytes'] for c in runs)} bytes), "
          f"{len(pl['copies']) - len(runs)} once at load")
    for c in pl["copies"]:
        print(f"  {c['value']}: {c['from']} -> {c['to']}, {c['bytes']} bytes, {c['when']}")


def run_inspect(args: argparse.Namespace) -> int:
    from tensorforge.runtime.package_info import format_report, is_package, package_report
    from tensorforge.target import Target

    if is_package(args.model):
        report = package_report(args.model)
        print(json.dumps(report, indent=2) if args.json else "\n".join(format_report(report)))
        return 0

    target = Target.parse(args.target) if args.target else None
    r = inspect_report(args.model, target, _shapes(args.input_shape), args.opt_level,
                       args.model_format)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0 if "inputs" in r else 1
    if "inputs" not in r:
        print(_wrap(f"{args.model}: the frontend cannot convert these ops: "
                    f"{', '.join(r['unsupported_ops'])}"))
        return 1
    print(f"{r['model']} ({r['name']})")
    for key in ("inputs", "outputs"):
        for v in r[key]:
            print(f"  {key[:-1]:<6} {v['name']}: {v['dtype']}{v['shape']}")
    print(f"\nops ({sum(r['ops'].values())}): "
          + ", ".join(f"{k} x{n}" for k, n in r["ops"].items()))
    print(f"after graph passes ({sum(r['ops_after_passes'].values())}): "
          + ", ".join(f"{k} x{n}" for k, n in r["ops_after_passes"].items()))
    print(f"params: {r['params']} tensors, {r['params_bytes']} bytes")
    if r["ops_without_compute"]:
        print(_wrap("ops the compiler cannot generate code for yet: "
                    + ", ".join(r["ops_without_compute"])))
    print(f"\nfused groups ({len(r['groups'])} kernels):")
    for g in r["groups"]:
        out = g["output"]
        where = f" [{g['device']}]" if "device" in g else ""
        print(f"  {g['name']:<36} {'+'.join(g['ops']):<40} {g['pattern']:<20} "
              f"-> {out['dtype']}{out['shape']}{where}")
    if "placement" in r:
        _print_placement(r["placement"])
    m = r["memory"]
    saved = 1 - m["peak_bytes"] / m["no_reuse_bytes"] if m["no_reuse_bytes"] else 0.0
    print(f"\nmemory plan: {m['storages']} storages, {m['peak_bytes']} bytes for intermediate "
          f"values ({m['no_reuse_bytes']} without reuse, {saved:.0%} saved)")
    return 0
