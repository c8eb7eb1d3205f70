"""``tforge plugins`` and ``tforge targets``: what is installed, and a target resolved."""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import Any

from tensorforge._version import __version__
from tensorforge.cli.common import _registry, _wrap
from tensorforge.text import plural, wrap


# -- tforge plugins -----------------------------------------------------------------------------
def add_plugins(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plugins", help="list installed plugins, what they register, load errors",
                       description="List every plugin found through the `tensorforge` entry "
                       "points, with its distribution, version, what it registers and any error.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 if any plugin failed to load")
    p.set_defaults(func=run_plugins)


def run_plugins(args: argparse.Namespace) -> int:
    from tensorforge.plugins.loader import ENV_DISABLE, ENV_SELECT
    from tensorforge.plugins.registry import PluginLoadWarning
    from tensorforge.plugins.status import plugin_readiness, target_status

    with warnings.catch_warnings():  # failures are part of this report
        warnings.simplefilter("ignore", PluginLoadWarning)
        registry = _registry()
        plugins = registry.plugins
    env = {k: os.environ[k] for k in (ENV_SELECT, ENV_DISABLE) if k in os.environ}
    failed = [p for p in plugins if p.status == "failed"]
    if args.json:
        docs = []
        for p in plugins:
            d = p.to_dict()
            d["readiness"] = plugin_readiness(p, registry)
            d["targets"] = {n: {"state": st.state, "detail": st.detail}
                            for n in p.registered.get("targets", [])
                            if (k := registry.targets.get(n)) is not None
                            for st in [target_status(k)]}
            docs.append(d)
        doc = {"tensorforge": __version__, "environment": env, "plugins": docs}
        print(json.dumps(doc, indent=2))
    else:
        counts = {s: sum(p.status == s for p in plugins) for s in ("loaded", "failed", "disabled")}
        print(f"tensorforge {__version__}: {plural(len(plugins), 'plugin')}, "
              + ", ".join(f"{n} {s}" for s, n in counts.items()))
        for key, value in env.items():
            print(f"  {key}={value!r}")
        for p in sorted(plugins, key=lambda p: p.name):
            dist = f"{p.distribution} {p.version or ''}".strip() if p.distribution else "-"
            print(f"\n{p.name:<12} {dist:<36} {plugin_readiness(p, registry)}")
            for table, names in p.registered.items():
                print(_wrap(f"{table.replace('_', ' ')}: {', '.join(names)}"))
            lazy = [h for h in p.hooks if h in ("register_strategies", "register_intrinsics",
                                                "register_passes")]
            if lazy:
                print(_wrap(f"per-target hooks: {', '.join(lazy)}"))
            if p.error and p.status != "disabled":
                print(_wrap(("error: " if p.status == "failed" else "note: ") + p.error))
            for w in p.warnings:
                print(_wrap("warning: " + w))
        if not plugins:
            from tensorforge.plugins.known import install_hint

            print("\nNo plugins found. Install some, e.g.: "
                  + install_hint(("tensorforge-target-llvm", "llvm")))
    return 1 if (args.strict and failed) else 0


# -- tforge targets -----------------------------------------------------------------------------
def add_targets(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("targets", help="list target kinds and tags, or resolve one target",
                       description="List installed target kinds (with their options) and tags. "
                       "Given TARGET (e.g. 'llvm' or 'amd/zen3 -num-threads=4'), show all of "
                       "its options as resolved on this machine.")
    p.add_argument("target", nargs="?", help="a target string or tag to resolve")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_targets)


def run_targets(args: argparse.Namespace) -> int:
    from tensorforge.plugins.status import target_status
    from tensorforge.target import Target

    registry = _registry()
    if args.target:
        t = Target.parse(args.target)
        if args.json:
            print(json.dumps(t.to_dict(), indent=2))
        else:
            print(f"{t}\n  kind: {t.kind.name} ({t.device_type}, from {t.kind.distribution}): "
                  f"{target_status(t.kind)}")
            for k, v in t.options.items():
                origin = "given" if k in t.explicit else "default or detected"
                print(wrap(f"-{k}={v}  ({origin})", 100, "  ", "      "))
        return 0
    if args.json:
        doc: dict[str, Any] = {
            "targets": [{"name": k.name, "device_type": k.device_type, "keys": list(k.keys),
                         "distribution": k.distribution, "description": k.description,
                         "status": target_status(k).state, "status_detail": str(target_status(k)),
                         "options": {n: {"type": o.type.__name__, "default": o.default,
                                         "help": o.help} for n, o in k.options.items()}}
                        for k in registry.targets.values()],
            "tags": [{"name": t.name, "config": t.config, "description": t.description,
                      "distribution": t.distribution} for t in registry.target_tags.values()],
        }
        print(json.dumps(doc, indent=2))
        return 0
    print("Target kinds:")
    for k in sorted(registry.targets.values(), key=lambda k: k.name):
        print(f"  {k.name:<8} {k.device_type:<7} {str(target_status(k)):<32} {k.distribution}")
        if k.description:
            print(_wrap(k.description))
        for n, o in k.options.items():
            opt = f"      -{n}=<{o.type.__name__}>"
            print(wrap(f"{opt:<40} {o.help} (default {o.default!r})", 100, "", " " * 41))
    if not registry.targets:
        from tensorforge.plugins.known import install_hint

        print(f"  (none; {install_hint(('tensorforge-target-llvm', 'llvm'))})")
    print("\nTags:")
    for t in sorted(registry.target_tags.values(), key=lambda t: t.name):
        print(wrap(f"  {t.name:<22} {t.config:<52} {t.description}", 100, "", " " * 25))
    if not registry.target_tags:
        print("  (none)")
    return 0
